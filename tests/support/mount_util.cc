// Real-mount test helpers.
#include "tests/support/mount_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace packfs::testing {
namespace {

std::string Absolute(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf)) return buf;
  return path;
}

constexpr const char* kPackScript = R"PY(
import os, sys, zipfile, time
os.environ['TZ'] = 'UTC'
time.tzset()
tree, out, per = sys.argv[1], sys.argv[2], int(sys.argv[3])
keys = []
for root, dirs, files in os.walk(tree):
    for f in files:
        p = os.path.join(root, f)
        if os.path.isfile(p) and not os.path.islink(p):
            keys.append(os.path.relpath(p, tree))
keys.sort(key=lambda k: k.encode())
os.makedirs(out, exist_ok=True)
for i in range(0, max(len(keys), 1), per):
    with zipfile.ZipFile(os.path.join(out, 'pack-%04d.zip' % (i // per)), 'w',
                         zipfile.ZIP_STORED) as z:
        for k in keys[i:i + per]:
            z.write(os.path.join(tree, k), k)
)PY";

// PACKFS_TEST_MOUNT_OPTIONS=LIST runs every test mount with `-o LIST` (e.g. io_uring, to run
// the FUSE suites over the ring by hand).
std::vector<std::string> ExtraMountOptions() {
  const char* opts = std::getenv("PACKFS_TEST_MOUNT_OPTIONS");
  if (opts == nullptr || *opts == '\0') return {};
  return {"-o", opts};
}

}  // namespace

bool FuseAvailable() { return ::access("/dev/fuse", R_OK | W_OK) == 0 && HasCommand("fusermount3"); }

bool IsMounted(const std::string& mountpoint) {
  std::string abs = Absolute(mountpoint);
  std::ifstream in("/proc/mounts");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string dev, mnt;
    f >> dev >> mnt;
    if (mnt == abs) return true;
  }
  return false;
}

void MakePythonPack(const std::string& tree, const std::string& pack_dir, size_t per_shard) {
  RunResult r = Run({"python3", "-c", kPackScript, tree, pack_dir, std::to_string(per_shard)});
  if (r.exit_code != 0) throw std::runtime_error("python pack failed: " + r.err);
}

Mount::Mount(const std::vector<std::string>& sources, const std::string& mountpoint,
             const std::vector<std::string>& args)
    : mountpoint_(Absolute(mountpoint)) {
  std::vector<std::string> argv = {PackfsPath()};
  std::vector<std::string> extra = ExtraMountOptions();
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), sources.begin(), sources.end());
  argv.push_back(mountpoint_);
  result_ = Run(argv);
}

RunResult Mount::Unmount() {
  RunResult r;
  for (int attempt = 0; attempt < 50 && IsMounted(mountpoint_); ++attempt) {
    r = Run({"fusermount3", "-u", mountpoint_});
    if (r.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return r;
}

Mount::~Mount() {
  if (!IsMounted(mountpoint_)) return;
  Unmount();
  if (IsMounted(mountpoint_)) Run({"fusermount3", "-u", "-z", mountpoint_});
}

std::string MakeMountPoint(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0) return "";
  char buf[PATH_MAX];
  return ::realpath(dir.c_str(), buf) ? buf : "";
}

std::string XattrText(const std::string& path, const std::string& name, int* err) {
  // Asked for its size first, then read: the stats grow with the mount's features.
  std::string value;
  ssize_t n = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    n = ::getxattr(path.c_str(), name.c_str(), nullptr, 0);
    if (n < 0) break;
    value.resize(static_cast<size_t>(n) + 4096);
    n = ::getxattr(path.c_str(), name.c_str(), value.data(), value.size());
    if (n >= 0 || errno != ERANGE) break;
  }
  if (err) *err = n < 0 ? errno : 0;
  value.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return value;
}

nlohmann::json XattrJson(const std::string& path, const std::string& name) {
  int err = 0;
  const std::string value = XattrText(path, name, &err);
  if (err != 0) {
    ADD_FAILURE() << path << ": getxattr " << name << ": " << std::strerror(err);
    return nlohmann::json::object();
  }
  nlohmann::json j = nlohmann::json::parse(value, nullptr, false);
  if (j.is_discarded()) {
    ADD_FAILURE() << path << ": " << name << " is not JSON: " << value;
    return nlohmann::json::object();
  }
  return j;
}

nlohmann::json MountStats(const std::string& mnt) {
  return XattrJson(mnt, "user.packfs.stats");
}

nlohmann::json SettledPush(const std::string& mnt) {
  nlohmann::json last;
  for (int i = 0; i < 100; ++i) {
    nlohmann::json p = MountStats(mnt)["push"];
    if (i > 0 && p == last) return p;
    last = p;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return last;
}

bool WaitMounted(const std::string& mnt, bool want, int seconds) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (IsMounted(mnt) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

ForegroundPackfs::ForegroundPackfs(const std::vector<std::string>& args,
                                   const std::string& stderr_path) {
  pid_ = ::fork();
  if (pid_ == 0) {
    int fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDERR_FILENO);
    std::vector<char*> argv;
    std::string bin = PackfsPath();
    argv.push_back(bin.data());
    std::vector<std::string> copy = ExtraMountOptions();
    copy.insert(copy.end(), args.begin(), args.end());
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
}

ForegroundPackfs::~ForegroundPackfs() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

int ForegroundPackfs::Wait(int seconds) {
  for (int i = 0; i < seconds * 20; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

bool ForegroundPackfs::Running() {
  if (reaped_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    reaped_ = true;
    return false;
  }
  return true;
}

}  // namespace packfs::testing
