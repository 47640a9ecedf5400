// What a daemonized packfs (no -f) does with what it was given and with its errors: path options
// relative to the directory packfs was started in (the daemon leaves it for "/"), a mountpoint
// that is not empty, and errors that must reach the user with no terminal left: the --log file,
// the default log file where syslog is unreachable, and the root's user.packfs.errors attribute.
// Every mount here runs in the background as users run it, never with -f.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::IsMounted;
using testing::RunResult;
using testing::TempDir;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// Reads `path` whole; the errno of the first failing call, 0 when all went well.
int ReadErrno(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return errno;
  char buf[65536];
  int err = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) err = errno;
    if (n <= 0) break;
  }
  ::close(fd);
  return err;
}

// True when something accepts messages on /dev/log (the daemon then logs to syslog).
bool SyslogListens() {
  for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
    int fd = ::socket(AF_UNIX, type, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, "/dev/log");
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (ok) return true;
  }
  return false;
}

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
    mnt_ = testing::MakeMountPoint(tmp_ / "mnt");
    ASSERT_FALSE(mnt_.empty()) << std::strerror(errno);
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

// With --log FILE (relative, like the other paths) the daemon's errors land in FILE.
TEST_F(DaemonTest, LogOptionReceivesTheDaemonsErrors) {
  RunResult r = PackfsIn("--log logs/packfs.log media mnt");
  EXPECT_NE(r.exit_code, 0) << "the directory of a --log file is not created";
  EXPECT_NE(r.err.find("--log: cannot open the log file " + tmp_ / "logs/packfs.log"),
            std::string::npos) << r.err;
  EXPECT_FALSE(IsMounted(mnt_));
  ASSERT_EQ(::mkdir((tmp_ / "logs").c_str(), 0755), 0);
  r = PackfsIn("--log logs/packfs.log media mnt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(IsMounted(mnt_));
  ASSERT_EQ(::unlink((tmp_ / "media/pack-0001.zip").c_str()), 0);
  EXPECT_EQ(ReadErrno(mnt_ + "/f4"), EIO);
  EXPECT_EQ(ReadErrno(mnt_ + "/f1"), 0);
  const std::string log = testing::ReadFile(tmp_ / "logs/packfs.log");
  EXPECT_NE(log.find("] error: read: reading 'f4' from media/pack-0001.zip"), std::string::npos)
      << log;
  Unmount();
}

TEST_F(DaemonTest, LogMountOption) {
  RunResult r = PackfsIn("-o log=packfs.log media mnt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(::unlink((tmp_ / "media/pack-0000.zip").c_str()), 0);
  EXPECT_EQ(ReadErrno(mnt_ + "/f0"), EIO);
  const std::string log = testing::ReadFile(tmp_ / "packfs.log");
  EXPECT_NE(log.find("reading 'f0' from media/pack-0000.zip"), std::string::npos) << log;
  Unmount();
}

// Where nothing listens on /dev/log (containers), syslog(3) drops messages silently: the daemon
// writes them to mount-NAME-HASH.log in the cache directory instead.
TEST_F(DaemonTest, DefaultLogFileWhenSyslogIsUnreachable) {
  if (SyslogListens()) GTEST_SKIP() << "syslog listens on /dev/log here";
  RunResult r = PackfsIn("media mnt", "XDG_CACHE_HOME=" + Quote(tmp_ / "xdg"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(::unlink((tmp_ / "media/pack-0001.zip").c_str()), 0);
  EXPECT_EQ(ReadErrno(mnt_ + "/f5"), EIO);
  std::vector<std::string> logs;
  for (const auto& e : std::filesystem::directory_iterator(tmp_ / "xdg/packfs")) {
    logs.push_back(e.path().string());
  }
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(std::filesystem::path(logs[0]).filename().string().rfind("mount-mnt-", 0), 0u)
      << logs[0];
  EXPECT_EQ(std::filesystem::path(logs[0]).extension(), ".log");
  const std::string log = testing::ReadFile(logs[0]);
  EXPECT_NE(log.find("reading 'f5' from media/pack-0001.zip"), std::string::npos) << log;
  // The stats attribute says where the messages go.
  EXPECT_EQ(testing::MountStats(mnt_)["log_file"], logs[0]);
  Unmount();
}

// A read that fails is in the root's user.packfs.errors, with its file and shard.
TEST_F(DaemonTest, FailedReadIsInTheErrorsAttribute) {
  RunResult r = PackfsIn("media mnt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::XattrJson(mnt_, "user.packfs.errors"), nlohmann::json::array());
  ASSERT_EQ(::unlink((tmp_ / "media/pack-0001.zip").c_str()), 0);
  EXPECT_EQ(ReadErrno(mnt_ + "/f4"), EIO);
  EXPECT_EQ(ReadErrno(mnt_ + "/f1"), 0);
  const nlohmann::json errors = testing::XattrJson(mnt_, "user.packfs.errors");
  ASSERT_TRUE(errors.is_array()) << errors;
  // One failed read(2) may be two failed READs (read-ahead, then the page itself).
  ASSERT_GE(errors.size(), 1u) << errors;
  for (const auto& e : errors) {
    EXPECT_EQ(e["path"], "f4");
    EXPECT_EQ(e["shard"], "media/pack-0001.zip");
    EXPECT_NE(e["message"].get<std::string>().find("read: reading 'f4' from media/pack-0001.zip"),
              std::string::npos) << errors;
    EXPECT_EQ(e["time"].get<std::string>().size(), 20u) << errors;  // 2026-12-02T10:00:00Z
  }
  Unmount();
}

// Warnings of the mount itself (a member that cannot be served) head the errors attribute.
TEST_F(DaemonTest, ErrorsAttributeHoldsMountWarnings) {
  auto z = testing::Run({"python3", "-c",
                         "import zipfile,sys\n"
                         "with zipfile.ZipFile(sys.argv[1], 'a', zipfile.ZIP_DEFLATED) as z:\n"
                         "    z.writestr('packed.txt', 'x' * 5000)\n",
                         tmp_ / "media/pack-0001.zip"});
  ASSERT_EQ(z.exit_code, 0) << z.err;
  RunResult r = PackfsIn("--catalog none media mnt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("packed.txt"), std::string::npos) << r.err;
  const nlohmann::json errors = testing::XattrJson(mnt_, "user.packfs.errors");
  ASSERT_TRUE(errors.is_array()) << errors;
  ASSERT_EQ(errors.size(), 1u) << errors;
  EXPECT_NE(errors[0]["message"].get<std::string>().find("packed.txt"), std::string::npos)
      << errors;
  ExpectServes();
  Unmount();
}

}  // namespace
}  // namespace packfs
