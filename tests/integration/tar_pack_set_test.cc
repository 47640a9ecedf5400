// Tests of tar shards served by PackSet (no FUSE): a directory of tars indexed at open and through
// `mkpack catalog`, a chosen subset of tars, a truncated tar, and the once-per-member header check
// refusing a tar changed behind the catalog's back.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <fstream>
#include <map>

#include "core/format/tar_reader.h"
#include "core/read/pack_set.h"
#include "tests/support/tar_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::TempDir;
using Use = PackSetOptions::CatalogUse;

// key -> member bytes, read through PackSet::Read in odd-sized pieces.
std::map<std::string, std::string> ReadAll(const PackSet& ps) {
  std::map<std::string, std::string> out;
  Status st = ps.catalog().ForEachFile([&](const std::string& key, const Node& n) {
    std::string bytes;
    std::vector<uint8_t> buf(7777);
    for (uint64_t off = 0;;) {
      PACKFS_ASSIGN_OR_RETURN(size_t got, ps.Read(n, off, buf));
      if (got == 0) break;
      bytes.append(reinterpret_cast<const char*>(buf.data()), got);
      off += got;
    }
    out[key] = std::move(bytes);
    return Status::OK();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

std::map<std::string, std::string> Hashes(const std::map<std::string, std::string>& files) {
  TempDir tmp;
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : files) {
    testing::WriteFile(tmp / "f", v);
    out[k] = testing::Sha256File(tmp / "f");
  }
  return out;
}

// Two tars with disjoint keys (part1/..., part2/...) in tmp/tars, and what tar -xf makes of them.
std::map<std::string, std::string> MakeTarDir(const TempDir& tmp) {
  testing::MakeTarSourceTree(tmp / "t1/part1", true);
  testing::MakeTarSourceTree(tmp / "t2/part2", true);
  ::mkdir((tmp / "tars").c_str(), 0755);
  testing::MakeTar(tmp / "t1", tmp / "tars/shard-000000.tar", "python");
  testing::MakeTar(tmp / "t2", tmp / "tars/shard-000001.tar", "gnu");
  testing::ExtractedSha256(tmp / "tars/shard-000000.tar", tmp / "x");
  return testing::ExtractedSha256(tmp / "tars/shard-000001.tar", tmp / "x");
}

TEST(TarPackSet, DirectoryOfTarsWithAndWithoutCatalog) {
  TempDir tmp;
  auto want = MakeTarDir(tmp);
  ASSERT_EQ(want.size(), 22u);
  PackSetOptions none;
  none.catalog_use = Use::kNone;
  auto ps = PackSet::Open(tmp / "tars", none);
  ASSERT_TRUE(ps.ok()) << ps.status().ToString();
  EXPECT_TRUE((*ps)->warnings().empty());
  EXPECT_EQ(Hashes(ReadAll(**ps)), want);
  EXPECT_EQ((*ps)->ShardRefPath(1), "tars/shard-000001.tar");

  auto cat = testing::Run({testing::MkpackPath(), "catalog", tmp / "tars"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  PackSetOptions require;
  require.catalog_use = Use::kRequire;
  auto ps2 = PackSet::Open(tmp / "tars", require);
  ASSERT_TRUE(ps2.ok()) << ps2.status().ToString();
  EXPECT_TRUE((*ps2)->using_catalog_file());
  EXPECT_EQ(Hashes(ReadAll(**ps2)), want);
  auto check = testing::Run({testing::MkpackPath(), "catalog", "--check", tmp / "tars"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(TarPackSet, ChosenTarsOnly) {
  TempDir tmp;
  MakeTarDir(tmp);
  ASSERT_EQ(testing::Run({testing::MkpackPath(), "catalog", tmp / "tars"}).exit_code, 0);
  auto ps = PackSet::Open(tmp / "tars", {}, {"shard-000001.tar"});
  ASSERT_TRUE(ps.ok()) << ps.status().ToString();
  EXPECT_FALSE((*ps)->using_catalog_file());  // the catalog describes both tars
  auto files = ReadAll(**ps);
  EXPECT_EQ(files.size(), 11u);
  for (const auto& [k, v] : files) EXPECT_TRUE(k.starts_with("part2/")) << k;
}

TEST(TarPackSet, TruncatedTarServesIntactMembersAndWarns) {
  TempDir tmp;
  testing::MakeTarSourceTree(tmp / "t", true);
  ::mkdir((tmp / "tars").c_str(), 0755);
  testing::MakeTar(tmp / "t", tmp / "tars/a.tar", "posix");
  auto src = FileShardSource::Open(tmp / "tars/a.tar", "a.tar");
  ASSERT_TRUE(src.ok());
  auto full = ReadTarIndex(**src);
  ASSERT_TRUE(full.ok());
  size_t k = 3;
  while (k < full->members.size() && (full->members[k].size < 2 || full->members[k].hard_link)) ++k;
  ASSERT_LT(k, full->members.size());
  const TarMember& cut_in = full->members[k];
  ASSERT_EQ(::truncate((tmp / "tars/a.tar").c_str(),
                       static_cast<off_t>(cut_in.data_offset + cut_in.size / 2)), 0);
  auto ps = PackSet::Open(tmp / "tars", {});
  ASSERT_TRUE(ps.ok()) << ps.status().ToString();
  ASSERT_EQ((*ps)->warnings().size(), 1u);
  EXPECT_NE((*ps)->warnings()[0].find("truncated"), std::string::npos) << (*ps)->warnings()[0];
  auto files = ReadAll(**ps);
  EXPECT_EQ(files.size(), k);
  for (size_t i = 0; i < k; ++i) {
    const TarMember& m = full->members[i];
    std::string want = testing::ReadFile(tmp / ("t/" + m.name));
    EXPECT_EQ(files[m.name], want) << m.name;
  }
}

TEST(TarPackSet, ChangedTarIsRefusedNotMisread) {
  TempDir tmp;
  testing::WriteFile(tmp / "t/a.bin", testing::RandomBytes(3000, 1));
  testing::WriteFile(tmp / "t/b.bin", testing::RandomBytes(3000, 2));
  ::mkdir((tmp / "tars").c_str(), 0755);
  ASSERT_EQ(testing::Run({"tar", "--format=gnu", "-cf", tmp / "tars/s.tar", "-C", tmp / "t", "a.bin",
                 "b.bin"}).exit_code, 0);
  ASSERT_EQ(testing::Run({testing::MkpackPath(), "catalog", tmp / "tars"}).exit_code, 0);
  // Same size and mtime, but b.bin's header now names another member: only the header check
  // can notice.
  struct stat before;
  ASSERT_EQ(::stat((tmp / "tars/s.tar").c_str(), &before), 0);
  ASSERT_EQ(testing::Run({"tar", "--format=gnu", "-cf", tmp / "tars/s.tar", "-C", tmp / "t", "b.bin",
                 "a.bin"}).exit_code, 0);
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (tmp / "tars/s.tar").c_str(), times, 0), 0);
  auto ps = PackSet::Open(tmp / "tars", {});
  ASSERT_TRUE(ps.ok()) << ps.status().ToString();
  ASSERT_TRUE((*ps)->using_catalog_file());
  auto node = (*ps)->catalog().Find("a.bin");
  ASSERT_TRUE(node.ok() && node->has_value());
  std::vector<uint8_t> buf(100);
  auto got = (*ps)->Read(**node, 0, buf);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kStale);
  EXPECT_NE(got.status().message().find("a.bin"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find("mkpack catalog"), std::string::npos);
}

}  // namespace
}  // namespace packfs
