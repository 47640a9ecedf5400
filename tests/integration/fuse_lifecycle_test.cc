// packfs mount lifecycle: foreground mounts ended by SIGTERM/SIGINT, unmounting while readers
// run, the workers' turns (fuse/worker_loop.h), stats printed at unmount with -d, and mounting
// through mount(8), mount.fuse3, fstab and the mount.fuse.packfs helper. Each test checks
// /proc/mounts for leftovers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::IsMounted;
using testing::Mount;
using testing::Sh;
using testing::TempDir;

using testing::ForegroundPackfs;
using testing::WaitMounted;

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    for (int i = 0; i < 20; ++i) {
      testing::WriteFile(tmp_ / ("tree/f" + std::to_string(i)),
                         testing::RandomBytes(200000, static_cast<uint64_t>(i)));
    }
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 8);
    mnt_ = testing::MakeMountPoint(tmp_ / "mnt");
    ASSERT_FALSE(mnt_.empty()) << std::strerror(errno);
  }
  void TearDown() override {
    if (!mnt_.empty() && IsMounted(mnt_)) {
      testing::Run({"fusermount3", "-u", "-z", mnt_});
      ADD_FAILURE() << "test left " << mnt_ << " mounted";
    }
  }
  TempDir tmp_;
  std::string mnt_;
};

TEST_F(LifecycleTest, SigtermAndSigintUnmountCleanly) {
  for (int sig : {SIGTERM, SIGINT}) {
    ForegroundPackfs p({"-f", tmp_ / "media", mnt_}, tmp_ / "stderr.txt");
    ASSERT_TRUE(WaitMounted(mnt_, true)) << testing::ReadFile(tmp_ / "stderr.txt");
    EXPECT_EQ(testing::ReadFile(mnt_ + "/f3"), testing::ReadFile(tmp_ / "tree/f3"));
    ASSERT_EQ(::kill(p.pid(), sig), 0);
    int status = p.Wait(20);
    ASSERT_NE(status, -1) << "packfs did not exit on signal " << sig;
    EXPECT_TRUE(WIFEXITED(status)) << status;
    EXPECT_FALSE(IsMounted(mnt_)) << "stale mount after signal " << sig;
  }
}

