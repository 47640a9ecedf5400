// Unit tests for ReadZipIndex, ReadLocalHeader and ZipFingerprint over hand-built zips in memory.
#include "core/format/zip_reader.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <atomic>

#include "core/base/crc32.h"
#include "core/format/zip_format.h"
#include "tests/support/test_util.h"
#include "tests/support/zip_builder.h"

namespace packfs {
namespace {

using testing::BuildZip;
using testing::BuiltZip;
using testing::ZipBuilderEntry;
using testing::ZipBuilderOptions;

constexpr const char* kShard = "media/pack-0000.zip";

ZipBuilderEntry E(std::string name, std::string data) {
  ZipBuilderEntry e;
  e.name = std::move(name);
  e.data = std::move(data);
  return e;
}

std::unique_ptr<MemoryShardSource> Source(const BuiltZip& z) {
  return std::make_unique<MemoryShardSource>(kShard, z.bytes);
}

std::string Bytes(const ShardSource& src, const ShardMember& m) {
  std::string s(m.size, '\0');
  auto n = src.ReadAt(m.data_offset, std::span<uint8_t>(reinterpret_cast<uint8_t*>(s.data()), s.size()));
  EXPECT_TRUE(n.ok());
  if (n.ok()) s.resize(*n);
  return s;
}

const ShardMember* Find(const ShardIndex& idx, std::string_view name) {
  for (const auto& m : idx.members) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// Indexes `entries`, expects no problems, and checks every member's bytes, size and CRC.
ShardIndex ExpectClean(const std::vector<ZipBuilderEntry>& entries,
                       const ZipBuilderOptions& opt = {}) {
  BuiltZip z = BuildZip(entries, opt);
  auto src = Source(z);
  auto idx = ReadZipIndex(*src);
  EXPECT_TRUE(idx.ok()) << idx.status().ToString();
  if (!idx.ok()) return {};
  EXPECT_TRUE(idx->problems.empty()) << idx->problems.front();
  for (const auto& e : entries) {
    if (!e.name.empty() && e.name.back() == '/') continue;
    const ShardMember* m = Find(*idx, e.name);
    EXPECT_NE(m, nullptr) << e.name;
    if (!m) continue;
    EXPECT_EQ(m->size, e.data.size());
    EXPECT_EQ(m->crc32, Crc32(0, e.data.data(), e.data.size()));
    EXPECT_EQ(Bytes(*src, *m), e.data) << e.name;
  }
  return std::move(idx).value();
}

// Indexes and expects exactly one problem, mentioning every string in `needles`.
ShardIndex ExpectOneProblem(const std::vector<ZipBuilderEntry>& entries,
                          const std::vector<std::string>& needles, const ZipBuilderOptions& opt = {}) {
  BuiltZip z = BuildZip(entries, opt);
  auto src = Source(z);
  auto idx = ReadZipIndex(*src);
  EXPECT_TRUE(idx.ok()) << idx.status().ToString();
  if (!idx.ok()) return {};
  EXPECT_EQ(idx->problems.size(), 1u);
  for (const auto& p : idx->problems) {
    EXPECT_NE(p.find(kShard), std::string::npos) << p;
    for (const auto& n : needles) EXPECT_NE(p.find(n), std::string::npos) << "'" << n << "' not in: " << p;
  }
  for (const auto& m : idx->members) {
    for (const auto& e : entries) {
      if (e.name == m.name) {
        EXPECT_EQ(Bytes(*src, m), e.data) << m.name;
      }
    }
  }
  return std::move(idx).value();
}

Status ExpectShardError(const BuiltZip& z) {
  auto src = Source(z);
  auto idx = ReadZipIndex(*src);
  EXPECT_FALSE(idx.ok());
  if (idx.ok()) return Status::OK();
  EXPECT_EQ(idx.status().code(), Code::kCorruption);
  EXPECT_NE(idx.status().message().find(kShard), std::string::npos) << idx.status().message();
  return idx.status();
}

TEST(ZipReaderTest, PlainArchive) {
  ShardIndex idx = ExpectClean({E("a.txt", "hello"), E("dir/b.bin", testing::RandomBytes(5000, 1)),
                              E("empty", "")});
  ASSERT_EQ(idx.members.size(), 3u);
  EXPECT_EQ(idx.members[0].name, "a.txt");  // central-directory order
  EXPECT_EQ(idx.members[2].name, "empty");
  EXPECT_EQ(idx.archive_start, 0u);
  EXPECT_EQ(idx.cd_entries, 3u);
  EXPECT_EQ(idx.members[0].mode, 0100644u);
  EXPECT_EQ(idx.members[0].mtime, 1735732800);  // 2025-01-01 12:00:00 UTC from DOS time
  EXPECT_EQ(idx.members[0].local_header_offset, 0u);
  EXPECT_EQ(idx.members[0].data_offset, 30u + 5u);
}

TEST(ZipReaderTest, EmptyArchive) {
  BuiltZip z = BuildZip({});
  auto src = Source(z);
  auto idx = ReadZipIndex(*src);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  EXPECT_TRUE(idx->members.empty());
  EXPECT_EQ(idx->cd_size, 0u);
}

TEST(ZipReaderTest, Zip64EndRecordsAndExtras) {
  auto a = E("a.bin", testing::RandomBytes(1000, 2));
  a.zip64_central = true;
  a.zip64_local = true;
  auto b = E("b.bin", "bee");
  b.zip64_central = true;
  auto c = E("c.bin", "sea");
  c.zip64_local = true;
  ZipBuilderOptions opt;
  opt.zip64_end = true;
  ShardIndex idx = ExpectClean({a, b, c}, opt);
  EXPECT_EQ(idx.members.size(), 3u);
  EXPECT_EQ(idx.cd_entries, 3u);
}

TEST(ZipReaderTest, Zip64EndRecordWithExtensibleData) {
  // The record is longer than 56 bytes, so it is found where the locator says, not right before it.
  ZipBuilderOptions opt;
  opt.zip64_end = true;
  opt.zip64_extensible_data = std::string("\x01\x00\x04\x00" "abcd", 8);
  ShardIndex idx = ExpectClean({E("a.bin", "alpha"), E("b.bin", "beta")}, opt);
  EXPECT_EQ(idx.cd_entries, 2u);
}

TEST(ZipReaderTest, Zip64ExtraHoldsOnlyMaskedFields) {
  // Only the offset is masked: the ZIP64 extra holds just the 8-byte offset.
  auto a = E("a.bin", "first");
  auto b = E("b.bin", "second");
  std::string body(8, '\0');
  body[0] = static_cast<char>(35 + 5 /* a's header + data */);
  b.central_offset = 0xFFFFFFFFu;
  b.central_extra = std::string("\x01\x00\x08\x00", 4) + body;
  ExpectClean({a, b});
}

TEST(ZipReaderTest, DataDescriptors) {
  auto a = E("a.bin", testing::RandomBytes(777, 3));
  a.data_descriptor = true;
  auto b = E("b.bin", "no signature descriptor");
  b.data_descriptor = true;
  b.descriptor_signature = false;
  auto c = E("c.bin", "zip64 descriptor");
  c.data_descriptor = true;
  c.zip64_local = true;
  c.zip64_central = true;
  ExpectClean({a, b, c, E("d.bin", "plain")});
}

TEST(ZipReaderTest, JunkPrefix) {
  ZipBuilderOptions opt;
  opt.junk_prefix = std::string(304, 'J');
  ShardIndex idx = ExpectClean({E("a.bin", "alpha"), E("b.bin", "beta")}, opt);
  EXPECT_EQ(idx.archive_start, 304u);
  EXPECT_EQ(idx.members[0].local_header_offset, 304u);
}

TEST(ZipReaderTest, JunkPrefixWithZip64) {
  ZipBuilderOptions opt;
  opt.junk_prefix = "#!/bin/sh\nexit 0\n";
  opt.zip64_end = true;
  auto a = E("a.bin", "alpha");
  a.zip64_central = true;
  ShardIndex idx = ExpectClean({a, E("b.bin", "beta")}, opt);
  EXPECT_EQ(idx.archive_start, opt.junk_prefix.size());
}

TEST(ZipReaderTest, CommentWithFakeEndRecordIsSkipped) {
  // The fake record's comment length reaches the end of the file exactly, but the directory it
  // points to has no central signature: the reader must keep scanning back to the real one.
  ZipBuilderOptions opt;
  opt.comment = "note " + testing::FakeEocd(1, 46, 0, 0);
  ExpectClean({E("a.bin", "alpha")}, opt);
  // A fake whose comment length does not reach the end is skipped too.
  opt.comment = testing::FakeEocd(7, 100, 3, 99) + "tail";
  ExpectClean({E("a.bin", "alpha")}, opt);
  // The longest comment there can be.
  opt.comment = std::string(0xFFFF, 'c');
  ExpectClean({E("a.bin", "alpha")}, opt);
}

TEST(ZipReaderTest, SeventyThousandEntries) {
  std::vector<ZipBuilderEntry> entries;
  for (int i = 0; i < 70000; ++i) entries.push_back(E("d" + std::to_string(i % 100) + "/f" + std::to_string(i), std::to_string(i)));
  ZipBuilderOptions opt;
  opt.zip64_end = true;
  BuiltZip z = BuildZip(entries, opt);
  auto src = Source(z);
  auto idx = ReadZipIndex(*src);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  EXPECT_TRUE(idx->problems.empty());
  ASSERT_EQ(idx->members.size(), 70000u);
  EXPECT_EQ(idx->cd_entries, 70000u);
  for (size_t i = 0; i < entries.size(); i += 997) {
    EXPECT_EQ(idx->members[i].name, entries[i].name);
    EXPECT_EQ(Bytes(*src, idx->members[i]), entries[i].data);
  }
}

TEST(ZipReaderTest, WrappedSixteenBitEntryCountIsAccepted) {
  std::vector<ZipBuilderEntry> entries;
  for (int i = 0; i < 65536 + 10; ++i) entries.push_back(E("f" + std::to_string(i), ""));
  ZipBuilderOptions opt;
  opt.wrap_entry_count = true;  // the end record says 10
  BuiltZip z = BuildZip(entries, opt);
  auto src = Source(z);
  auto idx = ReadZipIndex(*src);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  EXPECT_EQ(idx->members.size(), entries.size());
  EXPECT_EQ(idx->cd_entries, entries.size());
  // A small archive whose count is simply wrong still fails.
  opt.declared_entries = 65536 + 11;
  ExpectShardError(BuildZip(entries, opt));
}

TEST(ZipReaderTest, DirectoryEntriesAreIgnored) {
  auto d = E("dir/", "");
  d.external_attr = 040755u << 16;
  ShardIndex idx = ExpectClean({d, E("dir/a.bin", "x"), E("dir/sub/", "")});
  ASSERT_EQ(idx.members.size(), 1u);
  EXPECT_EQ(idx.members[0].name, "dir/a.bin");
  EXPECT_EQ(idx.cd_entries, 3u);
}

TEST(ZipReaderTest, UnixModesAndTimestamps) {
  auto exe = E("run.sh", "#!/bin/sh\n");
  exe.external_attr = 0100755u << 16;
  auto dos = E("dos.txt", "dos");
  dos.version_made_by = 0x0014;  // FAT
  dos.external_attr = 0x20;
  auto notype = E("notype.bin", "n");
  notype.external_attr = 0644u << 16;  // permission bits without a file type
  auto ut = E("ut.bin", "u");
  ut.ut_mtime = 1700000000;
  ShardIndex idx = ExpectClean({exe, dos, notype, ut});
  EXPECT_EQ(Find(idx, "run.sh")->mode, 0100755u);
  EXPECT_EQ(Find(idx, "dos.txt")->mode, 0u);
  EXPECT_EQ(Find(idx, "notype.bin")->mode, 0u);
  EXPECT_EQ(Find(idx, "ut.bin")->mtime, 1700000000);
  EXPECT_EQ(Find(idx, "dos.txt")->mtime, 1735732800);
}

TEST(ZipReaderTest, LocalExtraLongerThanCentralExtra) {
  auto a = E("a.bin", "aligned data");
  // Alignment padding record (zipalign) of 600 bytes: longer than the first local-header read.
  a.local_extra = std::string("\x35\xD9\x58\x02", 4) + std::string(600, '\0');
  auto b = E("b.bin", "short pad");
  b.local_extra = std::string("\x35\xD9\x02\x00\x04\x00", 6);
  ShardIndex idx = ExpectClean({a, b});
  EXPECT_EQ(idx.members[0].data_offset, 30u + 5u + 604u);
}

TEST(ZipReaderTest, GapsBetweenMembersAreAcceptedWhenTheCrcMatches) {
  auto a = E("a.bin", "alpha");
  a.gap_after = "unreferenced";
  auto b = E("b.bin", "bravo");
  b.data_descriptor = true;
  b.gap_after = "more gap";
  ExpectClean({a, b, E("c.bin", "charlie")});
}

TEST(ZipReaderTest, ShiftedDataOffsetBeforeAGapIsCaughtByCrc) {
  auto a = E("a.bin", "alpha");
  a.local_extra = std::string("\x35\xD9\x04\x00\x04\x00\x00\x00", 8);
  a.gap_after = "gap";
  BuiltZip z = BuildZip({a, E("b.bin", "bravo")});
  z.bytes[28] = 0;  // local extra length 8 -> 0: the data offset moves 8 bytes earlier
  auto src = Source(z);
  auto idx = ReadZipIndex(*src);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  ASSERT_EQ(idx->problems.size(), 1u);
  EXPECT_NE(idx->problems[0].find("CRC-32"), std::string::npos) << idx->problems[0];
  ASSERT_EQ(idx->members.size(), 1u);
  EXPECT_EQ(idx->members[0].name, "b.bin");
}

TEST(ZipReaderTest, CompressedMembersAreRefusedByMethodName) {
  const std::vector<std::pair<uint16_t, std::string>> methods = {
      {8, "deflate"}, {12, "bzip2"}, {14, "lzma"}, {93, "zstd"}, {95, "xz"}};
  for (const auto& [method, name] : methods) {
    auto a = E("a.txt", "squeezed");
    a.method = method;
    ShardIndex idx = ExpectOneProblem({a, E("b.txt", "fine")},
                                    {"member a.txt", "method " + std::to_string(method), name,
                                     "mkpack pack"});
    ASSERT_EQ(idx.members.size(), 1u);
    EXPECT_EQ(idx.members[0].name, "b.txt");
  }
}

TEST(ZipReaderTest, EncryptedMembersAreRefused) {
  for (uint16_t flag : {uint16_t{0x1}, uint16_t{0x41}}) {
    auto a = E("a.bin", "secret");
    a.flags = flag;
    ShardIndex idx = ExpectOneProblem({a, E("b.bin", "open")}, {"member a.bin", "encrypted"});
    EXPECT_EQ(idx.members.size(), 1u);
  }
}

TEST(ZipReaderTest, StoredSizeMismatchIsRefused) {
  auto a = E("a.bin", "12345");
  a.central_csize = 4;
  ExpectOneProblem({a, E("b.bin", "ok")}, {"member a.bin", "compressed size"});
}

TEST(ZipReaderTest, LocalCentralDisagreementIsRefused) {
  auto name = E("a.bin", "data");
  name.local_name = "x.bin";
  ExpectOneProblem({name, E("b.bin", "ok")}, {"member a.bin", "x.bin", "disagree"});
  auto method = E("a.bin", "data");
  method.local_method = 8;
  ExpectOneProblem({method, E("b.bin", "ok")}, {"member a.bin", "local method 8"});
  auto size = E("a.bin", "data");
  size.central_size = 3;
  size.central_csize = 3;
  ExpectOneProblem({size, E("b.bin", "ok")}, {"member a.bin", "disagree"});
  auto crc = E("a.bin", "data");
  crc.central_crc = 1234;
  ExpectOneProblem({crc, E("b.bin", "ok")}, {"member a.bin", "disagree"});
}

TEST(ZipReaderTest, DataDescriptorSizeMustMatchDescriptor) {
  // With a data descriptor the local header holds zeros; a central size that is too small would
  // silently serve a prefix, so the descriptor after the data is checked.
  auto a = E("a.bin", "0123456789");
  a.data_descriptor = true;
  a.central_size = 5;
  a.central_csize = 5;
  ExpectOneProblem({a, E("b.bin", "ok")}, {"member a.bin", "data descriptor"});
}

TEST(ZipReaderTest, DataPastCentralDirectoryIsRefused) {
  auto a = E("a.bin", "data");
  a.data_descriptor = true;  // local sizes zero, so only the central size claims the extent
  a.central_size = 5000;
  a.central_csize = 5000;
  ExpectOneProblem({E("b.bin", "ok"), a}, {"member a.bin", "central directory"});
}

TEST(ZipReaderTest, OverlappingMembersAreRefused) {
  auto a = E("a.bin", "AAAA");
  a.data_descriptor = true;
  a.descriptor_signature = false;
  a.central_size = 4 + 12 + 10;  // reaches into b.bin's local header
  a.central_csize = a.central_size;
  ShardIndex idx = ExpectOneProblem({a, E("b.bin", "BBBBBBBBBB")}, {"member a.bin", "overlap"});
  ASSERT_EQ(idx.members.size(), 1u);
  EXPECT_EQ(idx.members[0].name, "b.bin");
}

TEST(ZipReaderTest, LocalOffsetOutsideArchiveIsRefused) {
  BuiltZip probe = BuildZip({E("a.bin", "data"), E("b.bin", "ok")});
  auto into_cd = E("a.bin", "data");
  into_cd.central_offset = probe.cd_offset + 2;
  ExpectOneProblem({into_cd, E("b.bin", "ok")}, {"member a.bin", "local header offset"});
  auto past_end = E("a.bin", "data");
  past_end.central_offset = 1u << 30;
  ExpectOneProblem({past_end, E("b.bin", "ok")}, {"member a.bin", "local header offset"});
}

TEST(ZipReaderTest, UnsafeNamesAreRefusedAndQuoted) {
  const std::vector<std::string> bad = {"../escape", "/etc/passwd", "a\\b", std::string("nu\0l", 4),
                                        "bad\xff utf8", "a/../b", "./x", "a//b", "ctl\x01/../x"};
  for (const std::string& name : bad) {
    ShardIndex idx = ExpectOneProblem({E(name, "evil"), E("fine.bin", "fine")}, {"unsafe name"});
    ASSERT_EQ(idx.members.size(), 1u);
    EXPECT_EQ(idx.members[0].name, "fine.bin");
    ASSERT_EQ(idx.problems.size(), 1u);
    for (char c : idx.problems[0]) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << "control byte in: " << idx.problems[0];
    }
  }
}

TEST(ZipReaderTest, NoEndRecordFailsTheShard) {
  BuiltZip junk;
  std::string r = testing::RandomBytes(5000, 9);
  junk.bytes.assign(r.begin(), r.end());
  Status st = ExpectShardError(junk);
  EXPECT_NE(st.message().find("no end of central directory record"), std::string::npos);
  BuiltZip tiny;
  tiny.bytes = {'P', 'K'};
  ExpectShardError(tiny);
  BuiltZip z = BuildZip({E("a.bin", "data")});
  z.bytes.resize(z.bytes.size() - 1);
  ExpectShardError(z);
}

TEST(ZipReaderTest, EntryCountDisagreementFailsTheShard) {
  for (uint64_t n : {uint64_t{1}, uint64_t{3}}) {
    ZipBuilderOptions opt;
    opt.declared_entries = n;
    Status st = ExpectShardError(BuildZip({E("a.bin", "a"), E("b.bin", "b")}, opt));
    EXPECT_NE(st.message().find("entry count"), std::string::npos) << st.message();
  }
}

TEST(ZipReaderTest, HugeDeclaredCountFailsFast) {
  // 1e9 entries declared by a ~1 KiB file: refused before any allocation sized by the count.
  ZipBuilderOptions opt;
  opt.zip64_end = true;
  opt.declared_entries = 1000000000;
  BuiltZip z = BuildZip({E("a.bin", std::string(800, 'a'))}, opt);
  Status st = ExpectShardError(z);
  EXPECT_NE(st.message().find("1000000000"), std::string::npos) << st.message();
}

TEST(ZipReaderTest, CentralDirectoryOutsideFileFailsTheShard) {
  BuiltZip z = BuildZip({E("a.bin", "data")});
  // Declared cd_offset far beyond the end record.
  z.bytes[z.eocd_offset + 16] = 0xFF;
  z.bytes[z.eocd_offset + 17] = 0xFF;
  Status st = ExpectShardError(z);
  EXPECT_NE(st.message().find("outside the file"), std::string::npos) << st.message();
}

TEST(ZipReaderTest, Zip64LocatorOutsideFileFailsTheShard) {
  ZipBuilderOptions opt;
  opt.zip64_end = true;
  opt.locator_offset = 1ull << 40;
  Status st = ExpectShardError(BuildZip({E("a.bin", "data")}, opt));
  EXPECT_NE(st.message().find("ZIP64"), std::string::npos) << st.message();
  opt.locator_offset = 3;  // inside the file, but no ZIP64 record there
  BuiltZip z = BuildZip({E("a.bin", "data")}, opt);
  // Break the record before the locator too, so neither place holds one.
  z.bytes[z.eocd_offset - 20 - 56] = 'X';
  st = ExpectShardError(z);
  EXPECT_NE(st.message().find("ZIP64"), std::string::npos) << st.message();
}

TEST(ZipReaderTest, MultiDiskFailsTheShard) {
  ZipBuilderOptions opt;
  opt.eocd_disk = 1;
  Status st = ExpectShardError(BuildZip({E("a.bin", "data")}, opt));
  EXPECT_NE(st.message().find("multi-disk"), std::string::npos) << st.message();
}

TEST(ZipReaderTest, DuplicateNameFailsTheShard) {
  Status st = ExpectShardError(BuildZip({E("same.bin", "1"), E("other", "2"), E("same.bin", "3")}));
  EXPECT_NE(st.message().find("same.bin"), std::string::npos) << st.message();
}

TEST(ZipReaderTest, AbsurdNameLengthFailsCleanly) {
  BuiltZip z = BuildZip({E("a.bin", "data"), E("b.bin", "more")});
  // Second central entry: name length field at +28.
  const size_t second = z.cd_offset + 46 + 5;
  z.bytes[second + 28] = 0xFF;
  z.bytes[second + 29] = 0xFF;
  ExpectShardError(z);
}

// Fails every read that touches [bad_begin, bad_end) with EIO, like a failing disk.
class FailingSource final : public ShardSource {
 public:
  FailingSource(std::vector<uint8_t> bytes, uint64_t bad_begin, uint64_t bad_end)
      : inner_(kShard, std::move(bytes)), bad_begin_(bad_begin), bad_end_(bad_end) {}
  const std::string& name() const override { return inner_.name(); }
  uint64_t size() const override { return inner_.size(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    if (offset < bad_end_ && offset + buf.size() > bad_begin_) {
      return Status::IOError(name() + ": read failed: Input/output error", EIO);
    }
    return inner_.ReadAt(offset, buf);
  }

 private:
  MemoryShardSource inner_;
  uint64_t bad_begin_, bad_end_;
};

TEST(ZipReaderTest, ReadErrorsFailTheShardInsteadOfRefusingMembers) {
  BuiltZip z = BuildZip({E("a.bin", "data"), E("b.bin", "more")});
  // The second local header is unreadable: an I/O error, not a damaged member.
  FailingSource local(z.bytes, z.local_offsets[1], z.local_offsets[1] + 1);
  auto idx = ReadZipIndex(local);
  ASSERT_FALSE(idx.ok());
  EXPECT_EQ(idx.status().code(), Code::kIOError);
  EXPECT_EQ(idx.status().err(), EIO);
  FailingSource cd(z.bytes, z.cd_offset + 10, z.cd_offset + 11);
  auto idx2 = ReadZipIndex(cd);
  ASSERT_FALSE(idx2.ok());
  EXPECT_EQ(idx2.status().code(), Code::kIOError);
  EXPECT_FALSE(ZipFingerprint(cd).ok());
}

TEST(ZipReaderTest, FingerprintIsXxh3OfCentralDirectory) {
  ZipBuilderOptions opt;
  opt.junk_prefix = "junk";
  BuiltZip z = BuildZip({E("a.bin", "data"), E("b.bin", "more")}, opt);
  auto src = Source(z);
  auto fp = ZipFingerprint(*src);
  ASSERT_TRUE(fp.ok()) << fp.status().ToString();
  EXPECT_EQ(*fp, XXH3_64bits(z.bytes.data() + z.cd_offset, z.cd_size));
  auto idx = ReadZipIndex(*src);
  ASSERT_TRUE(idx.ok());
  EXPECT_EQ(idx->fingerprint, *fp);
  EXPECT_EQ(idx->cd_offset, z.cd_offset);
  EXPECT_EQ(idx->cd_size, z.cd_size);
  BuiltZip other = BuildZip({E("a.bin", "data"), E("c.bin", "more")}, opt);
  auto fp2 = ZipFingerprint(*Source(other));
  ASSERT_TRUE(fp2.ok());
  EXPECT_NE(*fp, *fp2);
}

TEST(ZipReaderTest, ReadLocalHeaderChecksNameAndMethod) {
  auto c = E("c.bin", "squeezed");
  c.method = 8;
  BuiltZip z = BuildZip({E("a.bin", "data"), E("b.bin", "more"), c});
  auto src = Source(z);
  auto off = ReadLocalHeader(*src, z.local_offsets[1], "b.bin");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(*off, z.data_offsets[1]);
  auto wrong = ReadLocalHeader(*src, z.local_offsets[1], "a.bin");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("a.bin"), std::string::npos);
  EXPECT_NE(wrong.status().message().find(kShard), std::string::npos);
  auto deflated = ReadLocalHeader(*src, z.local_offsets[2], "c.bin");
  ASSERT_FALSE(deflated.ok());
  EXPECT_EQ(deflated.status().code(), Code::kNotSupported);
  EXPECT_FALSE(ReadLocalHeader(*src, z.bytes.size() - 10, "a.bin").ok());
  EXPECT_FALSE(ReadLocalHeader(*src, 1ull << 40, "a.bin").ok());
  EXPECT_FALSE(ReadLocalHeader(*src, 3, "a.bin").ok());
}

}  // namespace
}  // namespace packfs

