// Logger: where the mount's messages go. In the foreground: stderr. Once the daemon has left the
// terminal (Detach): the log file when one is set, else syslog. A log file (--log FILE, or the
// default file the daemon picks where syslog is unreachable) also gets every message logged
// before Detach, one line each: "2026-12-02T10:00:00Z packfs[PID] error: MESSAGE". It is capped:
// past kMaxFileBytes it is renamed to FILE.1 (replacing an older one) and FILE starts anew.
//
// Thread-safety: Error, Warning and Info may be called from any thread (each line is one write(2)
// or one syslog(3) call; file writes hold a mutex for the rotation). UseFile and Detach are
// called once each, before the mount serves.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/base/status.h"
#include "core/base/unique_fd.h"

namespace packfs {

class Logger {
 public:
  static constexpr uint64_t kMaxFileBytes = uint64_t{16} << 20;

  explicit Logger(std::string ident) : ident_(std::move(ident)) {}
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // From now on, messages are appended to `path` too (created 0600 if missing, with its parent
  // directories when `make_dirs`). Fails naming the file when it cannot be opened.
  Status UseFile(const std::string& path, bool make_dirs);
  // The process left its terminal: messages stop going to stderr and go to the log file when one
  // is set, otherwise to syslog (daemon facility).
  void Detach();
  // The log file ("" when none).
  const std::string& file() const { return file_path_; }

  // True when something accepts messages on /dev/log (in containers often nothing does, and
  // syslog(3) then drops every message without a word).
  static bool SyslogReachable();

  void Error(const std::string& msg) const { Write(3 /*LOG_ERR*/, msg); }
  void Warning(const std::string& msg) const { Write(4 /*LOG_WARNING*/, msg); }
  void Info(const std::string& msg) const { Write(6 /*LOG_INFO*/, msg); }

 private:
  void Write(int priority, const std::string& msg) const;
  void WriteFile(int priority, const std::string& msg) const;
  std::string ident_;  // kept alive for openlog, which stores the pointer
  std::atomic<bool> detached_{false};
  std::atomic<bool> syslog_{false};
  std::string file_path_;
  mutable std::mutex file_mu_;
  mutable UniqueFd file_;
  mutable uint64_t file_bytes_ = 0;
};

}  // namespace packfs
