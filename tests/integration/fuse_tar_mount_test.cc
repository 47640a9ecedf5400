// Real packfs mounts of tar shards: a directory of tars, tars named one by one, a tar directory
// with a catalog from `mkpack catalog`, and the pack set `mkpack convert-wds` made of the same
// tars. Every mounted file's sha256 equals what `tar -xf` extracts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "tests/support/mount_util.h"
#include "tests/support/tar_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::Mount;
using testing::TempDir;

#define REQUIRE_FUSE()                                                   \
  do {                                                                   \
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here"; \
  } while (0)

class TarMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_FUSE();
    // Three tars of disjoint trees, one per writer.
    const char* writers[] = {"python", "gnu", "posix"};
    ::mkdir((tmp_ / "tars").c_str(), 0755);
    for (int i = 0; i < 3; ++i) {
      const std::string part = "part" + std::to_string(i);
      testing::MakeTarSourceTree(tmp_ / ("t" + std::to_string(i) + "/" + part), true);
      const std::string tar = tmp_ / ("tars/shard-00000" + std::to_string(i) + ".tar");
      testing::MakeTar(tmp_ / ("t" + std::to_string(i)), tar, writers[i]);
      auto one = testing::ExtractedSha256(tar, tmp_ / ("x" + std::to_string(i)));
      per_tar_.push_back(one);
      want_.insert(one.begin(), one.end());
    }
    ::mkdir((tmp_ / "mnt").c_str(), 0755);
  }

  TempDir tmp_;
  std::map<std::string, std::string> want_;
  std::vector<std::map<std::string, std::string>> per_tar_;
};

TEST_F(TarMountTest, DirectoryOfTarsHashesLikeTarExtraction) {
  Mount m({tmp_ / "tars"}, tmp_ / "mnt");
  ASSERT_TRUE(m.ok()) << m.result().err;
  EXPECT_EQ(want_.size(), 33u);
  EXPECT_EQ(testing::TreeSha256(m.path()), want_);
  // Symlinks were skipped: the mount holds regular files and directories only.
  auto links = testing::Sh("find '" + m.path() + "' -type l | wc -l");
  EXPECT_EQ(links.out, "0\n");
}

TEST_F(TarMountTest, TarFilesNamedOneByOne) {
  Mount m({tmp_ / "tars/shard-000000.tar", tmp_ / "tars/shard-000002.tar"}, tmp_ / "mnt");
  ASSERT_TRUE(m.ok()) << m.result().err;
  auto want = per_tar_[0];
  want.insert(per_tar_[2].begin(), per_tar_[2].end());
  EXPECT_EQ(testing::TreeSha256(m.path()), want);
}

TEST_F(TarMountTest, CatalogBuiltAheadIsUsedAndRequired) {
  auto cat = testing::Run({testing::MkpackPath(), "catalog", tmp_ / "tars"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_NE(cat.out.find("3 shards"), std::string::npos) << cat.out;
  Mount m({tmp_ / "tars"}, tmp_ / "mnt", {"--catalog", tmp_ / "tars/.packfs-catalog.sqlite"});
  ASSERT_TRUE(m.ok()) << m.result().err;
  EXPECT_EQ(testing::TreeSha256(m.path()), want_);
}

TEST_F(TarMountTest, ConvertedPackMountsLikeTheTars) {
  auto r = testing::Run({testing::MkpackPath(), "convert-wds", tmp_ / "tars", tmp_ / "media",
                "--max-pack-bytes", "64K", "--no-fsync"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Mount m({tmp_ / "media"}, tmp_ / "mnt");
  ASSERT_TRUE(m.ok()) << m.result().err;
  EXPECT_EQ(testing::TreeSha256(m.path()), want_);
}

TEST_F(TarMountTest, TruncatedTarMountsItsIntactMembers) {
  const std::string tar = tmp_ / "tars/shard-000001.tar";
  const auto size = testing::ReadFile(tar).size();
  ASSERT_EQ(::truncate(tar.c_str(), static_cast<off_t>(size / 2)), 0);
  Mount m({tmp_ / "tars"}, tmp_ / "mnt", {"-o", "catalog=none"});
  ASSERT_TRUE(m.ok()) << m.result().err;
  auto got = testing::TreeSha256(m.path());
  // Everything of the intact tars, and for the cut one only files tar -xf also recovers intact.
  for (int i : {0, 2}) {
    for (const auto& [k, v] : per_tar_[i]) EXPECT_EQ(got[k], v) << k;
  }
  size_t from_cut = 0;
  for (const auto& [k, v] : got) {
    if (!k.starts_with("part1/")) continue;
    ++from_cut;
    EXPECT_EQ(per_tar_[1].at(k), v) << k;
  }
  EXPECT_GT(from_cut, 0u);
  EXPECT_LT(from_cut, per_tar_[1].size());
}

}  // namespace
}  // namespace packfs
