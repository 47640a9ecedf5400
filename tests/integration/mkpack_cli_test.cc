// End-to-end tests of mkpack verify / ls / unpack / resolve / catalog, run as real processes on
// the interop fixtures (pack sets written by another implementation) and on damaged copies.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/support/test_util.h"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using testing::Run;
using testing::RunResult;
using testing::TempDir;

const std::vector<std::string> kGoodCases = {"multi-shard", "groups",         "zip64-forced",
                                             "infozip-pipe", "stream-written", "junk-prefix"};

// Copies a fixture case into a writable temp dir; returns the path of its media/ copy.
std::string CopyCase(const TempDir& tmp, const std::string& name) {
  std::string dst = tmp / name;
  fs::copy(testing::FixturesDir() + "/interop/" + name, dst, fs::copy_options::recursive);
  for (auto& e : fs::recursive_directory_iterator(dst)) {
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  fs::permissions(dst, fs::perms::owner_write, fs::perm_options::add);
  return dst + "/media";
}

RunResult Mkpack(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {testing::MkpackPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv);
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

TEST(MkpackCliTest, VerifyAcceptsEveryGoodFixture) {
  for (const auto& name : kGoodCases) {
    SCOPED_TRACE(name);
    auto sums = testing::ReadSha256List(testing::FixturesDir() + "/interop/" + name + "/sha256.txt");
    RunResult r = Mkpack({"verify", testing::FixturesDir() + "/interop/" + name + "/media"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("OK: " + std::to_string(sums.size()) + " members"), std::string::npos)
        << r.out;
  }
}

TEST(MkpackCliTest, VerifyReportsEveryBadFixture) {
  struct Case {
    std::string name;
    std::vector<std::string> must_mention;
  };
  const std::vector<Case> cases = {
      {"deflated", {"a.txt", "deflate"}},
      {"dup-across-shards", {"same.bin", "pack-0000.zip", "pack-0001.zip"}},
      {"encrypted-flag", {"a.bin", "encrypt"}},
      {"nul-name", {"a\\x00b.bin", "NUL"}},
      {"hostile-names", {"pack-0000.zip"}},
      {"offset-outside", {"a.bin"}},
      {"overlap", {"a.bin"}},
      {"truncated", {"pack-0000.zip"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunResult r = Mkpack({"verify", testing::FixturesDir() + "/interop/bad/" + c.name + "/media"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("FAILED"), std::string::npos) << r.out;
    for (const auto& word : c.must_mention) {
      EXPECT_NE(r.out.find(word), std::string::npos) << "missing '" << word << "' in:\n" << r.out;
    }
    EXPECT_EQ(r.out.find(std::string(1, '\0')), std::string::npos) << "NUL byte printed";
  }
}

// The nul-name fixture's member name really holds a NUL ("a\0b.bin", written byte by byte): every
// command refuses that member, names it with the NUL escaped, and never prints a NUL byte.
TEST(MkpackCliTest, NulNameFixtureIsRefusedAndNamedWithoutPrintingNul) {
  std::string media = testing::FixturesDir() + "/interop/bad/nul-name/media";
  RunResult ls = Mkpack({"ls", media});
  EXPECT_EQ(ls.out.find(std::string(1, '\0')), std::string::npos);
  EXPECT_EQ(ls.err.find(std::string(1, '\0')), std::string::npos);
  EXPECT_EQ(ls.out, "");
  EXPECT_NE(ls.err.find("a\\x00b.bin"), std::string::npos) << ls.err;
  RunResult verify = Mkpack({"verify", media});
  EXPECT_EQ(verify.exit_code, 1) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("a\\x00b.bin"), std::string::npos) << verify.out;
  EXPECT_NE(verify.out.find("NUL"), std::string::npos) << verify.out;
  EXPECT_EQ(verify.out.find(std::string(1, '\0')), std::string::npos);
}

TEST(MkpackCliTest, LsListsEveryKeyAndRefsMatchTheWriter) {
  std::string media = testing::FixturesDir() + "/interop/multi-shard/media";
  auto sums = testing::ReadSha256List(testing::FixturesDir() + "/interop/multi-shard/sha256.txt");
  RunResult r = Mkpack({"ls", media});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> listed;
  for (const auto& l : Lines(r.out)) listed.insert(l);
  std::set<std::string> expected;
  for (const auto& [k, v] : sums) expected.insert(k);
  EXPECT_EQ(listed, expected);

  RunResult refs = Mkpack({"ls", "--refs", media});
  ASSERT_EQ(refs.exit_code, 0) << refs.err;
  std::set<std::string> got_refs;
  for (const auto& l : Lines(refs.out)) {
    size_t tab = l.rfind("\tzip://");
    ASSERT_NE(tab, std::string::npos) << l;
    got_refs.insert(l.substr(tab + 1));
  }
  std::set<std::string> want_refs;
  for (const auto& l : Lines(testing::ReadFile(testing::FixturesDir() + "/interop/multi-shard/refs.txt"))) {
    want_refs.insert(l);
  }
  EXPECT_EQ(got_refs, want_refs);

  RunResult js = Mkpack({"ls", "--json", media});
  ASSERT_EQ(js.exit_code, 0);
  std::string tmpjson;
  {
    TempDir t;
    testing::WriteFile(t / "ls.jsonl", js.out);
    RunResult py = testing::Run({"python3", "-c",
                        "import json,sys\nn=0\nfor l in open(sys.argv[1]):\n json.loads(l); n+=1\nprint(n)",
                        t / "ls.jsonl"});
    ASSERT_EQ(py.exit_code, 0) << py.err;
    EXPECT_EQ(std::stoul(py.out), sums.size());
  }
}

TEST(MkpackCliTest, UnpackIsByteIdenticalForEveryGoodFixture) {
  for (const auto& name : kGoodCases) {
    SCOPED_TRACE(name);
    TempDir tmp;
    RunResult r = Mkpack({"unpack", testing::FixturesDir() + "/interop/" + name + "/media", tmp / "out"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto sums = testing::ReadSha256List(testing::FixturesDir() + "/interop/" + name + "/sha256.txt");
    size_t files = 0;
    for (auto& e : fs::recursive_directory_iterator(tmp / "out")) {
      if (e.is_regular_file()) ++files;
    }
    EXPECT_EQ(files, sums.size());
    for (const auto& [key, sum] : sums) {
      EXPECT_EQ(testing::Sha256File(tmp / ("out/" + key)), sum) << key;
    }
  }
}

TEST(MkpackCliTest, UnpackRefusesToOverwriteAndForceReplaces) {
  TempDir tmp;
  std::string media = testing::FixturesDir() + "/interop/junk-prefix/media";
  ASSERT_EQ(Mkpack({"unpack", media, tmp / "out"}).exit_code, 0);
  testing::WriteFile(tmp / "out/j/0.bin", "changed");
  RunResult again = Mkpack({"unpack", media, tmp / "out"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  EXPECT_EQ(testing::ReadFile(tmp / "out/j/0.bin"), "changed");
  RunResult forced = Mkpack({"unpack", "--force", media, tmp / "out"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  auto sums = testing::ReadSha256List(testing::FixturesDir() + "/interop/junk-prefix/sha256.txt");
  EXPECT_EQ(testing::Sha256File(tmp / "out/j/0.bin"), sums["j/0.bin"]);
}

TEST(MkpackCliTest, UnpackNeverWritesThroughSymlinks) {
  TempDir tmp;
  fs::create_directories(tmp / "elsewhere");
  fs::create_directories(tmp / "out");
  fs::create_symlink(tmp / "elsewhere", tmp / "out/j");  // the fixture's keys live under j/
  RunResult r = Mkpack({"unpack", "--force", testing::FixturesDir() + "/interop/junk-prefix/media",
                        tmp / "out"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("symlink"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(tmp / "elsewhere"));

  // A symlink where a file goes is replaced with --force, never followed.
  TempDir tmp2;
  fs::create_directories(tmp2 / "out/j");
  testing::WriteFile(tmp2 / "victim", "keep");
  fs::create_symlink(tmp2 / "victim", tmp2 / "out/j/0.bin");
  RunResult r2 = Mkpack({"unpack", "--force", testing::FixturesDir() + "/interop/junk-prefix/media",
                         tmp2 / "out"});
  EXPECT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(testing::ReadFile(tmp2 / "victim"), "keep");
  EXPECT_FALSE(fs::is_symlink(tmp2 / "out/j/0.bin"));
}

TEST(MkpackCliTest, UnpackOfHostileNamesStaysInsideTarget) {
  TempDir tmp;
  fs::create_directories(tmp / "a/b");
  RunResult r = Mkpack({"unpack", testing::FixturesDir() + "/interop/bad/hostile-names/media",
                        tmp / "a/b/out"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // fine.bin written, the bad names reported
  EXPECT_TRUE(fs::exists(tmp / "a/b/out/fine.bin"));
  // Nothing appeared beside or above the target.
  std::set<std::string> found;
  for (auto& e : fs::recursive_directory_iterator(tmp.path())) found.insert(e.path().string());
  for (const auto& p : found) {
    EXPECT_TRUE(p.rfind(tmp / "a/b/out", 0) == 0 || p == tmp / "a" || p == tmp / "a/b") << p;
  }
}

TEST(MkpackCliTest, ResolveGivesTheBytesOfKeysAndRefs) {
  std::string media = testing::FixturesDir() + "/interop/multi-shard/media";
  auto sums = testing::ReadSha256List(testing::FixturesDir() + "/interop/multi-shard/sha256.txt");
  auto refs = Lines(testing::ReadFile(testing::FixturesDir() + "/interop/multi-shard/refs.txt"));
  ASSERT_FALSE(refs.empty());
  for (const std::string& ref : {refs.front(), refs.back(), refs[refs.size() / 2]}) {
    RunResult r = Mkpack({"resolve", media, ref});
    ASSERT_EQ(r.exit_code, 0) << ref << ": " << r.err;
    auto f = Lines(r.out);
    ASSERT_EQ(f.size(), 1u);
    std::istringstream in(f[0]);
    std::string path, off, size, crc;
    std::getline(in, path, '\t');
    std::getline(in, off, '\t');
    std::getline(in, size, '\t');
    std::getline(in, crc, '\t');
    TempDir t;
    RunResult dd = testing::Sh("tail -c +" + std::to_string(std::stoull(off) + 1) + " '" + path +
                               "' | head -c " + size + " > '" + t / "blob" + "'");
    ASSERT_EQ(dd.exit_code, 0);
    std::string key = ref.substr(6, ref.find("::") - 6);
    EXPECT_EQ(testing::Sha256File(t / "blob"), sums[key]) << ref;
  }
  RunResult missing = Mkpack({"resolve", media, "no/such/key"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no/such/key"), std::string::npos);
  RunResult wrong = Mkpack({"resolve", media, "zip://img/0000.jpg::media/pack-0004.zip"});
  EXPECT_NE(wrong.exit_code, 0);
  RunResult json = Mkpack({"resolve", "--json", media, "img/0000.jpg"});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_NE(json.out.find("\"offset\""), std::string::npos);
}

TEST(MkpackCliTest, CatalogBuildCheckAndRefresh) {
  TempDir tmp;
  std::string media = CopyCase(tmp, "multi-shard");
  RunResult build = Mkpack({"catalog", media});
  ASSERT_EQ(build.exit_code, 0) << build.err;
  EXPECT_NE(build.out.find("5 indexed"), std::string::npos) << build.out;
  EXPECT_EQ(Mkpack({"catalog", "--check", media}).exit_code, 0);
  EXPECT_EQ(Mkpack({"verify", media}).exit_code, 0);

  // A refresh with nothing changed reads no shard.
  RunResult again = Mkpack({"catalog", media});
  EXPECT_NE(again.out.find("0 indexed, 5 unchanged"), std::string::npos) << again.out;

  // Replace one shard with another's bytes: check and verify see it; refresh re-indexes only it.
  fs::remove(media + "/pack-0004.zip");
  fs::copy_file(testing::FixturesDir() + "/interop/junk-prefix/media/pack-0000.zip",
                media + "/pack-0004.zip");
  RunResult check = Mkpack({"catalog", "--check", media});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.out.find("pack-0004.zip"), std::string::npos) << check.out;
  RunResult ver = Mkpack({"verify", media});
  EXPECT_EQ(ver.exit_code, 1);
  EXPECT_NE(ver.out.find("pack-0004.zip"), std::string::npos) << ver.out;
  RunResult refresh = Mkpack({"catalog", media});
  EXPECT_EQ(refresh.exit_code, 0) << refresh.err;
  EXPECT_NE(refresh.out.find("1 indexed, 4 unchanged"), std::string::npos) << refresh.out;
  EXPECT_EQ(Mkpack({"verify", media}).exit_code, 0);
}

TEST(MkpackCliTest, VerifyFindsADamagedByte) {
  TempDir tmp;
  std::string media = CopyCase(tmp, "junk-prefix");
  RunResult res = Mkpack({"resolve", media, "j/3.bin"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  std::istringstream in(res.out);
  std::string path, off;
  std::getline(in, path, '\t');
  std::getline(in, off, '\t');
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::stoll(off));
    char c;
    f.get(c);
    f.seekp(std::stoll(off));
    f.put(static_cast<char>(c ^ 0x5A));
  }
  RunResult r = Mkpack({"verify", media});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("j/3.bin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CRC"), std::string::npos) << r.out;
  // unpack refuses to write the damaged member but writes the others.
  RunResult u = Mkpack({"unpack", media, tmp / "out"});
  EXPECT_EQ(u.exit_code, 1);
  EXPECT_FALSE(fs::exists(tmp / "out/j/3.bin"));
  EXPECT_TRUE(fs::exists(tmp / "out/j/2.bin"));
}

// A directory of tars is a pack set for ls, resolve and mounting, but verify and unpack (which
// check CRC-32s that tar does not record) say so and what to use instead.
TEST(MkpackCliTest, VerifyAndUnpackOfTarShardsSayWhatToUse) {
  testing::TempDir tmp;
  testing::WriteFile(tmp / "src/000001.jpg", "jpeg bytes");
  testing::WriteFile(tmp / "src/000001.json", "{}");
  ASSERT_EQ(::mkdir((tmp / "shards").c_str(), 0755), 0);
  ASSERT_EQ(testing::Run({"tar", "cf", tmp / "shards/shard-000000.tar", "-C", tmp / "src", "."})
                .exit_code,
            0);
  RunResult v = Mkpack({"verify", tmp / "shards"});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("shard-000000.tar"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("mkpack convert-wds"), std::string::npos) << v.err;
  RunResult u = Mkpack({"unpack", tmp / "shards", tmp / "out"});
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_NE(u.err.find("tar -xf"), std::string::npos) << u.err;
  RunResult ls = Mkpack({"ls", tmp / "shards"});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(ls.out, "000001.jpg\n000001.json\n");
}

TEST(MkpackCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Mkpack({"verify"}).exit_code, 2);
  EXPECT_EQ(Mkpack({"frobnicate"}).exit_code, 2);
  RunResult r = Mkpack({"verify", "/nonexistent/media"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/media"), std::string::npos) << r.err;
  RunResult v = Mkpack({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("mkpack"), std::string::npos);
}

// An unknown command word is named as such, with the commands there are (not CLI11's "A
// subcommand is required", which points at the wrong mistake).
TEST(MkpackCliTest, UnknownCommandIsNamedWithTheCommandsThereAre) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bogus"}, std::vector<std::string>{"bogus", "media"}}) {
    RunResult r = Mkpack(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unknown command 'bogus'"), std::string::npos) << r.err;
    for (const char* cmd :
         {"pack", "catalog", "verify", "ls", "unpack", "resolve", "convert-wds"}) {
      EXPECT_NE(r.err.find(cmd), std::string::npos) << cmd << " not listed: " << r.err;
    }
    EXPECT_EQ(r.err.find("A subcommand is required"), std::string::npos) << r.err;
  }
  RunResult none = Mkpack({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("verify"), std::string::npos) << none.err;
  // Real commands and the top-level flags still work.
  EXPECT_EQ(Mkpack({"--help"}).exit_code, 0);
  EXPECT_EQ(Mkpack({"verify", "--help"}).exit_code, 0);
}

// Nothing to verify is not OK: an empty folder, a source folder, a pack that died before its
// first shard. Each says what verify looked for, or that `mkpack pack --resume` continues.
TEST(MkpackCliTest, VerifyWithoutShardsFailsSayingWhatItLookedFor) {
  TempDir tmp;
  fs::create_directories(tmp / "empty");
  testing::WriteFile(tmp / "photos/a.jpg", "jpeg");
  testing::WriteFile(tmp / "photos/sub/b.txt", "text");
  for (const char* dir : {"empty", "photos", "photos/"}) {
    SCOPED_TRACE(dir);
    RunResult r = Mkpack({"verify", tmp / dir});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.out.find("OK:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("holds no shards"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("pack-NNNN.zip"), std::string::npos) << r.out;
    RunResult j = Mkpack({"verify", "--json", tmp / dir});
    EXPECT_EQ(j.exit_code, 1);
    EXPECT_NE(j.out.find("\"ok\": false"), std::string::npos) << j.out;
  }
  // A pack that stopped before its first shard was renamed into place.
  testing::WriteFile(tmp / "died/.pack-0000.zip.tmp", "half a shard");
  RunResult d = Mkpack({"verify", tmp / "died"});
  EXPECT_EQ(d.exit_code, 1) << d.out << d.err;
  EXPECT_NE(d.out.find(".pack-0000.zip.tmp"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("mkpack pack --resume"), std::string::npos) << d.out;
}

// A complete shard beside a leftover temp shard of an interrupted `mkpack pack`: the set is
// incomplete, and verify says so and how to finish it.
TEST(MkpackCliTest, VerifyReportsTheLeftoversOfAnInterruptedPack) {
  TempDir tmp;
  testing::WriteFile(tmp / "src/a.txt", "a");
  ASSERT_EQ(Mkpack({"pack", tmp / "src", tmp / "media"}).exit_code, 0);
  ASSERT_EQ(Mkpack({"verify", tmp / "media"}).exit_code, 0);
  testing::WriteFile(tmp / "media/.pack-0001.zip.tmp", "the shard being written");
  RunResult r = Mkpack({"verify", tmp / "media"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(tmp / "media/.pack-0001.zip.tmp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mkpack pack --resume"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAILED"), std::string::npos) << r.out;
}

// Following verify's advice never drops data silently: a missing shard is named with how many
// members it held, a plain refresh refuses to forget it, `ls` and `unpack` refuse the set, and
// only `mkpack catalog --forget-missing` drops it. A changed shard keeps the plain advice.
TEST(MkpackCliTest, AMissingShardIsNeverDroppedSilently) {
  TempDir tmp;
  std::string media = CopyCase(tmp, "multi-shard");
  ASSERT_EQ(Mkpack({"catalog", media}).exit_code, 0);
  size_t in_shard1 = 0;
  for (const auto& l : Lines(testing::ReadFile(testing::FixturesDir() +
                                               "/interop/multi-shard/refs.txt"))) {
    if (l.ends_with("::media/pack-0001.zip")) ++in_shard1;
  }
  ASSERT_GT(in_shard1, 0u);
  const std::string members = "(" + std::to_string(in_shard1) + " members)";
  fs::remove(media + "/pack-0001.zip");

  RunResult v = Mkpack({"verify", media});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("media/pack-0001.zip " + members), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("mkpack catalog --forget-missing " + media), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("`mkpack catalog " + media + "`"), std::string::npos)
      << "a plain refresh would drop the members:\n" << v.out;

  RunResult refresh = Mkpack({"catalog", media});
  EXPECT_EQ(refresh.exit_code, 1) << refresh.out << refresh.err;
  EXPECT_NE(refresh.err.find("media/pack-0001.zip " + members), std::string::npos) << refresh.err;
  EXPECT_NE(refresh.err.find("--forget-missing"), std::string::npos) << refresh.err;
  RunResult check = Mkpack({"catalog", "--check", media});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.out.find("--forget-missing"), std::string::npos) << check.out;
  // Nothing was forgotten: verify still fails, and so do the readers, naming the shard.
  EXPECT_EQ(Mkpack({"verify", media}).exit_code, 1);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"ls", media},
        std::vector<std::string>{"unpack", media, tmp / "out"},
        std::vector<std::string>{"resolve", media, "img/0000.jpg"}}) {
    RunResult r = Mkpack(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("pack-0001.zip"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("--forget-missing"), std::string::npos) << args[0] << ": " << r.err;
  }

  RunResult forget = Mkpack({"catalog", "--forget-missing", media});
  EXPECT_EQ(forget.exit_code, 0) << forget.out << forget.err;
  EXPECT_NE(forget.err.find("forgot " + media + "/pack-0001.zip: " + std::to_string(in_shard1)),
            std::string::npos)
      << forget.err;
  RunResult ok = Mkpack({"verify", media});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;

  // A changed shard: the plain refresh is the right advice, and loses nothing.
  fs::remove(media + "/pack-0004.zip");
  fs::copy_file(testing::FixturesDir() + "/interop/junk-prefix/media/pack-0000.zip",
                media + "/pack-0004.zip");
  RunResult stale = Mkpack({"verify", media});
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_NE(stale.out.find("`mkpack catalog " + media + "`"), std::string::npos) << stale.out;
  EXPECT_EQ(stale.out.find("--forget-missing"), std::string::npos) << stale.out;
  EXPECT_EQ(Mkpack({"catalog", media}).exit_code, 0);
  EXPECT_EQ(Mkpack({"verify", media}).exit_code, 0);
}

// Writes a STORED zip with Python's zipfile: one member per key, its content the key itself.
void PythonZip(const std::string& path, const std::vector<std::string>& keys) {
  std::vector<std::string> argv = {"python3", "-c",
                                   "import sys, zipfile\n"
                                   "with zipfile.ZipFile(sys.argv[1], 'w') as z:\n"
                                   "    for k in sys.argv[2:]: z.writestr(k, k)\n",
                                   path};
  argv.insert(argv.end(), keys.begin(), keys.end());
  fs::create_directories(fs::path(path).parent_path());
  RunResult r = Run(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// "a" is a file and "a/b" makes it a directory too: catalog, ls, unpack and the mount refuse
// such a set, so verify reports it (naming both keys), in one shard or across two.
TEST(MkpackCliTest, VerifyReportsAKeyThatIsAFileAndADirectory) {
  TempDir tmp;
  PythonZip(tmp / "one/media/pack-0000.zip", {"a", "a/b", "c.txt"});
  PythonZip(tmp / "two/media/pack-0000.zip", {"x/a", "c.txt"});
  PythonZip(tmp / "two/media/pack-0001.zip", {"x/a/b/d.bin"});
  for (const char* set : {"one", "two"}) {
    SCOPED_TRACE(set);
    const std::string media = tmp / (std::string(set) + "/media");
    const std::string file = set == std::string("one") ? "a" : "x/a";
    const std::string below = set == std::string("one") ? "a/b" : "x/a/b/d.bin";
    RunResult r = Mkpack({"verify", media});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("key " + file + " "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("key " + below), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("FAILED: 1 problems"), std::string::npos) << r.out;
    // What verify now reports is what the readers refuse.
    EXPECT_EQ(Mkpack({"ls", media}).exit_code, 2);
  }
}

// Members refused while indexing are reported once by unpack, not once as a warning and again
// as skipped.
TEST(MkpackCliTest, UnpackReportsEachRefusedMemberOnce) {
  TempDir tmp;
  RunResult r = Mkpack({"unpack", testing::FixturesDir() + "/interop/bad/hostile-names/media",
                        tmp / "out"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  for (const char* name : {"../escape.bin", "/abs.bin", "ok/../../x.bin"}) {
    size_t n = 0;
    for (const auto& l : Lines(r.err)) {
      if (l.find(name) != std::string::npos) ++n;
    }
    EXPECT_EQ(n, 1u) << name << " reported " << n << " times:\n" << r.err;
  }
}

// resolve prints the shard's absolute path (text and --json), whatever directory it was run
// from and however the pack directory was named, so a loader can open it from anywhere.
TEST(MkpackCliTest, ResolvePrintsAnAbsoluteShardPath) {
  TempDir tmp;
  std::string media = CopyCase(tmp, "multi-shard");
  const std::string shard = fs::canonical(media + "/pack-0000.zip").string();
  RunResult r = testing::Sh("cd '" + tmp.path() + "/multi-shard' && '" + testing::MkpackPath() +
                            "' resolve ./media/ img/0000.jpg");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\t')), shard) << r.out;
  RunResult j = testing::Sh("cd '" + tmp.path() + "/multi-shard' && '" + testing::MkpackPath() +
                            "' resolve --json media img/0000.jpg");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"path\": \"" + shard + "\""), std::string::npos) << j.out;
  // Through a symlinked directory the path is the real one.
  fs::create_symlink(media, tmp / "link");
  RunResult l = Mkpack({"resolve", tmp / "link", "img/0000.jpg"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(l.out.substr(0, l.out.find('\t')), shard) << l.out;
}

// The shard limits are parsed alike and strictly by every packing subcommand: a malformed value
// exits 2 naming the flag and the value, and nothing is written.
TEST(MkpackCliTest, MalformedShardLimitsAreRefusedByEveryPackingCommand) {
  TempDir tmp;
  fs::create_directories(tmp / "src/a");
  std::ofstream(tmp / "src/a/one.txt") << "one";
  ASSERT_EQ(testing::Run({"tar", "cf", tmp / "shard-000000.tar", "-C", tmp / "src", "a/one.txt"}).exit_code,
            0);
  fs::create_directories(tmp / "lerobot");
  const std::vector<std::vector<std::string>> commands = {
      {"pack", tmp / "src"}, {"convert-wds", tmp / "shard-000000.tar"}};
  int n = 0;
  auto refused = [&](std::vector<std::string> argv, const std::string& flag,
                     const std::string& value) {
    const std::string dst = tmp / ("out" + std::to_string(n++));
    argv.push_back(dst);
    argv.push_back(flag);
    argv.push_back(value);
    RunResult r = Mkpack(argv);
    EXPECT_EQ(r.exit_code, 2) << argv[0] << " " << flag << " '" << value << "': " << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dst)) << argv[0] << " " << flag << " '" << value << "' wrote " << dst;
  };
  for (const auto& cmd : commands) {
    for (const char* bad : {"12x", "x12", "-1", "65536", "", " 12", "+4", "99999999999999999999"}) {
      refused(cmd, "--align", bad);
    }
    refused(cmd, "--max-pack-bytes", "10Q");
  }
  refused({"convert-lerobot", tmp / "lerobot"}, "--max-pack-bytes", "10Q");
  refused({"convert-lerobot", tmp / "lerobot"}, "--max-pack-bytes", "");

  // Well-formed limits still pack.
  for (const auto& cmd : commands) {
    for (const char* good : {"0", "4096", "auto"}) {
      std::vector<std::string> argv = cmd;
      argv.push_back(tmp / ("out" + std::to_string(n++)));
      argv.insert(argv.end(), {"--align", good, "--max-pack-bytes", "1M"});
      RunResult r = Mkpack(argv);
      EXPECT_EQ(r.exit_code, 0) << argv[0] << " --align " << good << ": " << r.err;
    }
  }
}

}  // namespace
}  // namespace packfs
