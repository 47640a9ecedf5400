// Logger: stderr, syslog or a capped log file.
#include "fuse/logger.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/base/recent_errors.h"

namespace packfs {
namespace {

const char* LevelName(int priority) {
  switch (priority) {
    case LOG_ERR: return "error";
    case LOG_WARNING: return "warning";
    default: return "info";
  }
}

void WriteAll(int fd, const std::string& s) {
  // One write per line (O_APPEND) so lines from worker threads and other mounts do not interleave.
  ssize_t ignored = ::write(fd, s.data(), s.size());
  (void)ignored;
}

}  // namespace

Logger::~Logger() {
  if (syslog_.load()) closelog();
}

bool Logger::SyslogReachable() {
  sockaddr_un addr;
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, _PATH_LOG, sizeof addr.sun_path - 1);
  for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
    UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
    if (fd.valid() &&
        ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      return true;
    }
  }
  return false;
}

Status Logger::UseFile(const std::string& path, bool make_dirs) {
  if (make_dirs) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  }
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    const int err = errno;
    return Status::IOError("cannot open the log file " + path + ": " + ErrnoText(err), err);
  }
  struct stat st;
  std::lock_guard<std::mutex> lock(file_mu_);
  file_bytes_ = ::fstat(fd.get(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  file_ = std::move(fd);
  file_path_ = path;
  return Status::OK();
}

void Logger::Detach() {
  if (detached_.exchange(true)) return;
  if (file_path_.empty() && !syslog_.exchange(true)) openlog(ident_.c_str(), LOG_PID, LOG_DAEMON);
}

void Logger::WriteFile(int priority, const std::string& msg) const {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::string line =
      FormatUtcTime(std::chrono::duration_cast<std::chrono::seconds>(now).count()) + " " +
      ident_ + "[" + std::to_string(::getpid()) + "] " + LevelName(priority) + ": " + msg + "\n";
  std::lock_guard<std::mutex> lock(file_mu_);
  if (!file_.valid()) return;
  if (file_bytes_ + line.size() > kMaxFileBytes) {
    // Keep one previous file: the log stays within twice the cap whatever happens.
    const std::string old = file_path_ + ".1";
    if (::rename(file_path_.c_str(), old.c_str()) == 0) {
      UniqueFd fresh(::open(file_path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
      if (fresh.valid()) file_ = std::move(fresh);
      file_bytes_ = 0;
    }
  }
  WriteAll(file_.get(), line);
  file_bytes_ += line.size();
}

void Logger::Write(int priority, const std::string& msg) const {
  if (!file_path_.empty()) WriteFile(priority, msg);
  if (detached_.load(std::memory_order_relaxed)) {
    if (syslog_.load(std::memory_order_relaxed)) syslog(priority, "%s", msg.c_str());
    return;
  }
  WriteAll(STDERR_FILENO, ident_ + ": " + msg + "\n");
}

}  // namespace packfs
