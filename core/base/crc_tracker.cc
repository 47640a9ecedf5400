// CrcTracker: verdict bits, pending pieces per member, and their joining (see crc_tracker.h).
#include "core/base/crc_tracker.h"

#include <algorithm>

#include "core/base/crc32.h"

namespace packfs {
namespace {

bool TestBit(const std::atomic<uint64_t>* words, uint64_t id) {
  return (words[id / 64].load(std::memory_order_acquire) & (uint64_t{1} << (id % 64))) != 0;
}

}  // namespace

CrcTracker::CrcTracker(uint64_t max_id, size_t max_pending, size_t max_pieces)
    : max_id_(max_id),
      max_pending_(std::max<size_t>(max_pending, 1)),
      max_pieces_(std::max<size_t>(max_pieces, 1)),
      good_(new std::atomic<uint64_t>[max_id / 64 + 1]),
      bad_(new std::atomic<uint64_t>[max_id / 64 + 1]) {
  for (uint64_t i = 0; i <= max_id / 64; ++i) {
    good_[i].store(0, std::memory_order_relaxed);
    bad_[i].store(0, std::memory_order_relaxed);
  }
}

CrcTracker::Verdict CrcTracker::verdict(uint64_t id) const {
  if (id == 0 || id > max_id_) return Verdict::kUnknown;
  if (TestBit(bad_.get(), id)) return Verdict::kBad;
  if (TestBit(good_.get(), id)) return Verdict::kGood;
  return Verdict::kUnknown;
}

void CrcTracker::MarkGood(uint64_t id) {
  if (verdict(id) != Verdict::kUnknown || id == 0 || id > max_id_) return;
  Judge(id, true);
}

void CrcTracker::Judge(uint64_t id, bool good) {
  std::atomic<uint64_t>* words = good ? good_.get() : bad_.get();
  const uint64_t bit = uint64_t{1} << (id % 64);
  // Count a member once even when two readers complete it at the same moment.
  if ((words[id / 64].fetch_or(bit, std::memory_order_acq_rel) & bit) == 0) {
    (good ? good_count_ : bad_count_).fetch_add(1, std::memory_order_relaxed);
  }
}

void CrcTracker::Insert(Pending& p, Piece piece) {
  auto it = std::lower_bound(p.pieces.begin(), p.pieces.end(), piece.begin,
                             [](const Piece& q, uint64_t at) { return q.begin < at; });
  it = p.pieces.insert(it, piece);
  if (it != p.pieces.begin()) {
    auto prev = std::prev(it);
    if (prev->end == it->begin) {
      prev->crc = Crc32Combine(prev->crc, it->crc, it->end - it->begin);
      prev->end = it->end;
      it = std::prev(p.pieces.erase(it));
    }
  }
  auto next = std::next(it);
  if (next != p.pieces.end() && it->end == next->begin) {
    it->crc = Crc32Combine(it->crc, next->crc, next->end - next->begin);
    it->end = next->end;
    p.pieces.erase(next);
  }
}

CrcTracker::Outcome CrcTracker::Observe(uint64_t id, uint64_t size, uint32_t expected,
                                        uint64_t offset, std::span<const uint8_t> data) {
  if (data.empty() || id == 0 || id > max_id_ || offset > size || data.size() > size - offset) {
    return {};
  }
  Verdict v = verdict(id);
  if (v != Verdict::kUnknown) return {v, 0};
  const uint64_t end = offset + data.size();
  const uint32_t crc = Crc32(0, data.data(), data.size());
  if (offset == 0 && end == size) {
    // The whole member in one read: no bookkeeping. (Pieces another reader left pending for it
    // age out: a judged member never looks at them again.)
    Judge(id, crc == expected);
    return {crc == expected ? Verdict::kGood : Verdict::kBad, crc};
  }

  std::lock_guard<std::mutex> lock(mu_);
  v = verdict(id);  // another reader may have completed it meanwhile
  if (v != Verdict::kUnknown) return {v, 0};
  auto it = pending_.find(id);
  if (it == pending_.end()) {
    if (pending_.size() >= max_pending_) {
      auto oldest = std::min_element(pending_.begin(), pending_.end(), [](const auto& a,
                                                                          const auto& b) {
        return a.second.last_use < b.second.last_use;
      });
      pending_.erase(oldest);
      ++forgotten_;
    }
    it = pending_.emplace(id, Pending{}).first;
  }
  Pending& p = it->second;
  p.last_use = ++clock_;
  // The parts of [offset, end) that no kept piece holds (all of it, unless reads overlapped).
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  uint64_t at = offset;
  for (const Piece& q : p.pieces) {
    if (q.end <= at) continue;
    if (q.begin >= end) break;
    if (q.begin > at) gaps.emplace_back(at, q.begin);
    at = std::max(at, q.end);
    if (at >= end) break;
  }
  if (at < end) gaps.emplace_back(at, end);
  for (const auto& [b, e] : gaps) {
    const uint32_t piece_crc = (b == offset && e == end)
                                   ? crc
                                   : Crc32(0, data.data() + (b - offset), static_cast<size_t>(e - b));
    Insert(p, Piece{b, e, piece_crc});
  }
  if (p.pieces.size() == 1 && p.pieces[0].begin == 0 && p.pieces[0].end == size) {
    const uint32_t actual = p.pieces[0].crc;
    pending_.erase(it);
    Judge(id, actual == expected);
    return {actual == expected ? Verdict::kGood : Verdict::kBad, actual};
  }
  if (p.pieces.size() > max_pieces_) {
    pending_.erase(it);
    ++forgotten_;
  }
  return {};
}

CrcTracker::Counters CrcTracker::counters() const {
  Counters c;
  c.good = good_count_.load(std::memory_order_relaxed);
  c.bad = bad_count_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  c.forgotten = forgotten_;
  return c;
}

}  // namespace packfs
