// Tests of the tar reader over tars written by real GNU tar (gnu, posix, ustar) and Python's
// tarfile: every member's bytes equal what `tar -xf` extracts; hard links, symlinks, empty files,
// long names, truncated and damaged tars, sparse members, and a member over 8 GiB.
#include "core/format/tar_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "core/format/tar_format.h"
#include "tests/support/tar_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

TarIndex IndexOk(const std::string& path) {
  auto src = FileShardSource::Open(path, path);
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  auto index = ReadTarIndex(**src);
  EXPECT_TRUE(index.ok()) << index.status().ToString();
  return index.ok() ? std::move(index).value() : TarIndex{};
}

std::string MemberBytes(const std::string& tar, const TarMember& m) {
  std::ifstream f(tar, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(m.data_offset));
  std::string s(m.size, '\0');
  f.read(s.data(), static_cast<std::streamsize>(s.size()));
  EXPECT_EQ(static_cast<uint64_t>(f.gcount()), m.size) << m.name;
  return s;
}

// key -> sha256 of the bytes the index maps each member to.
std::map<std::string, std::string> IndexedSha256(const std::string& tar, const TarIndex& index) {
  testing::TempDir tmp;
  std::map<std::string, std::string> out;
  for (const TarMember& m : index.members) {
    testing::WriteFile(tmp / "m", MemberBytes(tar, m));
    out[m.name] = testing::Sha256File(tmp / "m");
  }
  return out;
}

class TarFormats : public ::testing::TestWithParam<std::string> {};

TEST_P(TarFormats, MembersEqualTarExtraction) {
  const std::string how = GetParam();
  testing::TempDir tmp;
  testing::MakeTarSourceTree(tmp / "tree", how != "ustar");
  testing::MakeTar(tmp / "tree", tmp / "a.tar", how);
  TarIndex index = IndexOk(tmp / "a.tar");
  EXPECT_TRUE(index.problems.empty()) << index.problems[0];
  EXPECT_FALSE(index.truncated_at.has_value());
  EXPECT_EQ(index.skipped_symlinks, 1u);
  EXPECT_EQ(index.hard_links, 1u);
  EXPECT_NE(index.fingerprint, 0u);
  auto want = testing::ExtractedSha256(tmp / "a.tar", tmp / "x");
  auto got = IndexedSha256(tmp / "a.tar", index);
  EXPECT_EQ(got, want);
  EXPECT_EQ(want.size(), how == "ustar" ? 10u : 11u);
  bool saw_empty = false;
  for (const TarMember& m : index.members) {
    EXPECT_TRUE(S_ISREG(m.mode)) << m.name;
    if (how == "python") {
      EXPECT_EQ(m.mtime, 1700000000) << m.name;
    }
    if (m.name == "empty.txt") {
      saw_empty = true;
      EXPECT_EQ(m.size, 0u);
    }
    // The per-member check accepts every indexed member as it is.
    auto src = FileShardSource::Open(tmp / "a.tar", "a.tar");
    ASSERT_TRUE(src.ok());
    Status st = CheckTarMember(**src, m.header_offset, m.name, m.data_offset, m.size);
    EXPECT_TRUE(st.ok()) << m.name << ": " << st.ToString();
    // ... and refuses it under another name or at another offset.
    EXPECT_FALSE(CheckTarMember(**src, m.header_offset, m.name + "x", m.data_offset, m.size).ok());
    if (!m.hard_link) {
      EXPECT_FALSE(
          CheckTarMember(**src, m.header_offset, m.name, m.data_offset + 512, m.size).ok());
    }
  }
  EXPECT_TRUE(saw_empty);
}

INSTANTIATE_TEST_SUITE_P(Writers, TarFormats,
                         ::testing::Values("gnu", "posix", "ustar", "python"));

TEST(TarReader, WindowSizeDoesNotChangeTheResult) {
  testing::TempDir tmp;
  testing::MakeTarSourceTree(tmp / "tree", true);
  testing::MakeTar(tmp / "tree", tmp / "a.tar", "posix");
  auto src = FileShardSource::Open(tmp / "a.tar", "a.tar");
  ASSERT_TRUE(src.ok());
  auto a = ReadTarIndex(**src, TarIndexOptions{0});
  auto b = ReadTarIndex(**src, TarIndexOptions{1 << 20});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->members.size(), b->members.size());
  for (size_t i = 0; i < a->members.size(); ++i) {
    EXPECT_EQ(a->members[i].name, b->members[i].name);
    EXPECT_EQ(a->members[i].data_offset, b->members[i].data_offset);
  }
  EXPECT_EQ(a->fingerprint, b->fingerprint);
}

