// Who may read a mount, and mounts under churn: without allow_other another user cannot even
// list it (the kernel refuses before packfs sees a request), with allow_other it reads the same
// bytes; hundreds of short-lived processes reading the same files all see the same bytes; and a
// mount taken down and remounted at the same place while readers run never serves a wrong byte.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::Mount;
using testing::TempDir;

class AccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
    for (int i = 0; i < 8; ++i) {
      contents_.push_back(testing::RandomBytes(50000 + 9000 * static_cast<size_t>(i),
                                               100 + static_cast<uint64_t>(i)));
      testing::WriteFile(tmp_ / ("tree/f" + std::to_string(i)), contents_.back());
    }
    ASSERT_EQ(testing::Run({testing::MkpackPath(), "pack", tmp_ / "tree", tmp_ / "media"})
                  .exit_code, 0);
    // The temp dir must be traversable by the other user for the allow_other case.
    ::chmod(tmp_.path().c_str(), 0755);
    mnt_ = testing::MakeMountPoint(tmp_ / "mnt");
    ASSERT_FALSE(mnt_.empty()) << std::strerror(errno);
  }
  // Runs `command` as user nobody.
  static testing::RunResult AsNobody(const std::string& command) {
    return testing::Run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh",
                         "-c", command});
  }
  TempDir tmp_;
  std::string mnt_;
  std::vector<std::string> contents_;
};

TEST_F(AccessTest, OtherUsersNeedAllowOther) {
  {
    Mount m({tmp_ / "media"}, mnt_);
    ASSERT_TRUE(m.ok()) << m.result().err;
    testing::RunResult cat = AsNobody("cat '" + mnt_ + "/f3' | wc -c");
    EXPECT_NE(cat.err.find("Permission denied"), std::string::npos) << cat.err << cat.out;
    EXPECT_EQ(cat.out, "0\n");
    testing::RunResult ls = AsNobody("ls '" + mnt_ + "'");
    EXPECT_NE(ls.exit_code, 0);
    EXPECT_EQ(ls.out, "");
    // Root itself reads it.
    EXPECT_EQ(testing::ReadFile(mnt_ + "/f3"), contents_[3]);
  }
  Mount shared({tmp_ / "media"}, mnt_, {"-o", "allow_other"});
  ASSERT_TRUE(shared.ok()) << shared.result().err;
  testing::RunResult sum = AsNobody("sha256sum '" + mnt_ + "/f3' | cut -d' ' -f1");
  EXPECT_EQ(sum.exit_code, 0) << sum.err;
  EXPECT_EQ(sum.out, testing::Sha256File(tmp_ / "tree/f3") + "\n");
  // Read-only for everyone.
  testing::RunResult write = AsNobody("echo x > '" + mnt_ + "/new'");
  EXPECT_NE(write.exit_code, 0);
  EXPECT_NE(write.err.find("Read-only file system"), std::string::npos) << write.err;
}

TEST_F(AccessTest, HundredsOfShortLivedProcessesSeeTheSameBytes) {
  Mount m({tmp_ / "media"}, mnt_);
  ASSERT_TRUE(m.ok()) << m.result().err;
  std::string all;
  for (const auto& c : contents_) all += c;
  testing::WriteFile(tmp_ / "all", all);
  const std::string want = testing::Sha256File(tmp_ / "all");
  // 400 processes, 16 at a time, each hashing all 8 files through the mount: one line each,
  // written by sha256sum in one write(2) so concurrent lines never interleave.
  testing::RunResult r = testing::Sh(
      "cd '" + mnt_ + "' && seq 400 | xargs -P 16 -I{} sh -c "
      "'cat f0 f1 f2 f3 f4 f5 f6 f7 | sha256sum' | sort | uniq -c");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  int count = 0;
  std::string digest;
  lines >> count >> digest;
  EXPECT_EQ(count, 400) << r.out;
  EXPECT_EQ(digest, want);
  std::string dash;
  lines >> dash;  // sha256sum's "-" for standard input
  std::string rest;
  EXPECT_FALSE(lines >> rest) << "more than one distinct result: " << r.out;
}

TEST_F(AccessTest, RemountUnderLoadNeverServesWrongBytes) {
  std::atomic<bool> stop{false};
  std::atomic<int> good{0}, bad{0}, failed{0};
  auto reader = [&](int t) {
    std::string buf;
    for (int i = 0; !stop.load(); ++i) {
      const int f = (i + t) % 8;
      int fd = ::open((mnt_ + "/f" + std::to_string(f)).c_str(), O_RDONLY);
      if (fd < 0) {
        ++failed;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      buf.assign(contents_[static_cast<size_t>(f)].size() + 1, '\0');
      size_t got = 0;
      ssize_t n;
      while ((n = ::read(fd, buf.data() + got, buf.size() - got)) > 0) got += static_cast<size_t>(n);
      ::close(fd);
      if (n < 0) {
        ++failed;  // the mount went away mid-read: an error, never other bytes
      } else if (buf.compare(0, got, contents_[static_cast<size_t>(f)]) == 0 &&
                 got == contents_[static_cast<size_t>(f)].size()) {
        ++good;
      } else if (got != 0 || testing::IsMounted(mnt_)) {
        ++bad;
      }
    }
  };
  for (int round = 0; round < 3; ++round) {
    Mount m({tmp_ / "media"}, mnt_);
    ASSERT_TRUE(m.ok()) << m.result().err;
    stop = false;
    const int before = good.load();
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t) readers.emplace_back(reader, t);
    while (good.load() < before + 50) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // Detach under load (readers hold files open, so a lazy unmount), then remount below.
    EXPECT_EQ(testing::Run({"fusermount3", "-u", "-z", mnt_}).exit_code, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
    for (auto& r : readers) r.join();
    EXPECT_TRUE(testing::WaitMounted(mnt_, false));
  }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(good.load(), 150);
}

}  // namespace
}  // namespace packfs
