// Logger: stderr or syslog.
#include "fuse/logger.h"

#include <syslog.h>
#include <unistd.h>

namespace packfs {

Logger::~Logger() {
  if (syslog_.load()) closelog();
}

void Logger::UseSyslog() {
  if (syslog_.exchange(true)) return;
  openlog(ident_.c_str(), LOG_PID, LOG_DAEMON);
}

void Logger::Write(int priority, const std::string& msg) const {
  if (syslog_.load(std::memory_order_relaxed)) {
    syslog(priority, "%s", msg.c_str());
    return;
  }
  std::string line = ident_ + ": " + msg + "\n";
  // One write per message so lines from worker threads do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace packfs
