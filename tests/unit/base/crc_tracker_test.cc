// Crc32Combine against the CRC of the concatenation, and CrcTracker: a whole read judged at once,
// pieces joined in any order (overlapping and repeated ones too), the read that completes a
// damaged member is the one that fails, verdicts that stick, the bounds on pending members and
// pieces, and many threads reading pieces of the same members at once.
#include "core/base/crc_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "core/base/crc32.h"

namespace packfs {
namespace {

using Verdict = CrcTracker::Verdict;

std::vector<uint8_t> Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

uint32_t CrcOf(const std::vector<uint8_t>& v) { return Crc32(0, v.data(), v.size()); }

std::span<const uint8_t> Slice(const std::vector<uint8_t>& v, size_t at, size_t n) {
  return std::span<const uint8_t>(v.data() + at, n);
}

TEST(Crc32CombineTest, EqualsTheCrcOfTheConcatenation) {
  std::mt19937 rng(1);
  for (size_t total : {0u, 1u, 2u, 7u, 100u, 4096u, 100000u}) {
    const auto data = Bytes(total, static_cast<uint32_t>(total));
    for (int trial = 0; trial < 20; ++trial) {
      const size_t cut = total == 0 ? 0 : rng() % (total + 1);
      const uint32_t a = Crc32(0, data.data(), cut);
      const uint32_t b = Crc32(0, data.data() + cut, total - cut);
      EXPECT_EQ(Crc32Combine(a, b, total - cut), CrcOf(data)) << total << " at " << cut;
    }
  }
  // Lengths far beyond memory: combining with an empty-CRC piece of zero length is identity,
  // and huge lengths do not overflow the table.
  EXPECT_EQ(Crc32Combine(0x12345678u, 0, 0), 0x12345678u);
  (void)Crc32Combine(0x12345678u, 0x9abcdef0u, ~uint64_t{0});
}

TEST(CrcTrackerTest, WholeReadIsJudgedAtOnce) {
  CrcTracker t(10);
  const auto good = Bytes(5000, 2);
  EXPECT_EQ(t.verdict(3), Verdict::kUnknown);
  auto out = t.Observe(3, good.size(), CrcOf(good), 0, good);
  EXPECT_EQ(out.verdict, Verdict::kGood);
  EXPECT_EQ(t.verdict(3), Verdict::kGood);
  auto bad = good;
  bad[1234] ^= 0x40;
  out = t.Observe(4, bad.size(), CrcOf(good), 0, bad);
  EXPECT_EQ(out.verdict, Verdict::kBad);
  EXPECT_EQ(out.actual, CrcOf(bad));
  EXPECT_EQ(t.verdict(4), Verdict::kBad);
  // Verdicts stick: later reads of either member do not change them.
  EXPECT_EQ(t.Observe(4, good.size(), CrcOf(good), 0, good).verdict, Verdict::kBad);
  EXPECT_EQ(t.Observe(3, bad.size(), CrcOf(good), 0, bad).verdict, Verdict::kGood);
  EXPECT_EQ(t.counters().good, 1u);
  EXPECT_EQ(t.counters().bad, 1u);
  // Ids out of range and empty reads are never judged.
  EXPECT_EQ(t.Observe(11, good.size(), CrcOf(good), 0, good).verdict, Verdict::kUnknown);
  EXPECT_EQ(t.Observe(0, good.size(), CrcOf(good), 0, good).verdict, Verdict::kUnknown);
  EXPECT_EQ(t.Observe(5, good.size(), CrcOf(good), 0, {}).verdict, Verdict::kUnknown);
}

TEST(CrcTrackerTest, AMemberCheckedElsewhereIsMarkedGoodOnce) {
  CrcTracker t(10);
  const auto good = Bytes(3000, 5);
  t.MarkGood(2);
  t.MarkGood(2);
  EXPECT_EQ(t.verdict(2), Verdict::kGood);
  EXPECT_EQ(t.counters().good, 1u);
  // A read of it keeps the verdict and counts nothing more.
  EXPECT_EQ(t.Observe(2, good.size(), CrcOf(good), 0, good).verdict, Verdict::kGood);
  EXPECT_EQ(t.counters().good, 1u);
  // A member judged bad stays bad; ids out of range are never judged.
  auto bad = good;
  bad[7] ^= 1;
  EXPECT_EQ(t.Observe(6, bad.size(), CrcOf(good), 0, bad).verdict, Verdict::kBad);
  t.MarkGood(6);
  EXPECT_EQ(t.verdict(6), Verdict::kBad);
  t.MarkGood(0);
  t.MarkGood(11);
  EXPECT_EQ(t.counters().good, 1u);
  EXPECT_EQ(t.counters().bad, 1u);
}

TEST(CrcTrackerTest, PiecesInAnyOrderCompleteTheMember) {
  const auto data = Bytes(1 << 20, 3);
  std::mt19937 rng(4);
  for (int trial = 0; trial < 20; ++trial) {
    CrcTracker t(2);
    // Random cut points, pieces observed in a random order.
    std::vector<size_t> cuts = {0, data.size()};
    for (int i = 0; i < 15; ++i) cuts.push_back(rng() % data.size());
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<std::pair<size_t, size_t>> pieces;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) pieces.emplace_back(cuts[i], cuts[i + 1]);
    std::shuffle(pieces.begin(), pieces.end(), rng);
    for (size_t i = 0; i < pieces.size(); ++i) {
      const auto [b, e] = pieces[i];
      auto out = t.Observe(1, data.size(), CrcOf(data), b, Slice(data, b, e - b));
      EXPECT_EQ(out.verdict, i + 1 == pieces.size() ? Verdict::kGood : Verdict::kUnknown)
          << "trial " << trial << " piece " << i;
    }
  }
}

TEST(CrcTrackerTest, TheReadThatCompletesADamagedMemberFails) {
  const auto good = Bytes(600000, 5);
  auto bad = good;
  bad[300001] ^= 1;
  CrcTracker t(1);
  const size_t step = 131072;
  // Sequential reads as the kernel sends them; the last one gets the verdict.
  for (size_t at = 0; at < bad.size(); at += step) {
    const size_t n = std::min(step, bad.size() - at);
    auto out = t.Observe(1, bad.size(), CrcOf(good), at, Slice(bad, at, n));
    EXPECT_EQ(out.verdict, at + n == bad.size() ? Verdict::kBad : Verdict::kUnknown) << at;
  }
  EXPECT_EQ(t.verdict(1), Verdict::kBad);
}

TEST(CrcTrackerTest, OverlappingAndRepeatedReadsCountOnce) {
  const auto data = Bytes(100000, 6);
  CrcTracker t(1);
  const uint32_t want = CrcOf(data);
  EXPECT_EQ(t.Observe(1, data.size(), want, 10000, Slice(data, 10000, 30000)).verdict,
            Verdict::kUnknown);
  EXPECT_EQ(t.Observe(1, data.size(), want, 10000, Slice(data, 10000, 30000)).verdict,
            Verdict::kUnknown);  // the same read again
  EXPECT_EQ(t.Observe(1, data.size(), want, 20000, Slice(data, 20000, 5000)).verdict,
            Verdict::kUnknown);  // inside what is kept
  EXPECT_EQ(t.Observe(1, data.size(), want, 35000, Slice(data, 35000, 40000)).verdict,
            Verdict::kUnknown);  // overlaps its end
  EXPECT_EQ(t.Observe(1, data.size(), want, 60000, Slice(data, 60000, 40000)).verdict,
            Verdict::kUnknown);  // overlaps again, reaches the end
  EXPECT_EQ(t.Observe(1, data.size(), want, 0, Slice(data, 0, 20000)).verdict,
            Verdict::kGood);  // overlaps the first piece, completes
}

TEST(CrcTrackerTest, PendingMembersAreBounded) {
  const auto data = Bytes(1000, 7);
  const uint32_t want = CrcOf(data);
  CrcTracker t(100, /*max_pending=*/4, /*max_pieces=*/64);
  for (uint64_t id = 1; id <= 6; ++id) t.Observe(id, data.size(), want, 0, Slice(data, 0, 500));
  EXPECT_EQ(t.counters().forgotten, 2u);
  // The two least recently read members lost their first half; the others complete.
  for (uint64_t id = 6; id >= 1; --id) {
    auto out = t.Observe(id, data.size(), want, 500, Slice(data, 500, 500));
    EXPECT_EQ(out.verdict, id <= 2 ? Verdict::kUnknown : Verdict::kGood) << id;
  }
  EXPECT_EQ(t.counters().forgotten, 2u);
}

TEST(CrcTrackerTest, AReaderJumpingAroundIsForgotten) {
  const auto data = Bytes(100000, 8);
  CrcTracker t(1, 16, /*max_pieces=*/4);
  for (size_t at = 0; at < 10 * 8000; at += 8000) {  // every other 4000-byte block
    EXPECT_EQ(t.Observe(1, data.size(), CrcOf(data), at, Slice(data, at, 4000)).verdict,
              Verdict::kUnknown);
  }
  EXPECT_GE(t.counters().forgotten, 1u);
  // Read through afterwards, it is judged.
  EXPECT_EQ(t.Observe(1, data.size(), CrcOf(data), 0, data).verdict, Verdict::kGood);
}

TEST(CrcTrackerTest, ConcurrentReadersOfTheSameMembers) {
  constexpr size_t kMembers = 16;
  constexpr size_t kSize = 256 * 1024;
  std::vector<std::vector<uint8_t>> members;
  for (size_t i = 0; i < kMembers; ++i) members.push_back(Bytes(kSize, 100 + i));
  members[5][kSize / 2] ^= 0x80;  // damaged; its expected CRC is the intact one's
  std::vector<uint32_t> want;
  for (size_t i = 0; i < kMembers; ++i) want.push_back(CrcOf(members[i]));
  want[5] = CrcOf(Bytes(kSize, 105));
  CrcTracker t(kMembers);
  std::vector<std::thread> threads;
  for (int th = 0; th < 8; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937 rng(static_cast<uint32_t>(th));
      for (int round = 0; round < 3; ++round) {
        for (size_t m = 0; m < kMembers; ++m) {
          // 16 KiB pieces in a random order per thread.
          std::vector<size_t> at;
          for (size_t a = 0; a < kSize; a += 16384) at.push_back(a);
          std::shuffle(at.begin(), at.end(), rng);
          for (size_t a : at) t.Observe(m + 1, kSize, want[m], a, Slice(members[m], a, 16384));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t m = 0; m < kMembers; ++m) {
    EXPECT_EQ(t.verdict(m + 1), m == 5 ? Verdict::kBad : Verdict::kGood) << m;
  }
  EXPECT_EQ(t.counters().good, kMembers - 1);
  EXPECT_EQ(t.counters().bad, 1u);
}

}  // namespace
}  // namespace packfs
