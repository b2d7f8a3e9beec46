#include "engine/core/logging.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <map>
#include <mutex>

#include "engine/core/errors.h"

namespace kvs {
namespace {

std::mutex g_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;

LogLevel from_spdlog(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return LogLevel::Trace;
    case spdlog::level::debug: return LogLevel::Debug;
    case spdlog::level::info: return LogLevel::Info;
    case spdlog::level::warn: return LogLevel::Warn;
    case spdlog::level::err:
    case spdlog::level::critical: return LogLevel::Error;
    default: return LogLevel::Off;
  }
}

// Forwards unformatted records (level, logger name, payload) to the listeners.
class ListenerSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  int add(LogListener listener) {
    std::lock_guard<std::mutex> lock(mutex_);
    listeners_[++last_id_] = std::move(listener);
    return last_id_;
  }
  void remove(int id) {
    std::lock_guard<std::mutex> lock(mutex_);
    listeners_.erase(id);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string module(msg.logger_name.data(), msg.logger_name.size());
    const std::string text(msg.payload.data(), msg.payload.size());
    for (const auto& [id, listener] : listeners_) listener(from_spdlog(msg.level), module, text);
  }
  void flush_() override {}

 private:
  std::map<int, LogListener> listeners_;
  int last_id_ = 0;
};

std::shared_ptr<ListenerSink> listener_sink() {
  static auto sink = std::make_shared<ListenerSink>();
  return sink;
}

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
  auto logger = std::make_shared<spdlog::logger>(module, spdlog::sinks_init_list{sink, listener_sink()});
  logger->set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
  logger->set_level(g_level);
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace

void ModuleLog::write(LogLevel level, const std::string& message) const {
  logger_for(module_)->log(to_spdlog(level), "{}", message);
}

int add_log_listener(LogListener listener) { return listener_sink()->add(std::move(listener)); }

void remove_log_listener(int id) { listener_sink()->remove(id); }

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
