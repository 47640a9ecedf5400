// Test helpers: temp dirs, subprocesses, files.
#include "tests/support/test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace packfs::testing {

std::string FixturesDir() { return PACKFS_FIXTURES_DIR; }
std::string BinaryDir() { return PACKFS_BINARY_DIR; }
std::string MkpackPath() { return BinaryDir() + "/mkpack"; }
std::string PackfsPath() { return BinaryDir() + "/packfs"; }

TempDir::TempDir() : TempDir(std::string()) {}

TempDir::TempDir(const std::string& base_dir) {
  const char* env = std::getenv("TMPDIR");
  const std::string base = !base_dir.empty() ? base_dir : (env && *env ? env : "/tmp");
  std::string tmpl = base + "/packfs-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

std::string RamTempBase(uint64_t bytes) {
  struct statfs fs;
  if (::statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC) return "";
  if (static_cast<uint64_t>(fs.f_bavail) * static_cast<uint64_t>(fs.f_bsize) < bytes) return "";
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024 >= 2 * bytes ? "/dev/shm" : "";
    meminfo.ignore(64, '\n');
  }
  return "";
}

TempDir::~TempDir() {
  std::error_code ec;
  // Make read-only trees removable (tests chmod things).
  for (auto it = std::filesystem::recursive_directory_iterator(
           path_, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0755);
  }
  ::chmod(path_.c_str(), 0755);
  std::filesystem::remove_all(path_, ec);
}

RunResult Run(const std::vector<std::string>& argv, const std::string& stdin_text) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
    throw std::runtime_error("pipe failed");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  RunResult r;
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    r.err = "spawn failed: " + std::string(strerror(rc));
    r.exit_code = 127;
    return r;
  }
  size_t written = 0;
  if (stdin_text.empty()) {
    close(in_pipe[1]);
    in_pipe[1] = -1;
  } else {
    fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  }
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open || in_pipe[1] >= 0) {
    struct pollfd fds[3];
    int n = 0;
    int oi = -1, ei = -1, ii = -1;
    if (out_open) { fds[n] = {out_pipe[0], POLLIN, 0}; oi = n++; }
    if (err_open) { fds[n] = {err_pipe[0], POLLIN, 0}; ei = n++; }
    if (in_pipe[1] >= 0) { fds[n] = {in_pipe[1], POLLOUT, 0}; ii = n++; }
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (oi >= 0 && fds[oi].revents) {
      ssize_t k = read(out_pipe[0], buf, sizeof buf);
      if (k > 0) r.out.append(buf, k); else out_open = false;
    }
    if (ei >= 0 && fds[ei].revents) {
      ssize_t k = read(err_pipe[0], buf, sizeof buf);
      if (k > 0) r.err.append(buf, k); else err_open = false;
    }
    if (ii >= 0 && fds[ii].revents) {
      ssize_t k = write(in_pipe[1], stdin_text.data() + written, stdin_text.size() - written);
      if (k > 0) written += k;
      if (k < 0 && errno != EAGAIN) written = stdin_text.size();
      if (written >= stdin_text.size()) { close(in_pipe[1]); in_pipe[1] = -1; }
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

RunResult Sh(const std::string& command) { return Run({"/bin/sh", "-c", command}); }

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int ReadWithErrno(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  out->clear();
  char buf[65536];
  int err = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return err;
}

void WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot write " + path);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::string s = ReadFile(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::string Sha256File(const std::string& path) {
  RunResult r = Run({"sha256sum", "--", path});
  if (r.exit_code != 0) throw std::runtime_error("sha256sum failed on " + path + ": " + r.err);
  return r.out.substr(0, 64);
}

std::map<std::string, std::string> ReadSha256List(const std::string& path) {
  std::map<std::string, std::string> out;
  std::istringstream lines(ReadFile(path));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() < 67) continue;
    out[line.substr(66)] = line.substr(0, 64);
  }
  return out;
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    for (size_t k = 0; k < 8 && i + k < n; ++k) s[i + k] = static_cast<char>(v >> (8 * k));
  }
  return s;
}

bool HasCommand(const std::string& name) {
  return Sh("command -v '" + name + "' >/dev/null 2>&1").exit_code == 0;
}

bool FlipByteKeepingTimes(const std::string& path, uint64_t offset) {
  struct stat before;
  if (::stat(path.c_str(), &before) != 0) return false;
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const auto pos = static_cast<off_t>(offset);
  char c = 0;
  bool ok = ::pread(fd, &c, 1, pos) == 1;
  c = static_cast<char>(c ^ 0x20);
  ok = ok && ::pwrite(fd, &c, 1, pos) == 1;
  ::close(fd);
  const timespec times[2] = {before.st_atim, before.st_mtim};
  return ok && ::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0;
}

}  // namespace packfs::testing
