// Unit tests of ZipLayout arithmetic and ZipWriter output over real temp files, checked with
// the project's zip reader and with Python's zipfile / Info-ZIP unzip.
#include "core/format/zip_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "core/base/crc32.h"
#include "core/base/shard_source.h"
#include "core/format/zip_format.h"
#include "core/format/zip_reader.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using ::packfs::testing::Run;
using ::packfs::testing::TempDir;

uint64_t FileSize(const std::string& p) {
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return static_cast<uint64_t>(st.st_size);
}

struct Member {
  std::string name;
  std::string data;
  int64_t mtime;
  uint32_t align;
};

// Writes `members` (streaming every second one in pieces) and returns the placements.
std::vector<ZipPlacement> WriteZip(const std::string& path, const std::vector<Member>& members,
                                   size_t buffer = 4 << 20, bool direct = true,
                                   bool* was_direct = nullptr) {
  auto w = ZipWriter::Create(path, path, buffer, direct);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (was_direct) *was_direct = (*w)->direct();
  std::vector<ZipPlacement> out;
  for (size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    ZipMemberSpec spec{m.name, m.data.size(), m.mtime, 0644, m.align};
    out.push_back((*w)->layout().Place(spec));
    std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(m.data.data()), m.data.size());
    if (i % 2 == 0) {
      EXPECT_TRUE((*w)->AddMember(spec, bytes, Crc32(0, bytes.data(), bytes.size())).ok());
    } else {
      EXPECT_TRUE((*w)->BeginMember(spec).ok());
      for (size_t off = 0; off < bytes.size(); off += 777) {
        EXPECT_TRUE((*w)->Append(bytes.subspan(off, std::min<size_t>(777, bytes.size() - off))).ok());
      }
      EXPECT_TRUE((*w)->EndMember().ok());
    }
  }
  uint64_t projected = (*w)->layout().FinishedSize();
  Status st = (*w)->Finish(false);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(FileSize(path), projected);
  return out;
}

TEST(ZipLayoutTest, ProjectionEqualsFileSizeForManyCombinations) {
  TempDir tmp;
  int n = 0;
  for (uint32_t align : {0u, 1u, 2u, 64u, 4096u, 65535u}) {
    for (size_t buffer : {size_t{4096}, size_t{1} << 22}) {
      std::vector<Member> ms;
      for (int i = 0; i < 12; ++i) {
        std::string name = "dir/" + std::string(static_cast<size_t>(i * 7 % 40 + 1), 'a' + i) +
                           (i % 3 == 0 ? "ü" : "");
        size_t size = i == 0 ? 0 : static_cast<size_t>(i * i * 997 % 20000);
        int64_t mtime = i % 4 == 0 ? -5 : (i % 4 == 1 ? 0x80000000LL : 1700000000 + i);
        ms.push_back({name, testing::RandomBytes(size, i), mtime, align});
      }
      std::string path = tmp / ("z" + std::to_string(n++) + ".zip");
      auto places = WriteZip(path, ms, buffer);
      auto src = FileShardSource::Open(path, path);
      ASSERT_TRUE(src.ok());
      auto idx = ReadZipIndex(**src);
      ASSERT_TRUE(idx.ok()) << idx.status().ToString();
      ASSERT_EQ(idx->members.size(), ms.size());
      EXPECT_TRUE(idx->problems.empty());
      for (size_t i = 0; i < ms.size(); ++i) {
        const ShardMember& zm = idx->members[i];
        EXPECT_EQ(zm.name, ms[i].name);
        EXPECT_EQ(zm.data_offset, places[i].data_offset);
        EXPECT_EQ(zm.local_header_offset, places[i].local_header_offset);
        EXPECT_EQ(zm.size, ms[i].data.size());
        EXPECT_EQ(zm.crc32, Crc32(0, ms[i].data.data(), ms[i].data.size()));
        EXPECT_EQ(zm.mode, 0100644u);
        if (align > 1) {
          EXPECT_EQ(zm.data_offset % align, 0u) << zm.name;
        }
      }
      auto py = ::packfs::testing::Run({"python3", "-c",
                     "import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); "
                     "assert z.testzip() is None; print(len(z.infolist()))",
                     path});
      EXPECT_EQ(py.exit_code, 0) << py.err;
      EXPECT_EQ(py.out, "12\n");
      auto uz = ::packfs::testing::Run({"unzip", "-tq", path});
      EXPECT_EQ(uz.exit_code, 0) << uz.out << uz.err;
    }
  }
}