// Drops the pages of the shards in `dir` from the page cache: the next reads wait for the disk.
void EvictShards(const std::string& dir) {
  for (int i = 0; i < 3; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/pack-%04d.zip", i);
    const int fd = ::open((dir + name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// Reads f0..f19 whole from `mnt` with `threads` readers at once; returns how many came back
// with the bytes of `tree`.
int ReadAllAtOnce(const std::string& mnt, const std::string& tree, int threads) {
  std::atomic<int> good{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < threads; ++t) {
    readers.emplace_back([&, t] {
      for (int i = t; i < 20; i += threads) {
        const std::string name = "/f" + std::to_string(i);
        if (testing::ReadFile(mnt + name) == testing::ReadFile(tree + name)) ++good;
      }
    });
  }
  for (auto& r : readers) r.join();
  return good.load();
}

TEST_F(LifecycleTest, UnmountWhileReadersRun) {
  // With the default workers, and with one worker of eight taking requests (the others parked,
  // or waiting for the disk: the shards are cold).
  for (const std::string opts : {"", "active_threads=1"}) {
    SCOPED_TRACE(opts);
    EvictShards(tmp_ / "media");
    std::vector<std::string> args = {"-f", tmp_ / "media", mnt_};
    if (!opts.empty()) args.insert(args.begin(), {"-o", opts});
    ForegroundPackfs p(args, tmp_ / "stderr.txt");
    ASSERT_TRUE(WaitMounted(mnt_, true)) << testing::ReadFile(tmp_ / "stderr.txt");
    std::atomic<bool> stop{false};
    std::atomic<int> good_reads{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t) {
      readers.emplace_back([&, t] {
        std::string buf(65536, '\0');
        for (int i = 0; !stop.load(); ++i) {
          int fd = ::open((mnt_ + "/f" + std::to_string((i + t) % 20)).c_str(), O_RDONLY);
          if (fd < 0) continue;
          while (::read(fd, buf.data(), buf.size()) > 0) {
          }
          ::close(fd);
          ++good_reads;
        }
      });
    }
    while (good_reads.load() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // Readers hold files open, so a plain unmount would be EBUSY: SIGTERM makes packfs detach.
    ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);
    int status = p.Wait(20);
    stop = true;
    for (auto& r : readers) r.join();
    EXPECT_NE(status, -1) << "packfs did not exit with readers running";
    EXPECT_FALSE(IsMounted(mnt_));
  }
  // A daemonized mount with readers, ended by fusermount3 -u -z.
  Mount m({tmp_ / "media"}, mnt_);
  ASSERT_TRUE(m.ok()) << m.result().err;
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop.load()) testing::Sh("cat '" + mnt_ + "/f1' > /dev/null 2>&1");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(testing::Run({"fusermount3", "-u", "-z", mnt_}).exit_code, 0);
  stop = true;
  reader.join();
  EXPECT_TRUE(WaitMounted(mnt_, false));
  // The daemon is gone too: nothing named packfs serves this mountpoint any more.
  auto procs = Sh("pgrep -f 'packfs .*" + mnt_ + "$' || true");
  for (int i = 0; i < 40 && !procs.out.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    procs = Sh("pgrep -f 'packfs .*" + mnt_ + "$' || true");
  }
  EXPECT_EQ(procs.out, "");
}

// With one worker of four taking requests, a READ that waits for the disk hands its turn on:
// readers of cold files at once all get their bytes (no deadlock with every turn given up), and
// the workers' counters show the turns given up.
TEST_F(LifecycleTest, AWorkerWhoseReadWaitsHandsItsTurnOn) {
  EvictShards(tmp_ / "media");
  // No read-ahead at lookup and no pushes: the READs themselves find the pages missing. Workers
  // and their turns are the /dev/fuse transport's: noio_uring, or a test or the bench beside this
  // one that turns enable_uring on would put the mount on the ring (waits 0: seen by hand).
  Mount m({tmp_ / "media"}, mnt_,
          {"-o", "noio_uring,threads=4,active_threads=1,noprefetch,nopush"});
  ASSERT_TRUE(m.ok()) << m.result().err;
  EXPECT_EQ(ReadAllAtOnce(mnt_, tmp_ / "tree", 6), 20);
  const nlohmann::json workers = testing::MountStats(mnt_)["workers"];
  EXPECT_EQ(workers["threads"], 4) << workers.dump();
  EXPECT_EQ(workers["active"], 1) << workers.dump();
  EXPECT_GE(workers["waits"].get<uint64_t>(), 1u) << workers.dump();
  EXPECT_EQ(m.Unmount().exit_code, 0);
  EXPECT_TRUE(WaitMounted(mnt_, false));
}

// By default as many workers take requests as the daemon has CPUs; active_threads=0: all.
TEST_F(LifecycleTest, AsManyWorkersTakeRequestsAsThereAreCpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  const int cpus = CPU_COUNT(&set);
  for (const std::string opts : {"threads=8", "threads=8,active_threads=0"}) {
    SCOPED_TRACE(opts);
    Mount m({tmp_ / "media"}, mnt_, {"-o", opts});
    ASSERT_TRUE(m.ok()) << m.result().err;
    EXPECT_EQ(ReadAllAtOnce(mnt_, tmp_ / "tree", 4), 20);
    const nlohmann::json workers = testing::MountStats(mnt_)["workers"];
    EXPECT_EQ(workers["threads"], 8) << workers.dump();
    EXPECT_EQ(workers["active"], opts == "threads=8" ? std::min(cpus, 8) : 8) << workers.dump();
    EXPECT_EQ(m.Unmount().exit_code, 0);
    EXPECT_TRUE(WaitMounted(mnt_, false));
  }
}

TEST_F(LifecycleTest, DebugPrintsStatsAtUnmount) {
  ForegroundPackfs p({"-d", tmp_ / "media", mnt_}, tmp_ / "stderr.txt");
  ASSERT_TRUE(WaitMounted(mnt_, true)) << testing::ReadFile(tmp_ / "stderr.txt");
  EXPECT_EQ(testing::ReadFile(mnt_ + "/f5"), testing::ReadFile(tmp_ / "tree/f5"));
  EXPECT_EQ(testing::Run({"fusermount3", "-u", mnt_}).exit_code, 0);
  int status = p.Wait(20);
  ASSERT_NE(status, -1);
  std::string err = testing::ReadFile(tmp_ / "stderr.txt");
  EXPECT_NE(err.find("\"bytes_served\""), std::string::npos) << err.substr(0, 2000);
  EXPECT_NE(err.find("\"read_latency_us\""), std::string::npos);
}

// mount(8) runs its helpers with PATH removed: mount.fuse3's shell then finds `packfs` only in
// the default search path (/usr/local/sbin:/usr/local/bin:/usr/sbin:...), and mount(8) finds
// type helpers only in /sbin. These tests place symlinks there for their duration (root only),
// and skip rather than replace anything that is already installed.
class TempSymlink {
 public:
  TempSymlink(const std::string& target, const std::string& link) : link_(link) {
    struct stat st;
    if (::lstat(link.c_str(), &st) == 0) return;
    made_ = ::symlink(target.c_str(), link.c_str()) == 0;
  }
  ~TempSymlink() {
    if (made_) ::unlink(link_.c_str());
  }
  bool made() const { return made_; }

 private:
  std::string link_;
  bool made_ = false;
};

std::string PathWithPackfs() {
  return "PATH='" + testing::BinaryDir() + ":" + std::string(std::getenv("PATH")) + "' ";
}

TEST_F(LifecycleTest, MountTypeFusePackfs) {
  if (::getuid() != 0) GTEST_SKIP() << "mount(8) needs root";
  TempSymlink link(testing::PackfsPath(), "/usr/local/sbin/packfs");
  if (!link.made()) GTEST_SKIP() << "/usr/local/sbin/packfs exists already";
  auto r = testing::Sh("mount -t fuse.packfs '" + tmp_ / "media" + "' '" + mnt_ +
                       "' -o ro 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(IsMounted(mnt_));
  EXPECT_EQ(testing::ReadFile(mnt_ + "/f7"), testing::ReadFile(tmp_ / "tree/f7"));
  EXPECT_EQ(testing::Run({"umount", mnt_}).exit_code, 0);
  EXPECT_TRUE(WaitMounted(mnt_, false));
}

TEST_F(LifecycleTest, FstabLineThroughTheHelper) {
  if (::getuid() != 0) GTEST_SKIP() << "mount(8) needs root";
  TempSymlink link(std::string(PACKFS_SOURCE_DIR) + "/scripts/mount.fuse.packfs",
                   "/sbin/mount.fuse.packfs");
  if (!link.made()) GTEST_SKIP() << "/sbin/mount.fuse.packfs exists already";
  testing::WriteFile(tmp_ / "fstab", tmp_ / "media" + " " + mnt_ +
                                         " fuse.packfs ro,noauto,allow_other,umask=0027 0 0\n");
  auto r = testing::Sh("PACKFS_BIN='" + testing::PackfsPath() + "' mount -T '" + tmp_ / "fstab" +
                       "' '" + mnt_ + "' 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  struct stat st;
  ASSERT_EQ(::stat((mnt_ + "/f2").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0440u);
  EXPECT_EQ(testing::ReadFile(mnt_ + "/f2"), testing::ReadFile(tmp_ / "tree/f2"));
  EXPECT_EQ(testing::Run({"umount", mnt_}).exit_code, 0);
  EXPECT_TRUE(WaitMounted(mnt_, false));
}

// mount(8) passes -o values as typed: a relative catalog= is relative to where mount ran.
TEST_F(LifecycleTest, MountTypeWithRelativeCatalog) {
  if (::getuid() != 0) GTEST_SKIP() << "mount(8) needs root";
  TempSymlink link(std::string(PACKFS_SOURCE_DIR) + "/scripts/mount.fuse.packfs",
                   "/sbin/mount.fuse.packfs");
  if (!link.made()) GTEST_SKIP() << "/sbin/mount.fuse.packfs exists already";
  auto cat = testing::Run({testing::MkpackPath(), "catalog", tmp_ / "media"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  auto r = testing::Sh("cd '" + tmp_.path() + "' && PACKFS_BIN='" + testing::PackfsPath() +
                       "' mount -t fuse.packfs media mnt -o ro,catalog=media/.packfs-catalog.sqlite "
                       "2>&1 </dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(testing::ReadFile(mnt_ + "/f4"), testing::ReadFile(tmp_ / "tree/f4"));
  EXPECT_EQ(testing::Run({"umount", mnt_}).exit_code, 0);
  EXPECT_TRUE(WaitMounted(mnt_, false));
}

TEST_F(LifecycleTest, MountFuse3HashForm) {
  auto r = Sh(PathWithPackfs() + "mount.fuse3 'packfs#" + tmp_ / "media" + "' '" + mnt_ +
              "' -o ro 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(testing::ReadFile(mnt_ + "/f9"), testing::ReadFile(tmp_ / "tree/f9"));
  EXPECT_EQ(testing::Run({"fusermount3", "-u", mnt_}).exit_code, 0);
}

TEST_F(LifecycleTest, HelperScript) {
  // What mount(8) runs as /sbin/mount.fuse.packfs when the helper is installed there; it finds
  // packfs through PACKFS_BIN here (next to itself or on PATH when installed).
  std::string helper = std::string(PACKFS_SOURCE_DIR) + "/scripts/mount.fuse.packfs";
  auto r = Sh("PACKFS_BIN='" + testing::PackfsPath() + "' '" + helper + "' '" + tmp_ / "media" +
              "' '" + mnt_ + "' -o ro,noauto,_netdev,x-systemd.automount 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(testing::ReadFile(mnt_ + "/f11"), testing::ReadFile(tmp_ / "tree/f11"));
  EXPECT_EQ(testing::Run({"fusermount3", "-u", mnt_}).exit_code, 0);
  auto bad = Sh("PACKFS_BIN='" + testing::PackfsPath() + "' '" + helper + "' '" + tmp_ / "nope" +
                "' '" + mnt_ + "' 2>&1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_FALSE(IsMounted(mnt_));
}

}  // namespace
}  // namespace packfs
