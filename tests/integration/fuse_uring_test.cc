// FUSE over io_uring through real mounts: every byte read through the ring is the source's
// (random preads from 8 threads, whole files, mmap, past EOF), the stats attribute shows the
// requests went through the ring and reads of a member whose header was checked were read
// straight into its buffers, a kernel that says no to -o io_uring leaves a working /dev/fuse
// mount with a warning (and, without the option, no warning), mounts take the ring by default
// where the kernel allows it and not with -o noio_uring, and SIGTERM or a lazy unmount with
// readers running ends the daemon.
//
// The kernel takes FUSE io_uring commands only while the fuse module parameter enable_uring is
// Y; the suite sets it (CI runs as root) and puts the old value back at the end, holding the
// lock everyone who switches it holds meanwhile (bench/common.py, URING_LOCK), so that it never
// puts back a value another test or the bench beside it set.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using nlohmann::json;
using testing::ForegroundPackfs;
using testing::IsMounted;
using testing::Mount;
using testing::TempDir;
using testing::WaitMounted;

constexpr const char* kParam = "/sys/module/fuse/parameters/enable_uring";

void SetParam(const std::string& value) {
  int fd = ::open(kParam, O_WRONLY);
  ASSERT_GE(fd, 0) << kParam << ": " << std::strerror(errno);
  EXPECT_EQ(::write(fd, value.data(), value.size()), static_cast<ssize_t>(value.size()));
  ::close(fd);
}

// Reads a file with plain read(2) calls; false when any of them fails (an ended mount).
bool ReadWhole(const std::string& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  out->clear();
  char buf[16384];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out->append(buf, static_cast<size_t>(n));
  ::close(fd);
  return n == 0;
}

class FuseUringTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::access(kParam, F_OK) != 0) return;
    const char* dir = ::access("/run/lock", F_OK) == 0 ? "/run/lock" : "/tmp";
    const std::string lock = std::string(dir) + "/packfs-enable_uring.lock";
    lock_fd_ = ::open(lock.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    // Waits up to 10 minutes for whoever holds it (a quick bench's block with the ring on).
    for (int i = 0; lock_fd_ >= 0 && i < 6000; ++i) {
      if (::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    old_param_ = testing::ReadFile(kParam).substr(0, 1);
  }
  static void TearDownTestSuite() {
    if (!old_param_.empty()) SetParam(old_param_);
    if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
    lock_fd_ = -1;
  }
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    if (old_param_.empty()) {
      GTEST_SKIP() << "this kernel has no FUSE over io_uring (" << kParam << ")";
    }
    SetParam("Y");
    big_ = testing::RandomBytes(5 * 1024 * 1024 + 77, 7);
    testing::WriteFile(tmp_ / "tree/big.bin", big_);
    for (int i = 0; i < 48; ++i) {
      small_.push_back(testing::RandomBytes(1000 + static_cast<size_t>(i) * 777, 500 + i));
      testing::WriteFile(tmp_ / ("tree/d" + std::to_string(i % 4) + "/" + Name(i)), small_.back());
    }
    extra_ = testing::RandomBytes(20000, 99);  // read by no helper: its reads are new requests
    testing::WriteFile(tmp_ / "tree/extra.bin", extra_);
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 16);
    ASSERT_EQ(::mkdir((tmp_ / "mnt").c_str(), 0755), 0);
  }
  static std::string Name(int i) { return "f" + std::to_string(i) + ".bin"; }
  std::string Small(int i) const {
    return tmp_ / ("mnt/d" + std::to_string(i % 4) + "/" + Name(i));
  }
  // Every small file read whole, and `threads` readers of random ranges of the big one.
  int ReadEverything(int threads) {
    std::atomic<int> bad{0};
    for (int i = 0; i < static_cast<int>(small_.size()); ++i) {
      if (testing::ReadFile(Small(i)) != small_[static_cast<size_t>(i)]) ++bad;
    }
    std::vector<std::thread> readers;
    for (int t = 0; t < threads; ++t) {
      readers.emplace_back([&, t] {
        std::mt19937_64 rng(t);
        int fd = ::open((tmp_ / "mnt/big.bin").c_str(), O_RDONLY);
        if (fd < 0) return (void)++bad;
        std::string buf(1 << 20, '\0');
        for (int i = 0; i < 100; ++i) {
          size_t off = rng() % big_.size();
          size_t len = 1 + rng() % buf.size();
          ssize_t n = ::pread(fd, buf.data(), len, static_cast<off_t>(off));
          size_t want = std::min(len, big_.size() - off);
          if (n != static_cast<ssize_t>(want) || buf.compare(0, want, big_, off, want) != 0) ++bad;
          size_t k = rng() % small_.size();
          if (testing::ReadFile(Small(static_cast<int>(k))) != small_[k]) ++bad;
        }
        ::close(fd);
      });
    }
    for (auto& r : readers) r.join();
    return bad.load();
  }

  static inline std::string old_param_;
  static inline int lock_fd_ = -1;
  TempDir tmp_;
  std::string big_;
  std::string extra_;
  std::vector<std::string> small_;
};