TEST(ZipLayoutTest, Zip64FieldsSwitchAtTheBoundaries) {
  ZipLayout l;
  ZipMemberSpec small{"a", zip::k32Max - 1, 1700000000, 0644, 0};
  ZipMemberSpec big{"a", zip::k32Max, 1700000000, 0644, 0};
  ZipPlacement ps = l.Place(small), pb = l.Place(big);
  EXPECT_FALSE(ps.zip64_local);
  EXPECT_TRUE(pb.zip64_local);
  EXPECT_EQ(pb.local_extra_len, ps.local_extra_len + 20);
  EXPECT_EQ(pb.central_size, ps.central_size + 20);  // header + both sizes
  // A member whose local header starts at or past 0xFFFFFFFF needs the offset in the central
  // ZIP64 extra (8 bytes + 4 of header).
  ZipLayout far;
  far.Add({"x", zip::k32Max - 31, -1, 0644, 0});  // ends exactly at 0xFFFFFFFF
  EXPECT_EQ(far.offset(), zip::k32Max);
  ZipPlacement pf = far.Place({"a", 1, 1700000000, 0644, 0});
  EXPECT_EQ(pf.central_size, ps.central_size + 12);
  ZipLayout near;
  near.Add({"x", zip::k32Max - 32, -1, 0644, 0});
  EXPECT_EQ(near.Place({"a", 1, 1700000000, 0644, 0}).central_size, ps.central_size);
}

TEST(ZipLayoutTest, EndRecordsSwitchToZip64OnlyWhenNeeded) {
  const uint64_t plain = zip::kEocdSize, z64 = zip::kEocdSize + 56 + 20;
  EXPECT_EQ(ZipLayout::EndRecordsSize(0, 0, 0), plain);
  EXPECT_EQ(ZipLayout::EndRecordsSize(65534, 100, 100), plain);
  EXPECT_EQ(ZipLayout::EndRecordsSize(65535, 100, 100), z64);
  EXPECT_EQ(ZipLayout::EndRecordsSize(1, zip::k32Max - 1, 100), plain);
  EXPECT_EQ(ZipLayout::EndRecordsSize(1, zip::k32Max, 100), z64);
  EXPECT_EQ(ZipLayout::EndRecordsSize(1, 0, zip::k32Max), z64);
}

TEST(ZipLayoutTest, AlignmentPaddingMath) {
  for (uint32_t align : {2u, 8u, 64u, 512u, 4096u, 65535u}) {
    for (uint64_t start = 0; start < 9000; start += 37) {
      ZipLayout l;
      if (start > 0) l.Add({"p", start, -1, 0644, 0});
      for (size_t nlen : {size_t{1}, size_t{13}, size_t{200}}) {
        std::string name(nlen, 'n');
        ZipPlacement p = l.Place({name, 5, 1700000000, 0644, align});
        EXPECT_EQ(p.data_offset % align, 0u) << align << " " << start;
        EXPECT_TRUE(p.pad_len == 0 || p.pad_len >= 6);
        EXPECT_LT(p.pad_len, align + 6);
        EXPECT_EQ(p.data_offset, p.local_header_offset + 30 + nlen + p.local_extra_len);
      }
    }
  }
  ZipLayout l;
  EXPECT_EQ(l.Place({"abc", 5, 1700000000, 0644, 0}).pad_len, 0u);
}

