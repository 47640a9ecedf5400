// Interop tests for the zip reader: the shared fixture pack sets (written by other zip writers),
// the broken archives in fixtures/interop/bad, and cross-checks against archives made on the spot
// by Python's zipfile and Info-ZIP `zip -0` (including stream mode and a > 4 GiB sparse shard).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/base/key.h"
#include "core/format/zip_reader.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string Interop(const std::string& rel) { return testing::FixturesDir() + "/interop/" + rel; }

struct Shard {
  std::unique_ptr<FileShardSource> src;
  ShardIndex index;
};

Result<Shard> IndexFile(const std::string& path, const std::string& display) {
  PACKFS_ASSIGN_OR_RETURN(auto src, FileShardSource::Open(path, display));
  PACKFS_ASSIGN_OR_RETURN(ShardIndex idx, ReadZipIndex(*src));
  return Shard{std::move(src), std::move(idx)};
}

std::string ReadMember(const ShardSource& src, const ShardMember& m) {
  std::string s(m.size, '\0');
  Status st = ReadExactly(src, m.data_offset,
                          std::span<uint8_t>(reinterpret_cast<uint8_t*>(s.data()), s.size()), "member");
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

// SHA-256 of every member's bytes (one sha256sum run over temp copies), keyed by member name.
std::map<std::string, std::string> MemberHashes(const std::vector<const Shard*>& shards) {
  TempDir tmp;
  std::vector<std::string> argv = {"sha256sum", "--"};
  std::vector<std::string> names;
  for (const Shard* s : shards) {
    for (const ShardMember& m : s->index.members) {
      const std::string file = tmp / std::to_string(names.size());
      testing::WriteFile(file, ReadMember(*s->src, m));
      argv.push_back(file);
      names.push_back(m.name);
    }
  }
  std::map<std::string, std::string> out;
  if (names.empty()) return out;
  testing::RunResult r = testing::Run(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  for (size_t i = 0; i < names.size() && std::getline(lines, line); ++i) out[names[i]] = line.substr(0, 64);
  return out;
}

std::vector<Shard> IndexCase(const std::string& name) {
  std::vector<Shard> shards;
  std::vector<std::string> files;
  for (const auto& ent : fs::directory_iterator(Interop(name + "/media"))) files.push_back(ent.path().filename());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    auto s = IndexFile(Interop(name + "/media/" + f), "media/" + f);
    EXPECT_TRUE(s.ok()) << name << ": " << s.status().ToString();
    if (s.ok()) shards.push_back(std::move(s).value());
  }
  return shards;
}

class GoodFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoodFixtureTest, IndexesWithoutProblemsAndBytesMatchSha256) {
  const std::string name = GetParam();
  std::vector<Shard> shards = IndexCase(name);
  ASSERT_FALSE(shards.empty());
  std::vector<const Shard*> ptrs;
  for (const Shard& s : shards) {
    EXPECT_TRUE(s.index.problems.empty()) << s.index.problems.front();
    ptrs.push_back(&s);
  }
  auto want = testing::ReadSha256List(Interop(name + "/sha256.txt"));
  ASSERT_FALSE(want.empty());
  auto got = MemberHashes(ptrs);
  for (const auto& [key, sha] : want) {
    auto it = got.find(key);
    ASSERT_NE(it, got.end()) << name << ": key missing from the index: " << key;
    EXPECT_EQ(it->second, sha) << name << ": " << key;
  }
  EXPECT_EQ(got.size(), want.size()) << name;
  if (name == "junk-prefix") {
    EXPECT_EQ(shards[0].index.archive_start, 304u);
  }
}

