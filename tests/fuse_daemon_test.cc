// What a daemonized packfs (no -f) does with what it was given: path options relative to the
// directory packfs was started in (the daemon leaves it for "/"), a mountpoint that is not empty.
// Every mount here runs in the background as users run it, never with -f.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::IsMounted;
using testing::RunResult;
using testing::TempDir;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    for (int i = 0; i < 6; ++i) {
      testing::WriteFile(tmp_ / ("tree/f" + std::to_string(i)),
                         testing::RandomBytes(30000 + 1000 * static_cast<size_t>(i),
                                              static_cast<uint64_t>(i) + 7));
    }
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 3);
    auto cat = testing::Run({testing::MkpackPath(), "catalog", tmp_ / "media"});
    ASSERT_EQ(cat.exit_code, 0) << cat.err;
    ASSERT_EQ(::mkdir((tmp_ / "mnt").c_str(), 0755), 0);
    char buf[PATH_MAX];
    ASSERT_NE(::realpath((tmp_ / "mnt").c_str(), buf), nullptr);
    mnt_ = buf;
  }
  void TearDown() override {
    if (!mnt_.empty() && IsMounted(mnt_)) {
      for (int i = 0; i < 50 && IsMounted(mnt_); ++i) {
        if (testing::Run({"fusermount3", "-u", mnt_}).exit_code == 0) break;
        ::usleep(100000);
      }
      if (IsMounted(mnt_)) testing::Run({"fusermount3", "-u", "-z", mnt_});
    }
  }
  // Runs `packfs ARGS` in the background mode from the temp dir (so relative paths are relative
  // to it), with stdin from /dev/null.
  RunResult PackfsIn(const std::string& args, const std::string& env = "") {
    return testing::Sh("cd " + Quote(tmp_.path()) + " && " + env + " " +
                       Quote(testing::PackfsPath()) + " " + args + " </dev/null");
  }
  void ExpectServes() {
    for (int i = 0; i < 6; ++i) {
      const std::string name = "f" + std::to_string(i);
      EXPECT_TRUE(testing::ReadFile(mnt_ + "/" + name) == testing::ReadFile(tmp_ / ("tree/" + name)))
          << name;
    }
  }
  void Unmount() {
    EXPECT_EQ(testing::Run({"fusermount3", "-u", mnt_}).exit_code, 0);
    EXPECT_TRUE(testing::WaitMounted(mnt_, false));
  }

  TempDir tmp_;
  std::string mnt_;
};

TEST_F(DaemonTest, RelativeCatalogOption) {
  RunResult r = PackfsIn("media mnt --catalog media/.packfs-catalog.sqlite");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_TRUE(IsMounted(mnt_));
  ExpectServes();
  Unmount();
  // Also with ./ and .. in it.
  r = PackfsIn("media mnt --catalog ./media/../media/.packfs-catalog.sqlite");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectServes();
  Unmount();
}

TEST_F(DaemonTest, RelativeCatalogMountOption) {
  RunResult r = PackfsIn("media mnt -o catalog=media/.packfs-catalog.sqlite");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(IsMounted(mnt_));
  ExpectServes();
  Unmount();
}

TEST_F(DaemonTest, MissingRelativeCatalogNamesTheAbsolutePath) {
  RunResult r = PackfsIn("media mnt --catalog nothere.sqlite");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(IsMounted(mnt_));
  EXPECT_NE(r.err.find(tmp_ / "nothere.sqlite"), std::string::npos) << r.err;
}

TEST_F(DaemonTest, NonEmptyMountpointWarnsAndMounts) {
  testing::WriteFile(mnt_ + "/hidden.txt", "under the mount");
  RunResult r = PackfsIn("media mnt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(IsMounted(mnt_));
  EXPECT_NE(r.err.find("warning: mountpoint " + mnt_ + " is not empty"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("-o nonempty"), std::string::npos) << r.err;
  ExpectServes();
  Unmount();
  // -o nonempty: the same mount, silently.
  r = PackfsIn("-o nonempty media mnt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(IsMounted(mnt_));
  EXPECT_EQ(r.err, "");
  ExpectServes();
  Unmount();
  EXPECT_EQ(testing::ReadFile(mnt_ + "/hidden.txt"), "under the mount");
}

}  // namespace
}  // namespace packfs