TEST(ZipWriterTest, Zip64EndRecordsForManyEntriesReadBack) {
  TempDir tmp;
  std::string path = tmp / "many.zip";
  auto w = ZipWriter::Create(path, "many.zip");
  ASSERT_TRUE(w.ok());
  const int kCount = 65536 + 10;
  for (int i = 0; i < kCount; ++i) {
    std::string name = "m/" + std::to_string(i);
    ASSERT_TRUE((*w)->AddMember({name, 1, 1700000000, 0644, 0},
                                std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("x"), 1),
                                Crc32(0, "x", 1)).ok());
  }
  uint64_t projected = (*w)->layout().FinishedSize();
  ASSERT_TRUE((*w)->Finish(false).ok());
  EXPECT_EQ(FileSize(path), projected);
  auto src = FileShardSource::Open(path, path);
  ASSERT_TRUE(src.ok());
  auto idx = ReadZipIndex(**src);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  EXPECT_EQ(idx->members.size(), static_cast<size_t>(kCount));
  auto py = ::packfs::testing::Run({"python3", "-c",
                 "import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); print(len(z.infolist()))", path});
  EXPECT_EQ(py.out, std::to_string(kCount) + "\n") << py.err;
}

// Direct I/O (whole aligned blocks, CRCs of streamed members patched through the page cache,
// the last block's padding cut off) writes exactly the bytes the page-cache path writes, for
// every batch size against member sizes around the block size.
TEST(ZipWriterTest, DirectAndBufferedWritesGiveIdenticalFiles) {
  TempDir tmp;
  std::vector<Member> members;
  const size_t sizes[] = {0, 1, 4095, 4096, 4097, 5000, 70000, 300000, 12, 8191};
  for (size_t i = 0; i < std::size(sizes); ++i) {
    members.push_back({"d/" + std::to_string(i), testing::RandomBytes(sizes[i], 40 + i),
                       1700000000 + static_cast<int64_t>(i), i % 3 == 0 ? 4096u : 0u});
  }
  for (size_t buffer : {size_t{1}, size_t{4096}, size_t{10000}, size_t{65536}, size_t{4} << 20}) {
    const std::string a = tmp / ("direct-" + std::to_string(buffer) + ".zip");
    const std::string b = tmp / ("buffered-" + std::to_string(buffer) + ".zip");
    bool direct = false;
    WriteZip(a, members, buffer, true, &direct);
    WriteZip(b, members, buffer, false);
    EXPECT_TRUE(direct) << "this file system refused O_DIRECT: the direct path went untested";
    std::string da = testing::ReadFile(a), db = testing::ReadFile(b);
    EXPECT_EQ(da.size(), db.size()) << buffer;
    EXPECT_TRUE(da == db) << "files differ with a " << buffer << "-byte batch";
    auto r = ::packfs::testing::Run({"unzip", "-tqq", a});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
}

TEST(ZipWriterTest, RefusesWrongByteCounts) {
  TempDir tmp;
  auto w = ZipWriter::Create(tmp / "a.zip", "a.zip");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->BeginMember({"k", 4, 0, 0644, 0}).ok());
  const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_FALSE((*w)->Append(std::span<const uint8_t>(data, 5)).ok());
  ASSERT_TRUE((*w)->Append(std::span<const uint8_t>(data, 3)).ok());
  Status st = (*w)->EndMember();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("k"), std::string::npos);
  EXPECT_FALSE((*w)->AddMember({"j", 4, 0, 0644, 0}, std::span<const uint8_t>(data, 3), 0).ok());
  // Never overwrites.
  EXPECT_FALSE(ZipWriter::Create(tmp / "a.zip", "a.zip").ok());
}

TEST(ZipWriterTest, DosTimeIsUtcAndClamped) {
  EXPECT_EQ(DosDateTimeUtc(0), 0x00210000u);           // clamped to 1980-01-01
  EXPECT_EQ(DosDateTimeUtc(315532800), 0x00210000u);   // 1980-01-01 00:00:00
  // 2024-02-29 13:45:58 UTC
  uint32_t v = DosDateTimeUtc(1709214358);
  EXPECT_EQ(v >> 25, 44u);
  EXPECT_EQ((v >> 21) & 15, 2u);
  EXPECT_EQ((v >> 16) & 31, 29u);
  EXPECT_EQ((v >> 11) & 31, 13u);
  EXPECT_EQ((v >> 5) & 63, 45u);
  EXPECT_EQ((v & 31) * 2, 58u);
}

}  // namespace
}  // namespace packfs