namespace packfs {
namespace {

// ---- Windowed local-header reads (ZipIndexOptions::read_window) ----

namespace windowed {

// Counts ReadAt calls and fails every read that touches [bad_lo, bad_hi) with EIO, the way a
// damaged sector or a flaky network object would.
class ProbeSource final : public ShardSource {
 public:
  ProbeSource(std::vector<uint8_t> bytes, uint64_t bad_lo = 0, uint64_t bad_hi = 0)
      : inner_(kShard, std::move(bytes)), bad_lo_(bad_lo), bad_hi_(bad_hi) {}
  const std::string& name() const override { return inner_.name(); }
  uint64_t size() const override { return inner_.size(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    ++reads_;
    if (offset < bad_hi_ && offset + buf.size() > bad_lo_) {
      return Status::IOError(name() + ": injected read error at offset " + std::to_string(offset));
    }
    return inner_.ReadAt(offset, buf);
  }
  uint64_t reads() const { return reads_; }

 private:
  MemoryShardSource inner_;
  uint64_t bad_lo_, bad_hi_;
  mutable std::atomic<uint64_t> reads_{0};
};

// Many small members with names, extras and data of varying lengths, plus every per-member
// check the windowed path must keep: data descriptors (with and without signature), ZIP64
// local sizes, a gap (CRC fallback, good and bad), a local/central name mismatch, a compressed
// member, an overlap, a directory entry, and a large member in the middle.
BuiltZip MixedZip() {
  std::vector<ZipBuilderEntry> entries;
  for (int i = 0; i < 700; ++i) {
    std::string name = "d" + std::to_string(i % 7) + "/" + std::string(1 + i * 7 % 41, 'n') +
                       std::to_string(i);
    ZipBuilderEntry e = E(name, testing::RandomBytes(static_cast<size_t>(i * 13 % 53), i));
    switch (i % 50) {
      case 3: e.data_descriptor = true; break;
      case 4: e.data_descriptor = true; e.descriptor_signature = false; break;
      case 5: e.zip64_local = true; break;
      case 6: e.ut_mtime = 1700000000 + i; break;
      case 7: e.local_extra = std::string("\x99\x99\x03\x00xyz", 7); break;
      case 8: e.gap_after = "gap"; break;  // CRC fallback, data intact
      case 9: e.gap_after = "gap"; e.central_crc = 1; break;  // CRC fallback, refused
      case 10: e.local_name = name + "x"; break;               // refused: name mismatch
      case 11: e.method = 8; break;                            // refused: compressed
      case 12: e.central_size = 10000; e.central_csize = 10000; break;  // refused: overlap
      default: break;
    }
    entries.push_back(std::move(e));
    if (i == 350) entries.push_back(E("big/blob.bin", testing::RandomBytes(300000, 7)));
    if (i == 360) entries.push_back(E("dir/", ""));
  }
  return BuildZip(entries);
}

void ExpectSameIndex(const ShardIndex& want, const ShardIndex& got, const std::string& what) {
  ASSERT_EQ(want.members.size(), got.members.size()) << what;
  for (size_t i = 0; i < want.members.size(); ++i) {
    const ShardMember& a = want.members[i];
    const ShardMember& b = got.members[i];
    EXPECT_EQ(a.name, b.name) << what;
    EXPECT_EQ(a.local_header_offset, b.local_header_offset) << what << " " << a.name;
    EXPECT_EQ(a.data_offset, b.data_offset) << what << " " << a.name;
    EXPECT_EQ(a.size, b.size) << what << " " << a.name;
    EXPECT_EQ(a.crc32, b.crc32) << what << " " << a.name;
    EXPECT_EQ(a.mode, b.mode) << what << " " << a.name;
    EXPECT_EQ(a.mtime, b.mtime) << what << " " << a.name;
  }
  EXPECT_EQ(want.problems, got.problems) << what;
}

}  // namespace windowed

TEST(ZipReaderTest, WindowedReadsGiveTheSameIndexAtEveryWindowEdge) {
  using namespace windowed;
  BuiltZip z = MixedZip();
  ProbeSource direct_src(z.bytes);
  auto direct = ReadZipIndex(direct_src, ZipIndexOptions{.read_window = 0});
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  // The reference itself is right: every servable member's bytes match the central CRC, and
  // each deliberate problem is refused.
  for (const ShardMember& m : direct->members) {
    std::string data = Bytes(direct_src, m);
    EXPECT_EQ(Crc32(0, data.data(), data.size()), m.crc32) << m.name;
  }
  EXPECT_EQ(direct->problems.size(), 14u * 4);  // cases 9..12 in each of the 14 runs of 50
  EXPECT_EQ(direct_src.reads() > 700, true);
  // Window sizes from "a few headers" up: their ends fall at every position inside the
  // following headers (signature, name, extra, data), so headers straddle window edges.
  std::vector<size_t> windows;
  for (size_t w = 1500; w < 9000; w += 7) windows.push_back(w);
  windows.push_back(64 * 1024);
  windows.push_back(256 * 1024);
  for (size_t w : windows) {
    ProbeSource src(z.bytes);
    auto got = ReadZipIndex(src, ZipIndexOptions{.read_window = w});
    ASSERT_TRUE(got.ok()) << w << ": " << got.status().ToString();
    ExpectSameIndex(*direct, *got, "window " + std::to_string(w));
    if (HasFailure()) return;
  }
}

TEST(ZipReaderTest, WindowedReadsCutReadsForSmallPackedMembers) {
  using namespace windowed;
  std::vector<ZipBuilderEntry> entries;
  for (int i = 0; i < 5000; ++i) {
    entries.push_back(E("d/" + std::to_string(1000000 + i) + ".bin", testing::RandomBytes(16, i)));
  }
  BuiltZip z = BuildZip(entries);
  ProbeSource direct_src(z.bytes), window_src(z.bytes);
  auto direct = ReadZipIndex(direct_src, ZipIndexOptions{.read_window = 0});
  auto windowed = ReadZipIndex(window_src);  // default window
  ASSERT_TRUE(direct.ok() && windowed.ok());
  ExpectSameIndex(*direct, *windowed, "default window");
  EXPECT_EQ(windowed->members.size(), 5000u);
  EXPECT_GE(direct_src.reads(), 5000u);  // one header read per member
  EXPECT_LT(window_src.reads(), 20u) << "5,000 headers of ~70 bytes fit in two 256 KiB windows";
}

TEST(ZipReaderTest, FailedWindowFillFallsBackToDirectReads) {
  using namespace windowed;
  BuiltZip z = MixedZip();
  MemoryShardSource clean(kShard, z.bytes);
  auto want = ReadZipIndex(clean, ZipIndexOptions{.read_window = 0});
  ASSERT_TRUE(want.ok());
  // A bad region inside the big member's data, which no check reads: a window filled across it
  // fails, and the reader must fall back instead of failing the shard or refusing members.
  uint64_t big_data = 0;
  for (const ShardMember& m : want->members) {
    if (m.name == "big/blob.bin") big_data = m.data_offset;
  }
  ASSERT_NE(big_data, 0u);
  ProbeSource flaky(z.bytes, big_data + 1000, big_data + 2000);
  auto got = ReadZipIndex(flaky);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectSameIndex(*want, *got, "bad region in unread data");

  // A bad region a direct read needs (a member's local header) still fails the whole shard
  // with an I/O error, windowed or not.
  const uint64_t header = z.local_offsets[200];
  for (size_t w : {size_t{0}, size_t{4096}, size_t{256 * 1024}}) {
    ProbeSource broken(z.bytes, header + 2, header + 3);
    auto bad = ReadZipIndex(broken, ZipIndexOptions{.read_window = w});
    ASSERT_FALSE(bad.ok()) << w;
    EXPECT_EQ(bad.status().code(), Code::kIOError) << w << ": " << bad.status().ToString();
  }
}

TEST(ZipReaderTest, MembersOutOfOffsetOrderAreReportedInDirectoryOrder) {
  using namespace windowed;
  std::vector<ZipBuilderEntry> entries;
  for (int i = 0; i < 400; ++i) {
    ZipBuilderEntry e = E("f" + std::to_string(i), testing::RandomBytes(8, i));
    if (i % 37 == 0) e.local_name = "wrong" + std::to_string(i);  // refused: name mismatch
    entries.push_back(std::move(e));
  }
  BuiltZip z = BuildZip(entries);
  // Reverse the central directory (same bytes per entry, same total size): the local headers
  // now run backwards relative to the directory. Checking runs in offset order; the result
  // must list members and problems in directory order, i.e. reversed.
  std::vector<std::vector<uint8_t>> central;
  for (uint64_t at = z.cd_offset; at < z.cd_offset + z.cd_size;) {
    auto u16 = [&](uint64_t o) { return static_cast<size_t>(z.bytes[o] | (z.bytes[o + 1] << 8)); };
    const size_t len = 46 + u16(at + 28) + u16(at + 30) + u16(at + 32);
    central.emplace_back(z.bytes.begin() + static_cast<long>(at),
                         z.bytes.begin() + static_cast<long>(at + len));
    at += len;
  }
  ASSERT_EQ(central.size(), 400u);
  std::vector<uint8_t> reversed(z.bytes.begin(), z.bytes.begin() + static_cast<long>(z.cd_offset));
  for (auto it = central.rbegin(); it != central.rend(); ++it) {
    reversed.insert(reversed.end(), it->begin(), it->end());
  }
  reversed.insert(reversed.end(), z.bytes.begin() + static_cast<long>(z.cd_offset + z.cd_size),
                  z.bytes.end());
  ASSERT_EQ(reversed.size(), z.bytes.size());

  ProbeSource fwd_src(z.bytes), rev_src(reversed);
  auto fwd = ReadZipIndex(fwd_src);
  auto rev = ReadZipIndex(rev_src);
  ASSERT_TRUE(fwd.ok() && rev.ok()) << rev.status().ToString();
  ASSERT_EQ(fwd->members.size(), rev->members.size());
  ASSERT_EQ(fwd->problems.size(), 11u);
  ASSERT_EQ(rev->problems.size(), 11u);
  const size_t n = fwd->members.size();
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(fwd->members[i].name, rev->members[n - 1 - i].name);
    EXPECT_EQ(fwd->members[i].data_offset, rev->members[n - 1 - i].data_offset);
  }
  for (size_t i = 0; i < 11; ++i) EXPECT_EQ(fwd->problems[i], rev->problems[10 - i]);
  EXPECT_LT(rev_src.reads(), 50u) << "checking in offset order keeps the window moving forward";
  auto direct = ReadZipIndex(rev_src, ZipIndexOptions{.read_window = 0});
  ASSERT_TRUE(direct.ok());
  ExpectSameIndex(*direct, *rev, "reversed directory");
}

}  // namespace
}  // namespace packfs