// (-o nolist where requests are counted: listed by the mount, the small files a pass reads by
// path would need no LOOKUP, and most of them no READ.)
TEST_F(FuseUringTest, ServesEveryReadThroughTheRing) {
  Mount m({tmp_ / "media"}, tmp_ / "mnt", {"-o", "io_uring,nolist"});
  ASSERT_TRUE(m.ok()) << m.result().err;
  EXPECT_EQ(ReadEverything(8), 0);
  // The same bytes through mmap, and reads at and past the end.
  int fd = ::open((tmp_ / "mnt/big.bin").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* map = ::mmap(nullptr, big_.size(), PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  EXPECT_EQ(std::memcmp(map, big_.data(), big_.size()), 0);
  ::munmap(map, big_.size());
  char c;
  EXPECT_EQ(::pread(fd, &c, 1, static_cast<off_t>(big_.size())), 0);
  EXPECT_EQ(::pread(fd, &c, 1, static_cast<off_t>(big_.size()) + 4096), 0);
  ::close(fd);
  // Listings, attributes, extended attributes and refusals come back through it too.
  EXPECT_EQ(testing::Sh("find '" + (tmp_ / "mnt") + "' | wc -l").out, "55\n");  // 49+4+1+1
  struct stat st;
  ASSERT_EQ(::stat(Small(5).c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), small_[5].size());
  char size_attr[32] = {};
  ASSERT_GT(::getxattr(Small(5).c_str(), "user.packfs.size", size_attr, sizeof size_attr - 1), 0);
  EXPECT_EQ(std::string(size_attr), std::to_string(small_[5].size()));
  EXPECT_LT(::open(Small(5).c_str(), O_WRONLY), 0);
  EXPECT_EQ(errno, EROFS);
  EXPECT_NE(::mkdir((tmp_ / "mnt/new").c_str(), 0755), 0);
  EXPECT_EQ(errno, EROFS);

  json stats = testing::MountStats(m.path());
  ASSERT_TRUE(stats.contains("io_uring")) << stats.dump();
  EXPECT_FALSE(stats["io_uring"]["failed"].get<bool>());
  // Every file's first read and every lookup went through the ring (the page cache answered
  // the rest); /dev/fuse took only what came before the ring was ready (INIT, the first few).
  const uint64_t ring = stats["io_uring"]["requests"].get<uint64_t>();
  const uint64_t reads = stats["requests"]["read"].get<uint64_t>();
  const uint64_t lookups = stats["requests"]["lookup"].get<uint64_t>();
  EXPECT_GE(reads, 48u);
  EXPECT_GE(lookups, 48u);
  EXPECT_GE(ring, reads + lookups) << stats.dump();
  EXPECT_EQ(stats["errors"].get<uint64_t>(), 0u);
  EXPECT_TRUE(stats["io_uring"]["bound"].get<bool>()) << stats.dump();

  // Its local header checked by the first read, the big file's READs are read straight into
  // the ring's buffers (no copy of ours): read it again from the shard, its page cache dropped.
  const uint64_t in_place = stats["io_uring"]["in_place_bytes"].get<uint64_t>();
  fd = ::open((tmp_ / "mnt/big.bin").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  std::string again;
  EXPECT_TRUE(ReadWhole(tmp_ / "mnt/big.bin", &again));
  EXPECT_TRUE(again == big_) << "read " << again.size() << " bytes of " << big_.size();
  ::close(fd);
  stats = testing::MountStats(m.path());
  EXPECT_GE(stats["io_uring"]["in_place_bytes"].get<uint64_t>() - in_place, 4u << 20)
      << stats.dump();

  // Bound to the ring by INIT, the connection keeps it when enable_uring is turned off: new
  // requests (a lookup and reads of a file nobody read yet) are still answered through it.
  // (Unbound, the kernel would refuse the commits and these would wait forever; the timeout
  // turns that into a failure.)
  SetParam("N");
  auto cat = testing::Sh("timeout -s KILL 20 cat '" + (tmp_ / "mnt/extra.bin") + "'");
  SetParam("Y");
  EXPECT_TRUE(cat.out == extra_) << "read " << cat.out.size() << " bytes of " << extra_.size()
                                 << "; " << cat.err;
  json after = testing::MountStats(m.path());
  EXPECT_GE(after["io_uring"]["requests"].get<uint64_t>(), ring + 2) << after.dump();
}

TEST_F(FuseUringTest, WhenTheKernelSaysNoTheMountServesThroughDevFuse) {
  SetParam("N");
  {
    ForegroundPackfs p({"-f", "-o", "io_uring,nolist", tmp_ / "media", tmp_ / "mnt"},
                       tmp_ / "stderr.txt");
    ASSERT_TRUE(WaitMounted(tmp_ / "mnt", true)) << testing::ReadFile(tmp_ / "stderr.txt");
    EXPECT_EQ(ReadEverything(2), 0);
    json stats = testing::MountStats(tmp_ / "mnt");
    EXPECT_TRUE(stats["io_uring"]["failed"].get<bool>()) << stats.dump();
    EXPECT_EQ(stats["io_uring"]["requests"].get<uint64_t>(), 0u);
    EXPECT_GE(stats["requests"]["read"].get<uint64_t>(), 48u);
    ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);
    EXPECT_NE(p.Wait(20), -1);
  }
  const std::string err = testing::ReadFile(tmp_ / "stderr.txt");
  EXPECT_NE(err.find("io_uring"), std::string::npos) << err;
  EXPECT_NE(err.find("echo Y > /sys/module/fuse/parameters/enable_uring"), std::string::npos)
      << err;
  EXPECT_NE(err.find("serving through /dev/fuse"), std::string::npos) << err;
}

// Without the option the mount takes the ring where the kernel allows it, and serves through
// /dev/fuse without a word where it does not; -o noio_uring keeps it off.
TEST_F(FuseUringTest, ByDefaultTheRingWhereTheKernelAllowsIt) {
  if (std::getenv("PACKFS_TEST_MOUNT_OPTIONS") != nullptr) {
    GTEST_SKIP() << "checks mounts without options; PACKFS_TEST_MOUNT_OPTIONS adds some";
  }
  const std::string mnt = tmp_ / "mnt";
  {
    Mount m({tmp_ / "media"}, mnt);
    ASSERT_TRUE(m.ok()) << m.result().err;
    EXPECT_EQ(ReadEverything(2), 0);
    json stats = testing::MountStats(m.path());
    EXPECT_TRUE(stats["io_uring"]["used"].get<bool>()) << stats.dump();
    EXPECT_GE(stats["io_uring"]["requests"].get<uint64_t>(),
              stats["requests"]["read"].get<uint64_t>()) << stats.dump();
  }
  {
    Mount m({tmp_ / "media"}, mnt, {"-o", "noio_uring,nolist"});
    ASSERT_TRUE(m.ok()) << m.result().err;
    EXPECT_EQ(ReadEverything(2), 0);
    json stats = testing::MountStats(m.path());
    EXPECT_FALSE(stats["io_uring"].is_object() && stats["io_uring"]["used"].get<bool>())
        << stats.dump();
    EXPECT_GE(stats["requests"]["read"].get<uint64_t>(), 48u);
  }
  SetParam("N");
  {
    ForegroundPackfs p({"-f", tmp_ / "media", mnt}, tmp_ / "stderr.txt");
    ASSERT_TRUE(WaitMounted(mnt, true)) << testing::ReadFile(tmp_ / "stderr.txt");
    EXPECT_EQ(ReadEverything(2), 0);
    json stats = testing::MountStats(mnt);
    EXPECT_FALSE(stats["io_uring"]["used"].get<bool>()) << stats.dump();
    EXPECT_FALSE(stats["io_uring"]["failed"].get<bool>()) << stats.dump();
    EXPECT_EQ(stats["io_uring"]["requests"].get<uint64_t>(), 0u);
    ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);
    EXPECT_NE(p.Wait(20), -1);
  }
  const std::string err = testing::ReadFile(tmp_ / "stderr.txt");
  EXPECT_EQ(err.find("io_uring"), std::string::npos) << err;
}

TEST_F(FuseUringTest, SigtermAndLazyUnmountWithReadersRunning) {
  const std::string mnt = tmp_ / "mnt";
  std::atomic<bool> stop{false};
  std::atomic<int> good{0};
  std::atomic<int> wrong{0};
  auto read_loop = [&](int t) {
    for (int i = t; !stop.load(); ++i) {
      std::string got;
      if (!ReadWhole(Small(i % 48), &got)) continue;  // the mount is going away
      if (got == small_[static_cast<size_t>(i % 48)]) {
        ++good;
      } else {
        ++wrong;
      }
    }
  };
  {
    ForegroundPackfs p({"-f", "-o", "io_uring", tmp_ / "media", mnt}, tmp_ / "stderr.txt");
    ASSERT_TRUE(WaitMounted(mnt, true)) << testing::ReadFile(tmp_ / "stderr.txt");
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t) readers.emplace_back(read_loop, t);
    while (good.load() < 200) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);
    int status = p.Wait(20);
    stop = true;
    for (auto& r : readers) r.join();
    EXPECT_NE(status, -1) << "packfs did not exit on SIGTERM with readers running";
    EXPECT_TRUE(WIFEXITED(status)) << status;
    EXPECT_FALSE(IsMounted(mnt));
  }
  // A daemonized mount ended by fusermount3 -u -z while a reader holds files open.
  Mount m({tmp_ / "media"}, mnt, {"-o", "io_uring"});
  ASSERT_TRUE(m.ok()) << m.result().err;
  stop = false;
  good = 0;
  std::thread reader(read_loop, 0);
  while (good.load() < 100) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(testing::Run({"fusermount3", "-u", "-z", mnt}).exit_code, 0);
  stop = true;
  reader.join();
  EXPECT_TRUE(WaitMounted(mnt, false));
  auto procs = testing::Sh("pgrep -f 'packfs .*" + mnt + "$' || true");
  for (int i = 0; i < 100 && !procs.out.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    procs = testing::Sh("pgrep -f 'packfs .*" + mnt + "$' || true");
  }
  EXPECT_EQ(procs.out, "") << "the daemon outlived its lazy unmount";
  EXPECT_EQ(wrong.load(), 0) << "a read through the ring returned other bytes";
}

}  // namespace
}  // namespace packfs
