// Resource limits: a full disk while `mkpack pack` writes (a small tmpfs as the target) fails with
// a clear error and leaves no partial shard that looks complete; a 1,000-shard set mounted under
// `ulimit -n 64` serves every member byte-exact (shard fds are reopened as they age out).
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::Mount;
using testing::TempDir;

// A tmpfs of `size` bytes at `dir`, unmounted on destruction.
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& dir, const std::string& size) : dir_(dir) {
    ::mkdir(dir.c_str(), 0755);
    ok_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (ok_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool ok() const { return ok_; }

 private:
  std::string dir_;
  bool ok_ = false;
};

TEST(LimitsTest, FullDiskWhilePackingFailsClearlyAndLeavesNoCompleteLookingShard) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs";
  TempDir tmp;
  for (int i = 0; i < 40; ++i) {
    testing::WriteFile(tmp / ("src/f" + std::to_string(100 + i) + ".bin"),
                       testing::RandomBytes(100000, static_cast<uint64_t>(i)));
  }
  SmallTmpfs disk(tmp / "disk", "1500k");
  ASSERT_TRUE(disk.ok()) << "cannot mount a tmpfs";
  // 4 MB of input, 1.5 MB of room, shards of ~1 MB: the first shard fits, the second does not.
  auto r = testing::Run({testing::MkpackPath(), "pack", "--max-pack-bytes", "1000000",
                         tmp / "src", tmp / "disk/media"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("disk/media"), std::string::npos) << r.err;
  // The first shard is complete and stays; the second, cut short by the full disk, left nothing
  // behind (neither a shard name nor its temp file). Shards are written one after the other,
  // so this is exact.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(tmp / "disk/media")) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, std::vector<std::string>{"pack-0000.zip"});
  auto test = testing::Run({"unzip", "-tq", tmp / "disk/media/pack-0000.zip"});
  EXPECT_EQ(test.exit_code, 0) << "pack-0000.zip is not a complete zip: " << test.out;
  // Room again: --resume finishes the set, and it holds every input byte-exact.
  SmallTmpfs bigger(tmp / "disk2", "20m");
  ASSERT_TRUE(bigger.ok());
  ASSERT_EQ(testing::Run({"cp", "-a", tmp / "disk/media", tmp / "disk2/media"}).exit_code, 0);
  auto resume = testing::Run({testing::MkpackPath(), "pack", "--resume", "--max-pack-bytes",
                              "1000000", tmp / "src", tmp / "disk2/media"});
  ASSERT_EQ(resume.exit_code, 0) << resume.err;
  auto verify = testing::Run({testing::MkpackPath(), "verify", tmp / "disk2/media"});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  ASSERT_EQ(testing::Run({testing::MkpackPath(), "unpack", tmp / "disk2/media", tmp / "out"})
                .exit_code,
            0);
  EXPECT_EQ(testing::Run({"diff", "-r", tmp / "src", tmp / "out"}).exit_code, 0);
}

TEST(LimitsTest, ThousandShardsUnderUlimit64ServeEveryMember) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  TempDir tmp;
  for (int i = 0; i < 1000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "d%02d/m%04d.bin", i / 100, i);
    testing::WriteFile(tmp / (std::string("src/") + name),
                       testing::RandomBytes(static_cast<size_t>(1000 + i), static_cast<uint64_t>(i)));
  }
  auto pack = testing::Run({testing::MkpackPath(), "pack", "--no-fsync", "--max-members", "1",
                            tmp / "src", tmp / "media"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  ASSERT_TRUE(testing::Sh("test -f '" + tmp / "media/pack-0999.zip" + "'").exit_code == 0);
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  // The daemon inherits the limit from the shell that starts it.
  auto mounted = testing::Sh("ulimit -n 64 && exec '" + testing::PackfsPath() + "' '" +
                             tmp / "media" + "' '" + tmp / "mnt" + "'");
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  auto limit = testing::Sh("grep 'Max open files' /proc/$(pgrep -n -f 'packfs .*" + tmp / "mnt" +
                           "$')/limits");
  EXPECT_NE(limit.out.find(" 64 "), std::string::npos) << limit.out;
  // Twice over every member in two orders, so shard fds are closed and reopened.
  auto diff = testing::Run({"diff", "-r", tmp / "src", tmp / "mnt"});
  EXPECT_EQ(diff.exit_code, 0) << diff.out.substr(0, 2000);
  auto again = testing::Sh("cd '" + tmp / "src" + "' && find . -type f | sort -r | while read f; "
                           "do cmp \"$f\" '" + tmp / "mnt" + "'/\"$f\" || exit 1; done");
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  const nlohmann::json stats = testing::MountStats(tmp / "mnt");
  EXPECT_LT(stats["open_shards"], 64) << stats;
  EXPECT_EQ(testing::Run({"fusermount3", "-u", tmp / "mnt"}).exit_code, 0);
}

}  // namespace
}  // namespace packfs