INSTANTIATE_TEST_SUITE_P(Interop, GoodFixtureTest,
                         ::testing::Values("multi-shard", "groups", "zip64-forced", "infozip-pipe",
                                           "stream-written", "junk-prefix"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

Shard IndexBad(const std::string& name, const std::string& file = "pack-0000.zip") {
  auto s = IndexFile(Interop("bad/" + name + "/media/" + file), "media/" + file);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : Shard{};
}

bool Has(const ShardIndex& idx, const std::string& name) {
  for (const auto& m : idx.members) {
    if (m.name == name) return true;
  }
  return false;
}

std::string AllProblems(const ShardIndex& idx) {
  std::string s;
  for (const auto& p : idx.problems) s += p + "\n";
  return s;
}

TEST(BadFixtureTest, DeflatedMemberIsRefusedNamingMethod) {
  Shard s = IndexBad("deflated");
  EXPECT_FALSE(Has(s.index, "a.txt"));
  ASSERT_EQ(s.index.problems.size(), 1u);
  const std::string& p = s.index.problems[0];
  EXPECT_NE(p.find("media/pack-0000.zip: member a.txt"), std::string::npos) << p;
  EXPECT_NE(p.find("method 8 (deflate)"), std::string::npos) << p;
}

TEST(BadFixtureTest, EncryptedFlagIsRefused) {
  Shard s = IndexBad("encrypted-flag");
  EXPECT_FALSE(Has(s.index, "a.bin"));
  EXPECT_NE(AllProblems(s.index).find("member a.bin is encrypted"), std::string::npos)
      << AllProblems(s.index);
}

TEST(BadFixtureTest, HostileNamesAreRefusedFineBinServed) {
  Shard s = IndexBad("hostile-names");
  ASSERT_TRUE(Has(s.index, "fine.bin"));
  for (const auto& m : s.index.members) {
    EXPECT_TRUE(ValidateKey(m.name).ok()) << m.name;
    ReadMember(*s.src, m);
  }
  EXPECT_GE(s.index.problems.size(), 2u) << AllProblems(s.index);
  for (const auto& p : s.index.problems) EXPECT_NE(p.find("unsafe name"), std::string::npos) << p;
  // Cross-check fine.bin's bytes against Python's view.
  testing::RunResult r = testing::Run(
      {"python3", "-c",
       "import sys,zipfile,hashlib;print(hashlib.sha256(zipfile.ZipFile(sys.argv[1]).read('fine.bin')).hexdigest())",
       Interop("bad/hostile-names/media/pack-0000.zip")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Shard* ptr = &s;
  EXPECT_EQ(MemberHashes({ptr})["fine.bin"], r.out.substr(0, 64));
}

TEST(BadFixtureTest, NulNameIsRefusedWithoutPrintingNul) {
  // The central directory's name is "a\0b.bin": refused, named with the NUL escaped, never exposed.
  Shard s = IndexBad("nul-name");
  EXPECT_EQ(s.index.members.size(), 0u);
  ASSERT_EQ(s.index.problems.size(), 1u);
  EXPECT_NE(s.index.problems[0].find("a\\x00b.bin"), std::string::npos) << s.index.problems[0];
  for (const auto& m : s.index.members) {
    EXPECT_EQ(m.name.find('\0'), std::string::npos);
    EXPECT_TRUE(ValidateKey(m.name).ok());
  }
  for (const auto& p : s.index.problems) EXPECT_EQ(p.find('\0'), std::string::npos);
  EXPECT_EQ(s.index.members.size() + s.index.problems.size(), s.index.cd_entries);
}

TEST(BadFixtureTest, OffsetOutsideIsRefusedClearly) {
  Shard s = IndexBad("offset-outside");
  EXPECT_FALSE(Has(s.index, "a.bin"));
  ASSERT_EQ(s.index.problems.size(), 1u);
  EXPECT_NE(s.index.problems[0].find("member a.bin has a local header offset"), std::string::npos)
      << s.index.problems[0];
}

TEST(BadFixtureTest, OverlapNeverServesTheNeighboursBytes) {
  Shard s = IndexBad("overlap");
  EXPECT_FALSE(Has(s.index, "a.bin"));
  EXPECT_NE(AllProblems(s.index).find("member a.bin overlaps"), std::string::npos)
      << AllProblems(s.index);
  if (Has(s.index, "b.bin")) {
    testing::RunResult r = testing::Run(
        {"python3", "-c",
         "import sys,zipfile,hashlib;print(hashlib.sha256(zipfile.ZipFile(sys.argv[1]).read('b.bin')).hexdigest())",
         Interop("bad/overlap/media/pack-0000.zip")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Shard* ptr = &s;
    EXPECT_EQ(MemberHashes({ptr})["b.bin"], r.out.substr(0, 64));
  }
}

TEST(BadFixtureTest, TruncatedFailsNamingShard) {
  auto src = FileShardSource::Open(Interop("bad/truncated/media/pack-0000.zip"), "media/pack-0000.zip");
  ASSERT_TRUE(src.ok());
  auto idx = ReadZipIndex(**src);
  ASSERT_FALSE(idx.ok());
  EXPECT_EQ(idx.status().code(), Code::kCorruption);
  EXPECT_NE(idx.status().message().find("media/pack-0000.zip"), std::string::npos);
  EXPECT_NE(idx.status().message().find("no end of central directory"), std::string::npos);
  EXPECT_FALSE(ZipFingerprint(**src).ok());
}

TEST(BadFixtureTest, DuplicateAcrossShardsIndexesPerShard) {
  Shard a = IndexBad("dup-across-shards", "pack-0000.zip");
  Shard b = IndexBad("dup-across-shards", "pack-0001.zip");
  EXPECT_TRUE(a.index.problems.empty());
  EXPECT_TRUE(b.index.problems.empty());
  EXPECT_TRUE(Has(a.index, "same.bin"));
  EXPECT_TRUE(Has(b.index, "same.bin"));
}

// --- archives made by real tools on the spot ------------------------------------------------

// Python's view of an archive: name -> "size crc sha256" for every non-directory member.
std::map<std::string, std::string> PythonView(const std::string& zip_path) {
  static const char* kScript = R"(
import sys, zipfile, hashlib
with zipfile.ZipFile(sys.argv[1]) as z:
    for i in z.infolist():
        if i.is_dir():
            continue
        h = hashlib.sha256()
        with z.open(i) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                h.update(b)
        print(i.filename.encode().hex(), i.file_size, i.CRC, h.hexdigest())
)";
  testing::RunResult r = testing::Run({"python3", "-c", kScript, zip_path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> out;
  std::istringstream lines(r.out);
  std::string hex, size, crc, sha;
  while (lines >> hex >> size >> crc >> sha) {
    std::string name;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) name.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    out[name] = size + " " + crc + " " + sha;
  }
  return out;
}

void ExpectMatchesPython(const std::string& zip_path, size_t expected_members) {
  auto s = IndexFile(zip_path, fs::path(zip_path).filename());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->index.problems.empty()) << AllProblems(s->index);
  auto py = PythonView(zip_path);
  ASSERT_EQ(py.size(), expected_members);
  const Shard* ptr = &s.value();
  auto hashes = MemberHashes({ptr});
  std::map<std::string, std::string> ours;
  for (const auto& m : s->index.members) {
    ours[m.name] = std::to_string(m.size) + " " + std::to_string(m.crc32) + " " + hashes[m.name];
  }
  EXPECT_EQ(ours, py);
}

void MakeTree(const TempDir& tmp) {
  testing::WriteFile(tmp / "src/a.txt", "hello\n");
  testing::WriteFile(tmp / "src/empty", "");
  testing::WriteFile(tmp / "src/sub/b.bin", testing::RandomBytes(70000, 5));
  testing::WriteFile(tmp / "src/sub/deeper/c.bin", testing::RandomBytes(1234, 6));
  ::chmod((tmp / "src/sub/b.bin").c_str(), 0755);
}

TEST(RealToolTest, PythonZipfileStoredAndForcedZip64) {
  TempDir tmp;
  MakeTree(tmp);
  static const char* kScript = R"(
import sys, os, zipfile
src, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, 'w', zipfile.ZIP_STORED) as z:
    for root, dirs, files in sorted(os.walk(src)):
        for f in sorted(files):
            p = os.path.join(root, f)
            rel = os.path.relpath(p, src)
            z.write(p, rel)
            with open(p, 'rb') as fh, z.open('z64/' + rel, 'w', force_zip64=True) as w:
                w.write(fh.read())
    z.mkdir('emptydir')
)";
  testing::RunResult r = testing::Run({"python3", "-c", kScript, tmp / "src", tmp / "py.zip"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectMatchesPython(tmp / "py.zip", 8);
  auto s = IndexFile(tmp / "py.zip", "py.zip");
  ASSERT_TRUE(s.ok());
  for (const auto& m : s->index.members) {
    if (m.name == "sub/b.bin") {
      EXPECT_EQ(m.mode, 0100755u);
    }
  }
}

TEST(RealToolTest, PythonZipfileToNonSeekableStream) {
  TempDir tmp;
  MakeTree(tmp);
  static const char* kScript = R"(
import sys, os, zipfile
src = sys.argv[1]
with zipfile.ZipFile(sys.stdout.buffer, mode="w", compression=zipfile.ZIP_STORED) as z:
    for root, dirs, files in sorted(os.walk(src)):
        for f in sorted(files):
            p = os.path.join(root, f)
            z.write(p, os.path.relpath(p, src))
)";
  testing::WriteFile(tmp / "stream.py", kScript);
  testing::RunResult r = testing::Sh("python3 '" + (tmp / "stream.py") + "' '" + (tmp / "src") +
                                     "' | cat > '" + (tmp / "stream.zip") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectMatchesPython(tmp / "stream.zip", 4);
}

TEST(RealToolTest, InfoZipStoredArchiveAndStreamMode) {
  if (!testing::HasCommand("zip")) GTEST_SKIP() << "Info-ZIP zip not installed";
  TempDir tmp;
  MakeTree(tmp);
  testing::RunResult r = testing::Sh("cd '" + (tmp / "src") + "' && zip -0 -q -r '" + (tmp / "iz.zip") + "' .");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectMatchesPython(tmp / "iz.zip", 4);
  // Info-ZIP writes directory entries and Unix extras; modes and UT mtimes come through.
  auto s = IndexFile(tmp / "iz.zip", "iz.zip");
  ASSERT_TRUE(s.ok());
  struct stat st;
  ASSERT_EQ(::stat((tmp / "src/sub/b.bin").c_str(), &st), 0);
  bool seen = false;
  for (const auto& m : s->index.members) {
    if (m.name != "sub/b.bin") continue;
    seen = true;
    EXPECT_EQ(m.mode, 0100755u);
    EXPECT_EQ(m.mtime, st.st_mtime);
  }
  EXPECT_TRUE(seen);

  // Stream mode: `zip -0 - file | cat` writes data descriptors and ZIP64 local extras.
  r = testing::Sh("cd '" + (tmp / "src") + "' && zip -0 -q - a.txt sub/b.bin | cat > '" + (tmp / "pipe.zip") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectMatchesPython(tmp / "pipe.zip", 2);
  // Reading stdin (a regular file; Info-ZIP refuses -0 on an input pipe): one member named "-".
  r = testing::Sh("zip -0 -q - - < '" + (tmp / "src/sub/b.bin") + "' | cat > '" + (tmp / "stdin.zip") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectMatchesPython(tmp / "stdin.zip", 1);
}

// A shard over 4 GiB: a sparse member of 4 GiB + 1 MiB written by Python with force_zip64
// through a writer that turns zero chunks into seeks, so no data is really written.
TEST(RealToolTest, ShardOver4GiBSparse) {
  TempDir tmp;
  struct statvfs vfs;
  if (::statvfs(tmp.path().c_str(), &vfs) != 0 ||
      static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < (2ull << 30)) {
    GTEST_SKIP() << "less than 2 GiB free under " << tmp.path();
  }
  const uint64_t big = (4ull << 30) + (1 << 20);
  testing::RunResult r = testing::Run({"truncate", "-s", std::to_string(big), tmp / "big.bin"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(::stat((tmp / "big.bin").c_str(), &st), 0);
  if (static_cast<uint64_t>(st.st_blocks) * 512 > (64u << 20)) GTEST_SKIP() << "no sparse files here";
  testing::WriteFile(tmp / "head.bin", "head\n");
  testing::WriteFile(tmp / "tail.bin", testing::RandomBytes(4096, 11));
  static const char* kScript = R"(
import io, os, sys, zipfile
d = sys.argv[1]
zero = bytes(1 << 22)
# zipfile hands the member's data through unchanged: runs of zeros become holes.
class Sparse(io.FileIO):
    def write(self, b):
        if len(b) == len(zero) and b == zero:
            self.seek(len(b), 1)
            return len(b)
        return super().write(b)
big = os.path.getsize(d + '/big.bin')
with Sparse(d + '/big.zip', 'w+') as f:
    with zipfile.ZipFile(f, 'w', zipfile.ZIP_STORED) as z:
        z.write(d + '/head.bin', 'head.bin')
        with z.open('big.bin', 'w', force_zip64=True) as w:
            for _ in range(big // len(zero)):
                w.write(zero)
            w.write(bytes(big % len(zero)))
        z.write(d + '/tail.bin', 'tail.bin')
)";
  r = testing::Run({"python3", "-c", kScript, tmp.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(::stat((tmp / "big.zip").c_str(), &st), 0);
  ASSERT_GT(static_cast<uint64_t>(st.st_size), big);
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, 64u << 20) << "the zip was not written sparse";

  auto s = IndexFile(tmp / "big.zip", "media/pack-0000.zip");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->index.problems.empty()) << AllProblems(s->index);
  ASSERT_EQ(s->index.members.size(), 3u);
  const ShardMember& bigm = s->index.members[1];
  EXPECT_EQ(bigm.name, "big.bin");
  EXPECT_EQ(bigm.size, big);
  const ShardMember& tail = s->index.members[2];
  EXPECT_EQ(tail.name, "tail.bin");
  EXPECT_GT(tail.local_header_offset, 4ull << 30);
  EXPECT_EQ(ReadMember(*s->src, tail), testing::RandomBytes(4096, 11));
  EXPECT_EQ(ReadMember(*s->src, s->index.members[0]), "head\n");
  std::string last(16, 'x');
  Status st2 = ReadExactly(*s->src, bigm.data_offset + bigm.size - 16,
                           std::span<uint8_t>(reinterpret_cast<uint8_t*>(last.data()), 16), "tail of big.bin");
  ASSERT_TRUE(st2.ok());
  EXPECT_EQ(last, std::string(16, '\0'));
}

}  // namespace
}  // namespace packfs