TEST(TarReader, TruncatedTarServesTheMembersBeforeTheCut) {
  testing::TempDir tmp;
  testing::MakeTarSourceTree(tmp / "tree", true);
  testing::MakeTar(tmp / "tree", tmp / "a.tar", "gnu");
  TarIndex full = IndexOk(tmp / "a.tar");
  ASSERT_GE(full.members.size(), 6u);
  // Cut in the middle of the data of a member past the fourth.
  size_t k = 4;
  while (k < full.members.size() && (full.members[k].size < 2 || full.members[k].hard_link)) ++k;
  ASSERT_LT(k, full.members.size());
  const TarMember& cut_in = full.members[k];
  const uint64_t cut = cut_in.data_offset + cut_in.size / 2;
  ASSERT_EQ(::truncate((tmp / "a.tar").c_str(), static_cast<off_t>(cut)), 0);
  TarIndex part = IndexOk(tmp / "a.tar");
  ASSERT_TRUE(part.truncated_at.has_value());
  EXPECT_LE(*part.truncated_at, cut_in.data_offset);
  ASSERT_EQ(part.problems.size(), 1u);
  EXPECT_NE(part.problems[0].find("truncated"), std::string::npos) << part.problems[0];
  EXPECT_NE(part.problems[0].find(tmp / "a.tar"), std::string::npos) << part.problems[0];
  ASSERT_EQ(part.members.size(), k);
  for (size_t i = 0; i < k; ++i) {
    EXPECT_EQ(part.members[i].name, full.members[i].name);
    EXPECT_EQ(MemberBytes(tmp / "a.tar", part.members[i]),
              MemberBytes(tmp / "a.tar", full.members[i]));
  }
  // Cut inside a header block: same verdict.
  ASSERT_EQ(::truncate((tmp / "a.tar").c_str(), static_cast<off_t>(cut_in.data_offset - 100)), 0);
  part = IndexOk(tmp / "a.tar");
  EXPECT_EQ(part.members.size(), k);
  EXPECT_TRUE(part.truncated_at.has_value());
}

TEST(TarReader, DamagedHeaderEndsTheWalkWithAProblem) {
  testing::TempDir tmp;
  testing::MakeTarSourceTree(tmp / "tree", false);
  testing::MakeTar(tmp / "tree", tmp / "a.tar", "ustar");
  TarIndex full = IndexOk(tmp / "a.tar");
  ASSERT_GE(full.members.size(), 4u);
  const uint64_t hdr = full.members[3].header_offset;
  {
    std::fstream f(tmp / "a.tar", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(hdr + 10));
    f.put('\x7f');
  }
  TarIndex part = IndexOk(tmp / "a.tar");
  EXPECT_EQ(part.members.size(), 3u);
  ASSERT_EQ(part.truncated_at, hdr);
  ASSERT_FALSE(part.problems.empty());
  EXPECT_NE(part.problems[0].find("checksum"), std::string::npos) << part.problems[0];
}

TEST(TarReader, NotATarFailsTheShard) {
  testing::TempDir tmp;
  testing::WriteFile(tmp / "junk.tar", testing::RandomBytes(4096, 5));
  auto src = FileShardSource::Open(tmp / "junk.tar", "junk.tar");
  ASSERT_TRUE(src.ok());
  auto index = ReadTarIndex(**src);
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find("junk.tar"), std::string::npos);
  testing::WriteFile(tmp / "empty.tar", "");
  auto empty_src = FileShardSource::Open(tmp / "empty.tar", "empty.tar");
  ASSERT_TRUE(empty_src.ok());
  EXPECT_FALSE(ReadTarIndex(**empty_src).ok());
}

TEST(TarReader, SparseMembersAreRefusedByName) {
  testing::TempDir tmp;
  ::mkdir((tmp / "tree").c_str(), 0755);
  testing::WriteFile(tmp / "tree/plain.txt", "plain");
  ASSERT_EQ(testing::Sh("truncate -s 4M '" + tmp / "tree/holes.bin" +
                        "' && printf end >> '" + tmp / "tree/holes.bin" + "'").exit_code, 0);
  for (const std::string fmt : {"gnu", "posix"}) {
    auto r = testing::Run({"tar", "--format=" + fmt, "--sparse", "-cf", tmp / (fmt + ".tar"), "-C",
                           tmp / "tree", "."});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    TarIndex index = IndexOk(tmp / (fmt + ".tar"));
    ASSERT_EQ(index.members.size(), 1u) << fmt;
    EXPECT_EQ(index.members[0].name, "plain.txt");
    ASSERT_EQ(index.problems.size(), 1u) << fmt;
    EXPECT_NE(index.problems[0].find("holes.bin"), std::string::npos) << index.problems[0];
    EXPECT_NE(index.problems[0].find("sparse"), std::string::npos) << index.problems[0];
  }
}

