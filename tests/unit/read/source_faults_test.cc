// I/O faults injected at the ShardSource interface: a source that fails its Nth read, or answers
// it short, under every reader of shard bytes (zip index, local header check, CRC verify). Each
// call either fails with a Status naming the shard, or reports the damage as a problem, or gives
// exactly the answer of the healthy source — never a crash, never a silently different answer.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "core/base/shard_source.h"
#include "core/format/zip_reader.h"
#include "core/read/verify.h"
#include "tests/support/test_util.h"
#include "tests/support/zip_builder.h"

namespace packfs {
namespace {

using testing::BuildZip;
using testing::ZipBuilderEntry;

// Wraps a source; read number `fail_at` (1-based, counting every ReadAt) fails with EIO or,
// with `short_read`, returns half of what was asked. 0 never fails. Counts reads.
class FaultySource final : public ShardSource {
 public:
  FaultySource(const ShardSource& inner, uint64_t fail_at, bool short_read)
      : inner_(inner), fail_at_(fail_at), short_(short_read) {}
  const std::string& name() const override { return inner_.name(); }
  uint64_t size() const override { return inner_.size(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    uint64_t n = ++reads_;
    if (n == fail_at_) {
      if (!short_) return Status::IOError(name() + ": injected read error", EIO);
      PACKFS_ASSIGN_OR_RETURN(size_t got, inner_.ReadAt(offset, buf.first(buf.size() / 2)));
      return got;
    }
    return inner_.ReadAt(offset, buf);
  }
  uint64_t reads() const { return reads_.load(); }

 private:
  const ShardSource& inner_;
  uint64_t fail_at_;
  bool short_;
  mutable std::atomic<uint64_t> reads_{0};
};

std::vector<ZipBuilderEntry> Entries() {
  std::vector<ZipBuilderEntry> e;
  for (int i = 0; i < 40; ++i) {
    ZipBuilderEntry x;
    x.name = "dir" + std::to_string(i % 3) + "/m" + std::to_string(i) + ".bin";
    x.data = testing::RandomBytes(static_cast<size_t>(100 + i * 997), static_cast<uint64_t>(i));
    x.data_descriptor = i % 7 == 3;
    x.zip64_local = i % 11 == 5;
    x.ut_mtime = 1700000000 + i;
    e.push_back(x);
  }
  return e;
}

bool SameIndex(const ShardIndex& a, const ShardIndex& b) {
  if (a.members.size() != b.members.size() || a.problems != b.problems ||
      a.fingerprint != b.fingerprint) {
    return false;
  }
  for (size_t i = 0; i < a.members.size(); ++i) {
    const ShardMember &x = a.members[i], &y = b.members[i];
    if (x.name != y.name || x.data_offset != y.data_offset || x.size != y.size ||
        x.crc32 != y.crc32 || x.local_header_offset != y.local_header_offset) {
      return false;
    }
  }
  return true;
}

class SourceFaultsTest : public ::testing::TestWithParam<bool> {
 protected:
  SourceFaultsTest() : zip_(BuildZip(Entries())), src_("faulty.zip", zip_.bytes) {}
  testing::BuiltZip zip_;
  MemoryShardSource src_;
};

TEST_P(SourceFaultsTest, IndexFailsCleanlyOrAgrees) {
  for (size_t window : {size_t{0}, size_t{256 * 1024}}) {
    ZipIndexOptions opts;
    opts.read_window = window;
    auto healthy = ReadZipIndex(src_, opts);
    ASSERT_TRUE(healthy.ok()) << healthy.status().ToString();
    ASSERT_EQ(healthy->members.size(), 40u);
    FaultySource counter(src_, 0, false);
    ASSERT_TRUE(ReadZipIndex(counter, opts).ok());
    const uint64_t total = counter.reads();
    ASSERT_GT(total, 1u);
    int failed = 0;
    for (uint64_t n = 1; n <= total; ++n) {
      FaultySource faulty(src_, n, GetParam());
      auto got = ReadZipIndex(faulty, opts);
      if (!got.ok()) {
        ++failed;
        EXPECT_NE(got.status().message().find("faulty.zip"), std::string::npos)
            << got.status().message();
        continue;
      }
      // A fault the reader absorbed (a member refused, or a read it could do without) shows
      // up as a problem naming the shard — never as a silently different index.
      if (!SameIndex(*got, *healthy)) {
        EXPECT_GT(got->problems.size(), healthy->problems.size()) << "read " << n;
        EXPECT_LT(got->members.size(), healthy->members.size()) << "read " << n;
        for (const ShardMember& m : got->members) {
          bool found = false;
          for (const ShardMember& h : healthy->members) {
            found |= h.name == m.name && h.data_offset == m.data_offset && h.size == m.size &&
                     h.crc32 == m.crc32;
          }
          EXPECT_TRUE(found) << m.name << " differs after fault at read " << n;
        }
      }
    }
    EXPECT_GT(failed, 0) << "no injected fault was noticed (window " << window << ")";
  }
}

TEST_P(SourceFaultsTest, LocalHeaderCheckFailsCleanly) {
  auto healthy = ReadZipIndex(src_);
  ASSERT_TRUE(healthy.ok());
  for (const ShardMember& m : healthy->members) {
    // The check's first read fails, or comes back short (which a source does only at its end,
    // so the header is not all there): the check must fail naming shard and member, with the
    // cause, never pass on bytes it did not get.
    FaultySource faulty(src_, 1, GetParam());
    auto got = ReadLocalHeader(faulty, m.local_header_offset, m.name);
    ASSERT_FALSE(got.ok()) << m.name << " passed its check although its read "
                           << (GetParam() ? "came back short" : "failed");
    EXPECT_GE(faulty.reads(), 1u);
    const std::string& msg = got.status().message();
    EXPECT_NE(msg.find(m.name), std::string::npos) << msg;
    EXPECT_NE(msg.find("faulty.zip"), std::string::npos) << msg;
    EXPECT_NE(msg.find(GetParam() ? "short read" : "injected read error"), std::string::npos)
        << msg;
    FaultySource fine(src_, 0, false);
    auto ok = ReadLocalHeader(fine, m.local_header_offset, m.name);
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ(*ok, m.data_offset);
  }
}

TEST_P(SourceFaultsTest, VerifyReportsOrFails) {
  auto healthy = ReadZipIndex(src_);
  ASSERT_TRUE(healthy.ok());
  FaultySource counter(src_, 0, false);
  std::vector<std::string> problems;
  uint64_t bytes = 0;
  ASSERT_TRUE(CheckMemberCrcs(counter, healthy->members, &problems, &bytes).ok());
  ASSERT_TRUE(problems.empty());
  const uint64_t total = counter.reads();
  for (uint64_t n = 1; n <= total; ++n) {
    FaultySource faulty(src_, n, GetParam());
    std::vector<std::string> p;
    uint64_t b = 0;
    Status st = CheckMemberCrcs(faulty, healthy->members, &p, &b);
    if (GetParam()) {
      // A short read is legal for pread: reading on must give the healthy answer exactly.
      EXPECT_TRUE(st.ok() && p.empty() && b == bytes)
          << "short read " << n << ": " << st.ToString() << (p.empty() ? "" : " " + p[0]);
    } else {
      // A failed read must never pass as a good shard.
      EXPECT_TRUE(!st.ok() || !p.empty()) << "fault at read " << n << " of " << total
                                          << " went unnoticed";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ErrorOrShort, SourceFaultsTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "ShortRead" : "ReadError"; });

}  // namespace
}  // namespace packfs
