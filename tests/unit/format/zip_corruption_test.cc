// Corruption tests: damage every byte of small zips (flips, zeroing, truncation) and require
// that ReadZipIndex either fails cleanly or returns members whose extents — and so bytes — are
// exactly the original ones. Never a crash, never another member's bytes.
#include <gtest/gtest.h>

#include <map>

#include "core/format/zip_reader.h"
#include "tests/support/test_util.h"
#include "tests/support/zip_builder.h"

namespace packfs {
namespace {

using testing::BuildZip;
using testing::BuiltZip;
using testing::ZipBuilderEntry;
using testing::ZipBuilderOptions;

struct Expected {
  uint64_t data_offset;
  std::string data;
};

struct Case {
  BuiltZip zip;
  std::map<std::string, Expected> members;
};

Case MakeCase(const std::vector<ZipBuilderEntry>& entries, const ZipBuilderOptions& opt) {
  Case c;
  c.zip = BuildZip(entries, opt);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].name.back() == '/') continue;
    c.members[entries[i].name] = {c.zip.data_offsets[i], entries[i].data};
  }
  return c;
}

ZipBuilderEntry E(std::string name, std::string data) {
  ZipBuilderEntry e;
  e.name = std::move(name);
  e.data = std::move(data);
  return e;
}

Case Classic() {
  auto b = E("dir/b.bin", "bravo");
  b.data_descriptor = true;
  auto c = E("c.bin", "charlie");
  c.data_descriptor = true;
  c.descriptor_signature = false;
  auto e = E("e.bin", "");
  e.ut_mtime = 1700000000;
  ZipBuilderOptions opt;
  opt.comment = "a comment";
  return MakeCase({E("a.bin", "alpha alpha"), b, E("dir/", ""), c, e, E("f.bin", "foxtrot!")}, opt);
}

Case Zip64WithJunk() {
  auto a = E("a.bin", "alpha");
  a.zip64_central = a.zip64_local = true;
  auto b = E("b.bin", "bravo bravo");
  b.data_descriptor = b.zip64_central = b.zip64_local = true;
  auto c = E("c.bin", "charlie");
  c.local_extra = std::string("\x35\xD9\x04\x00\x04\x00\x00\x00", 8);
  ZipBuilderOptions opt;
  opt.junk_prefix = "JUNKJUNKJUNK";
  opt.zip64_end = true;
  return MakeCase({a, b, c}, opt);
}

// An index of a damaged archive accounts for every member: each one is either in it or refused
// with a problem (one per refused member). Without this, an index that silently dropped members
// would pass every check made on the members it does list.
void ExpectEveryMemberAccountedFor(const Case& c, const ShardIndex& idx, const std::string& what) {
  EXPECT_GE(idx.members.size() + idx.problems.size(), c.members.size())
      << what << ": " << idx.members.size() << " members and " << idx.problems.size()
      << " problems for " << c.members.size() << " members";
}

// Checks one damaged archive; `damaged_at` is the damaged byte (or SIZE_MAX for truncation).
void Check(const Case& c, std::vector<uint8_t> bytes, size_t damaged_at, const std::string& what) {
  MemoryShardSource src("media/pack-0000.zip", std::move(bytes));
  Result<ShardIndex> idx = ReadZipIndex(src);
  if (!idx.ok()) {
    EXPECT_NE(idx.status().message().find("media/pack-0000.zip"), std::string::npos) << what;
    return;
  }
  ExpectEveryMemberAccountedFor(c, *idx, what);
  for (const ShardMember& m : idx->members) {
    auto it = c.members.find(m.name);
    ASSERT_NE(it, c.members.end()) << what << ": unexpected member " << m.name;
    const Expected& e = it->second;
    // An empty member has no bytes to get wrong; its offset may move harmlessly.
    if (m.size != 0) {
      ASSERT_EQ(m.data_offset, e.data_offset) << what << ": " << m.name;
    }
    ASSERT_EQ(m.size, e.data.size()) << what << ": " << m.name;
    std::string got(m.size, '\0');
    auto n = src.ReadAt(m.data_offset, std::span<uint8_t>(reinterpret_cast<uint8_t*>(got.data()), got.size()));
    ASSERT_TRUE(n.ok());
    ASSERT_EQ(*n, m.size) << what;
    const bool inside = damaged_at >= m.data_offset && damaged_at < m.data_offset + m.size;
    if (!inside) {
      EXPECT_EQ(got, e.data) << what << ": " << m.name;
    }
  }
  for (const std::string& p : idx->problems) {
    EXPECT_NE(p.find("media/pack-0000.zip"), std::string::npos) << p;
    for (char ch : p) ASSERT_NE(ch, '\0') << what << ": NUL in problem text";
  }
}