TEST(TarReader, DevicesAndFifosAreSkippedAndCounted) {
  testing::TempDir tmp;
  ::mkdir((tmp / "tree").c_str(), 0755);
  testing::WriteFile(tmp / "tree/a.txt", "a");
  ASSERT_EQ(::mkfifo((tmp / "tree/fifo").c_str(), 0644), 0);
  auto r = testing::Run({"tar", "-cf", tmp / "a.tar", "-C", tmp / "tree", "."});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TarIndex index = IndexOk(tmp / "a.tar");
  EXPECT_EQ(index.members.size(), 1u);
  EXPECT_EQ(index.skipped_special, 1u);
  EXPECT_GE(index.skipped_dirs, 1u);
}

TEST(TarReader, NormalizeTarName) {
  EXPECT_EQ(NormalizeTarName("./a/b.jpg"), "a/b.jpg");
  EXPECT_EQ(NormalizeTarName("/././a"), "a");
  EXPECT_EQ(NormalizeTarName("dir/"), "dir");
  EXPECT_EQ(NormalizeTarName("./"), "");
  EXPECT_TRUE(IsTarShardName("shard-000.tar"));
  EXPECT_FALSE(IsTarShardName(".tmp.tar"));
  EXPECT_FALSE(IsTarShardName("pack-0000.zip"));
}

// A member over 8 GiB: its size is stored in base-256 (GNU format). Python's tarfile writes the
// headers and the archive is laid out sparse around them, so it takes little disk and no 8 GiB
// pass through a tool (GNU tar archiving a sparse source reads every byte: half a minute of
// kernel time); GNU tar then lists it and extracts the member after the big one, as the oracle.
TEST(TarReader, MemberOver8GiBHasABase256Size) {
  testing::TempDir tmp;
  const uint64_t big = (uint64_t{8} << 30) + 4096 + 3;
  static const char* kScript = R"(
import sys, tarfile
p, big = sys.argv[1], int(sys.argv[2])
def header(name, size):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = size, 1700000000, 0o644
    return ti.tobuf(tarfile.GNU_FORMAT)
with open(p, 'wb') as f:
    f.write(header('big.bin', big))
    f.write(b'HEAD')
    f.seek(512 + big - 4)
    f.write(b'TAIL')
    f.seek(512 + (big + 511) // 512 * 512)
    data = b'after the big one'
    f.write(header('z-after.txt', len(data)) + data.ljust(512, b'\0') + bytes(1024))
)";
  auto r = testing::Run({"python3", "-c", kScript, tmp / "big.tar", std::to_string(big)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = testing::Run({"tar", "-tvf", tmp / "big.tar"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" " + std::to_string(big) + " "), std::string::npos) << r.out;
  r = testing::Run({"tar", "-xOf", tmp / "big.tar", "z-after.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "after the big one");
  TarIndex index = IndexOk(tmp / "big.tar");
  ASSERT_EQ(index.members.size(), 2u);
  EXPECT_TRUE(index.problems.empty());
  const TarMember& m = index.members[0];
  EXPECT_EQ(m.name, "big.bin");
  EXPECT_EQ(m.size, big);
  std::ifstream f(tmp / "big.tar", std::ios::binary);
  char head[4], tail[4];
  f.seekg(static_cast<std::streamoff>(m.data_offset));
  f.read(head, 4);
  f.seekg(static_cast<std::streamoff>(m.data_offset + big - 4));
  f.read(tail, 4);
  EXPECT_EQ(std::string(head, 4), "HEAD");
  EXPECT_EQ(std::string(tail, 4), "TAIL");
  EXPECT_EQ(index.members[1].name, "z-after.txt");
  EXPECT_EQ(MemberBytes(tmp / "big.tar", index.members[1]), "after the big one");
  // The header really uses base-256 (high bit of the size field's first byte).
  uint8_t hdr[512];
  f.seekg(static_cast<std::streamoff>(m.header_offset));
  f.read(reinterpret_cast<char*>(hdr), 512);
  EXPECT_EQ(hdr[tar::kSizeOff] & 0x80, 0x80);
}

}  // namespace
}  // namespace packfs
