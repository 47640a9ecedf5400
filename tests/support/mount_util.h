// Helpers for tests over real packfs mounts: making pack sets with Python's zipfile, and an RAII
// Mount that runs the real `packfs` binary and always unmounts (fusermount3 -u, then lazily) when
// it goes out of scope, even when the test failed. Not thread-safe; one Mount per mountpoint.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace packfs::testing {

// True when real mounts can run here (/dev/fuse and fusermount3 exist).
bool FuseAvailable();
// True when `mountpoint` (made absolute) appears in /proc/mounts.
bool IsMounted(const std::string& mountpoint);

// Packs every regular file under `tree` into `pack_dir` (created) as STORED zip shards
// pack-0000.zip, ... of at most `per_shard` members each, with Python's zipfile, keys being the
// paths relative to `tree` in sorted order, mtimes and modes kept. No catalog is written.
void MakePythonPack(const std::string& tree, const std::string& pack_dir, size_t per_shard);

// Makes the directory `dir` (mode 0755) to mount on and returns its absolute path (no symlinks:
// what /proc/mounts shows), or "" when it cannot be made.
std::string MakeMountPoint(const std::string& dir);

// The value of the extended attribute `name` of `path` as text; "" and *err set to the errno
// when it cannot be read (*err 0 when it was).
std::string XattrText(const std::string& path, const std::string& name, int* err = nullptr);
// The value of the extended attribute `name` of `path`, parsed as JSON (user.packfs.stats and
// user.packfs.errors of a mount's root). When it cannot be read or parsed, the test fails with
// the path, the name and why, and an empty object comes back.
nlohmann::json XattrJson(const std::string& path, const std::string& name);
// A mount's counters: XattrJson(mnt, "user.packfs.stats").
nlohmann::json MountStats(const std::string& mnt);
// Its `push` counters once they stop moving (the push and walk threads are done with what they
// were given): polled every 50 ms, up to 5 s.
nlohmann::json SettledPush(const std::string& mnt);

// Waits up to `seconds` until `mnt` is (want=true) or is no longer (false) mounted.
bool WaitMounted(const std::string& mnt, bool want, int seconds = 10);

// A packfs running in the foreground (`args` should hold -f or -d) as a child of the test, its
// stderr going to `stderr_path`; killed and reaped on destruction.
class ForegroundPackfs {
 public:
  ForegroundPackfs(const std::vector<std::string>& args, const std::string& stderr_path);
  ~ForegroundPackfs();
  ForegroundPackfs(const ForegroundPackfs&) = delete;
  ForegroundPackfs& operator=(const ForegroundPackfs&) = delete;
  // Waits for the process to exit; returns its wait status (or -1 after `seconds`).
  int Wait(int seconds);
  // True while the process has not exited.
  bool Running();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

class Mount {
 public:
  // Runs `packfs ARGS... SOURCES... MOUNTPOINT` (daemon mode unless args has -f/-d) and records
  // its exit status and output in result(). ok() tells whether it mounted.
  Mount(const std::vector<std::string>& sources, const std::string& mountpoint,
        const std::vector<std::string>& args = {});
  ~Mount();
  Mount(const Mount&) = delete;
  Mount& operator=(const Mount&) = delete;

  bool ok() const { return result_.exit_code == 0 && IsMounted(mountpoint_); }
  const RunResult& result() const { return result_; }
  const std::string& path() const { return mountpoint_; }
  // Unmounts now with fusermount3 -u; returns its result (exit 0 on success).
  RunResult Unmount();

 private:
  std::string mountpoint_;
  RunResult result_;
};

}  // namespace packfs::testing
