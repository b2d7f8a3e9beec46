#pragma once
// One spdlog logger per engine module ("io", "llamagen", "session", ...), all
// writing to stderr through one shared sink.
//
// spdlog is hidden behind this header on purpose: LibTorch ships its own (newer)
// fmt headers, which clash with the fmt that Debian's spdlog is built against, so
// no file that sees torch headers may include spdlog. logging.cpp lives in a
// torch-free library (kvs_logging).
#include <functional>
#include <string>

namespace kvs {

enum class LogLevel { Trace, Debug, Info, Warn, Error, Off };

class ModuleLog {
 public:
  explicit ModuleLog(std::string module) : module_(std::move(module)) {}
  void debug(const std::string& message) const { write(LogLevel::Debug, message); }
  void info(const std::string& message) const { write(LogLevel::Info, message); }
  void warn(const std::string& message) const { write(LogLevel::Warn, message); }
  void error(const std::string& message) const { write(LogLevel::Error, message); }
  void write(LogLevel level, const std::string& message) const;

 private:
  std::string module_;
};

inline ModuleLog module_logger(const std::string& module) { return ModuleLog(module); }

// Every line of every module logger also goes to the listeners (the window's log
// panel). Listeners run on the thread that logs, under a lock: keep them cheap and
// do not log from inside one. Remove a listener before what it captures dies.
using LogListener = std::function<void(LogLevel level, const std::string& module, const std::string& message)>;
int add_log_listener(LogListener listener);  // returns an id for remove_log_listener
void remove_log_listener(int id);

// Applies to all existing and future module loggers.
void set_log_level(LogLevel level);
LogLevel parse_log_level(const std::string& name);  // throws InvalidArgumentError

}  // namespace kvs