void Torture(const Case& c) {
  // The undamaged archive is fully served.
  {
    MemoryShardSource src("media/pack-0000.zip", c.zip.bytes);
    auto idx = ReadZipIndex(src);
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    ASSERT_TRUE(idx->problems.empty()) << idx->problems.front();
    ASSERT_EQ(idx->members.size(), c.members.size());
  }
  const std::vector<uint8_t>& orig = c.zip.bytes;
  for (size_t i = 0; i < orig.size(); ++i) {
    for (uint8_t mask : {uint8_t{0xFF}, uint8_t{0x01}, uint8_t{0x80}, uint8_t{0x10}}) {
      std::vector<uint8_t> b = orig;
      b[i] ^= mask;
      Check(c, std::move(b), i, "byte " + std::to_string(i) + " ^ " + std::to_string(mask));
      if (::testing::Test::HasFatalFailure()) return;
    }
    std::vector<uint8_t> z = orig;
    z[i] = 0;
    Check(c, std::move(z), i, "byte " + std::to_string(i) + " = 0");
    // Cutting the archive anywhere loses the end record: every truncation is a clean error
    // naming the shard.
    std::vector<uint8_t> t(orig.begin(), orig.begin() + static_cast<std::ptrdiff_t>(i));
    MemoryShardSource src("media/pack-0000.zip", t);
    auto idx = ReadZipIndex(src);
    ASSERT_FALSE(idx.ok()) << "cut at " << i << " of " << orig.size() << " still indexed";
    EXPECT_NE(idx.status().message().find("media/pack-0000.zip"), std::string::npos)
        << "cut at " << i << ": " << idx.status().message();
  }
}

TEST(ZipCorruptionTest, ClassicArchiveEveryByte) { Torture(Classic()); }

TEST(ZipCorruptionTest, Zip64ArchiveWithJunkEveryByte) { Torture(Zip64WithJunk()); }

TEST(ZipCorruptionTest, RandomMultiByteDamage) {
  Case c = Classic();
  std::string noise = testing::RandomBytes(4096 * 4, 42);
  for (size_t round = 0; round < 4096; ++round) {
    std::vector<uint8_t> b = c.zip.bytes;
    size_t damaged = SIZE_MAX;
    for (int k = 0; k < 3; ++k) {
      const size_t pos = static_cast<uint8_t>(noise[round * 4 + k]) * b.size() / 256;
      b[pos] = static_cast<uint8_t>(noise[round * 4 + 3] + k);
      damaged = pos;
    }
    // Several bytes changed: only extents are compared (data bytes may have been hit).
    MemoryShardSource src("media/pack-0000.zip", std::move(b));
    auto idx = ReadZipIndex(src);
    if (!idx.ok()) {
      EXPECT_NE(idx.status().message().find("media/pack-0000.zip"), std::string::npos)
          << "round " << round << ": " << idx.status().message();
      continue;
    }
    ExpectEveryMemberAccountedFor(c, *idx, "round " + std::to_string(round));
    for (const ShardMember& m : idx->members) {
      auto it = c.members.find(m.name);
      ASSERT_NE(it, c.members.end()) << "round " << round << " damaged " << damaged;
      if (m.size != 0) {
        EXPECT_EQ(m.data_offset, it->second.data_offset) << "round " << round;
      }
      EXPECT_EQ(m.size, it->second.data.size()) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace packfs
