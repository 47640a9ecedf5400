// Logger: where the mount's messages go — stderr in the foreground, syslog once daemonized.
// Thread-safety: Log may be called from any thread (each message is one write(2) or one syslog(3)
// call). Switching to syslog (UseSyslog) happens once, before or while serving.
#pragma once

#include <atomic>
#include <string>

namespace packfs {

class Logger {
 public:
  explicit Logger(std::string ident) : ident_(std::move(ident)) {}
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // From now on, messages go to syslog (daemon facility) instead of stderr.
  void UseSyslog();
  void Error(const std::string& msg) const { Write(3 /*LOG_ERR*/, msg); }
  void Warning(const std::string& msg) const { Write(4 /*LOG_WARNING*/, msg); }
  void Info(const std::string& msg) const { Write(6 /*LOG_INFO*/, msg); }

 private:
  void Write(int priority, const std::string& msg) const;
  std::string ident_;  // kept alive for openlog, which stores the pointer
  std::atomic<bool> syslog_{false};
};

}  // namespace packfs
