#include "engine/core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>

#include "engine/core/errors.h"

namespace kvs {
namespace {

std::mutex g_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::Trace: return spdlog::level::trace;
    case LogLevel::Debug: return spdlog::level::debug;
    case LogLevel::Info: return spdlog::level::info;
    case LogLevel::Warn: return spdlog::level::warn;
    case LogLevel::Error: return spdlog::level::err;
    case LogLevel::Off: return spdlog::level::off;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger> logger_for(const std::string& module) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto existing = spdlog::get(module)) return existing;
  static spdlog::sink_ptr sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(module, sink);
  logger->set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
  logger->set_level(g_level);
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace

void ModuleLog::write(LogLevel level, const std::string& message) const {
  logger_for(module_)->log(to_spdlog(level), "{}", message);
}

void set_log_level(LogLevel level) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_level = to_spdlog(level);
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->set_level(g_level); });
}

LogLevel parse_log_level(const std::string& name) {
  if (name == "trace") return LogLevel::Trace;
  if (name == "debug") return LogLevel::Debug;
  if (name == "info") return LogLevel::Info;
  if (name == "warn" || name == "warning") return LogLevel::Warn;
  if (name == "error") return LogLevel::Error;
  if (name == "off") return LogLevel::Off;
  throw InvalidArgumentError("unknown log level '" + name + "' (expected trace, debug, info, warn, error or off)");
}

}  // namespace kvs
