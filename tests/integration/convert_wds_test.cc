// Tests of `mkpack convert-wds`: real tars (GNU tar gnu/posix/ustar, Python tarfile) converted to
// pack sets checked with `unzip -t`, Python's zipfile and sha256 against `tar -xf`; sample
// grouping across shard boundaries; --shard-prefix, duplicate keys, --dry-run, refused members.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <set>

#include "core/read/pack_set.h"
#include "core/write/pack_writer.h"
#include "tests/support/tar_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::TempDir;

// key -> sha256 of every member of every zip shard in `dir`, read with Python's zipfile; also
// fails the test when a key is in two shards.
std::map<std::string, std::string> ZipSha256(const std::string& dir) {
  auto r = testing::Run({"python3", "-c",
                "import glob, hashlib, sys, zipfile\n"
                "seen = set()\n"
                "for p in sorted(glob.glob(sys.argv[1] + '/pack-*.zip')):\n"
                "    with zipfile.ZipFile(p) as z:\n"
                "        for i in z.infolist():\n"
                "            assert i.compress_type == zipfile.ZIP_STORED\n"
                "            assert i.filename not in seen, i.filename\n"
                "            seen.add(i.filename)\n"
                "            print(hashlib.sha256(z.read(i)).hexdigest() + '  ' + i.filename)\n",
                dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t nl = r.out.find('\n', pos);
    std::string line = r.out.substr(pos, nl - pos);
    out[line.substr(66)] = line.substr(0, 64);
    pos = nl + 1;
  }
  return out;
}

// shard name -> keys, from the catalog of `dir`.
std::map<std::string, std::set<std::string>> KeysByShard(const std::string& dir) {
  auto ps = PackSet::Open(dir, {});
  EXPECT_TRUE(ps.ok()) << ps.status().ToString();
  std::map<std::string, std::set<std::string>> out;
  if (!ps.ok()) return out;
  Status st = (*ps)->catalog().ForEachFile([&](const std::string& key, const Node& n) {
    out[(*(*ps)->catalog().Shard(n.shard))->name].insert(key);
    return Status::OK();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

class ConvertFormats : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvertFormats, ZipMembersEqualTarExtraction) {
  const std::string how = GetParam();
  TempDir tmp;
  testing::MakeTarSourceTree(tmp / "tree", how != "ustar");
  testing::MakeTar(tmp / "tree", tmp / "in/shard-000.tar", how);
  auto r = testing::Run({testing::MkpackPath(), "convert-wds", tmp / "in/shard-000.tar", tmp / "out",
                "--no-fsync", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"skipped_symlinks\": 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"hard_links\": 1"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("samples"), std::string::npos) << r.err;
  auto unzip = testing::Sh("cd '" + tmp / "out" + "' && for z in pack-*.zip; do unzip -tq \"$z\" || exit 1; done");
  EXPECT_EQ(unzip.exit_code, 0) << unzip.out << unzip.err;
  auto want = testing::ExtractedSha256(tmp / "in/shard-000.tar", tmp / "x");
  EXPECT_EQ(ZipSha256(tmp / "out"), want);
  // The catalog was written and lists the same keys.
  size_t n = 0;
  for (auto& [shard, keys] : KeysByShard(tmp / "out")) n += keys.size();
  EXPECT_EQ(n, want.size());
}

INSTANTIATE_TEST_SUITE_P(Writers, ConvertFormats,
                         ::testing::Values("gnu", "posix", "ustar", "python"));

// Samples of three files each, ~3 KiB a sample; shards of 8 KiB hold two samples, so many
// samples would straddle a boundary if the planner cut by bytes alone.
TEST(ConvertWds, SamplesNeverStraddleShards) {
  TempDir tmp;
  for (int i = 0; i < 20; ++i) {
    char stem[16];
    std::snprintf(stem, sizeof stem, "%06d", i);
    testing::WriteFile(tmp / ("tree/" + std::string(stem) + ".jpg"),
                       testing::RandomBytes(2000 + 37 * i, i));
    testing::WriteFile(tmp / ("tree/" + std::string(stem) + ".json"), "{\"i\": " + std::to_string(i) + "}");
    testing::WriteFile(tmp / ("tree/" + std::string(stem) + ".cls"), std::to_string(i % 3));
  }
  // One sample larger than a shard on its own: split and reported.
  testing::WriteFile(tmp / "tree/999999.jpg", testing::RandomBytes(6000, 99));
  testing::WriteFile(tmp / "tree/999999.big.bin", testing::RandomBytes(6000, 98));
  ::mkdir((tmp / "in").c_str(), 0755);
  // Two tars, each with half of the samples, written by Python's tarfile like WebDataset.
  auto r = testing::Run({"python3", "-c",
                "import os, sys, tarfile\n"
                "root, out = sys.argv[1], sys.argv[2]\n"
                "names = sorted(os.listdir(root))\n"
                "half = len(names) // 2\n"
                "while names[half][:6] == names[half - 1][:6]: half += 1\n"
                "for i, part in enumerate([names[:half], names[half:]]):\n"
                "    with tarfile.open(f'{out}/shard-{i:06d}.tar', 'w', format=tarfile.PAX_FORMAT) as t:\n"
                "        for n in part: t.add(os.path.join(root, n), n)\n",
                tmp / "tree", tmp / "in"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto dry = testing::Run({testing::MkpackPath(), "convert-wds", tmp / "in", tmp / "out", "--max-pack-bytes",
                  "8K", "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("pack-0000.zip"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("21 samples"), std::string::npos) << dry.out;
  struct stat st;
  EXPECT_NE(::stat((tmp / "out").c_str(), &st), 0) << "--dry-run wrote " << tmp / "out";

  r = testing::Run({testing::MkpackPath(), "convert-wds", tmp / "in", tmp / "out", "--max-pack-bytes", "8K",
           "--no-fsync"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("999999"), std::string::npos) << "split sample not reported: " << r.err;
  auto shards = KeysByShard(tmp / "out");
  ASSERT_GT(shards.size(), 5u);
  std::map<std::string, std::set<std::string>> sample_shards;
  for (auto& [shard, keys] : shards) {
    for (const std::string& k : keys) sample_shards[GroupKey(k, GroupBy::kStem)].insert(shard);
  }
  EXPECT_EQ(sample_shards.size(), 21u);
  for (auto& [sample, in] : sample_shards) {
    if (sample == "999999") continue;
    EXPECT_EQ(in.size(), 1u) << "sample " << sample << " is split across shards";
  }
  EXPECT_EQ(sample_shards["999999"].size(), 2u);
  EXPECT_EQ(ZipSha256(tmp / "out"), testing::TreeSha256(tmp / "tree"));
}

TEST(ConvertWds, DuplicateKeyNamesBothTarsAndShardPrefixResolvesIt) {
  TempDir tmp;
  testing::WriteFile(tmp / "tree/000001.jpg", "one");
  ::mkdir((tmp / "in").c_str(), 0755);
  for (const std::string name : {"a.tar", "b.tar"}) {
    auto r = testing::Run({"tar", "-cf", tmp / ("in/" + name), "-C", tmp / "tree", "000001.jpg"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto r = testing::Run({testing::MkpackPath(), "convert-wds", tmp / "in/a.tar", tmp / "in/b.tar",
                tmp / "out"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("a.tar"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("b.tar"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("000001.jpg"), std::string::npos) << r.err;
  r = testing::Run({testing::MkpackPath(), "convert-wds", "--shard-prefix", tmp / "in", tmp / "out",
           "--no-fsync"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto got = ZipSha256(tmp / "out");
  EXPECT_EQ(got.size(), 2u);
  EXPECT_TRUE(got.count("a/000001.jpg"));
  EXPECT_TRUE(got.count("b/000001.jpg"));
}

TEST(ConvertWds, TruncatedTarConvertsItsIntactMembersAndExitsOne) {
  TempDir tmp;
  testing::MakeTarSourceTree(tmp / "tree", false);
  testing::MakeTar(tmp / "tree", tmp / "a.tar", "posix");
  auto size = testing::ReadFile(tmp / "a.tar").size();
  ASSERT_EQ(::truncate((tmp / "a.tar").c_str(), static_cast<off_t>(size / 2)), 0);
  auto r = testing::Run({testing::MkpackPath(), "convert-wds", tmp / "a.tar", tmp / "out", "--no-fsync"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  // What was converted equals what tar -xf recovers from the same truncated tar.
  testing::Sh("mkdir -p '" + tmp / "x" + "' && tar -xf '" + tmp / "a.tar" + "' -C '" + tmp / "x" +
              "' 2>/dev/null");
  auto converted = ZipSha256(tmp / "out");
  auto extracted = testing::TreeSha256(tmp / "x");
  ASSERT_FALSE(converted.empty());
  for (auto& [k, v] : converted) EXPECT_EQ(extracted[k], v) << k;
}

TEST(ConvertWds, RefusesANonEmptyDestinationAndBadSources) {
  TempDir tmp;
  testing::WriteFile(tmp / "tree/x.txt", "x");
  ASSERT_EQ(testing::Run({"tar", "-cf", tmp / "a.tar", "-C", tmp / "tree", "x.txt"}).exit_code, 0);
  ASSERT_EQ(testing::Run({testing::MkpackPath(), "convert-wds", tmp / "a.tar", tmp / "out", "--no-fsync"})
                .exit_code, 0);
  auto again = testing::Run({testing::MkpackPath(), "convert-wds", tmp / "a.tar", tmp / "out"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already holds"), std::string::npos) << again.err;
  auto missing = testing::Run({testing::MkpackPath(), "convert-wds", tmp / "nope.tar", tmp / "out2"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.tar"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace packfs
