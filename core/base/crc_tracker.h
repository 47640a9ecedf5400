// CrcTracker: checks members' CRC-32 from the bytes that reads serve anyway, without reading
// anything itself, so that a mount never serves a damaged member through to its end silently.
//
// A read that covers a member whole (every small file: the kernel reads it with one request) is
// hashed and judged at once. Reads of part of a member are hashed as pieces, kept per member as
// disjoint ranges with their CRCs, and joined with Crc32Combine as neighbours arrive, in whatever
// order (the kernel's read-ahead requests run on several workers at once); the read that
// completes the member gets the verdict. A member judged good is never hashed again; one judged
// bad stays bad (its later reads should fail without reading).
//
// Bounded: at most `max_pending` members have pieces pending (the least recently read one is
// forgotten for a new one) and each has at most `max_pieces` pieces (a reader jumping around a
// large member makes it forgotten: such reads are not checked until the member is read through
// again). Verdicts take two bits per member id.
//
// Thread-safety: every method is safe for concurrent use. Verdicts are lock-free reads; pieces
// are kept under one mutex, held for the bookkeeping only (hashing happens outside it, except
// for the rare read that overlaps pieces already kept).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace packfs {

class CrcTracker {
 public:
  enum class Verdict : uint8_t { kUnknown, kGood, kBad };
  struct Outcome {
    Verdict verdict = Verdict::kUnknown;
    uint32_t actual = 0;  // the CRC-32 the bytes have, when the verdict came with this read
  };
  struct Counters {
    uint64_t good = 0;       // members found intact
    uint64_t bad = 0;        // members found damaged
    uint64_t forgotten = 0;  // partial members dropped for room (never judged)
  };

  // Members have ids 1..max_id (larger ids are never judged).
  explicit CrcTracker(uint64_t max_id, size_t max_pending = 256, size_t max_pieces = 64);
  CrcTracker(const CrcTracker&) = delete;
  CrcTracker& operator=(const CrcTracker&) = delete;

  Verdict verdict(uint64_t id) const;

  // Notes that bytes [offset, offset + data.size()) of member `id`, `size` bytes long with CRC-32
  // `expected`, read as `data`. Returns the verdict after this read: kBad (with the CRC found)
  // when these bytes complete the member and it does not match; kGood when they complete it and
  // it does; kUnknown while bytes are missing. A member already judged keeps its verdict.
  Outcome Observe(uint64_t id, uint64_t size, uint32_t expected, uint64_t offset,
                  std::span<const uint8_t> data);
  // Member `id` was found intact by a check of all its bytes made elsewhere (a follower read to
  // be pushed: PackSet::ReadThrough): judged good, unless it was judged already.
  void MarkGood(uint64_t id);

  Counters counters() const;

 private:
  struct Piece {
    uint64_t begin = 0;
    uint64_t end = 0;
    uint32_t crc = 0;
  };
  struct Pending {
    std::vector<Piece> pieces;  // disjoint, sorted by begin; neighbours are joined
    uint64_t last_use = 0;
  };
  void Judge(uint64_t id, bool good);
  // Adds [begin, end) with its CRC to `p` and joins it with touching neighbours; `p` holds no
  // byte of it.
  static void Insert(Pending& p, Piece piece);

  const uint64_t max_id_;
  const size_t max_pending_;
  const size_t max_pieces_;
  // Bit i of word i / 64: member i judged good (good_) or bad (bad_).
  std::unique_ptr<std::atomic<uint64_t>[]> good_;
  std::unique_ptr<std::atomic<uint64_t>[]> bad_;
  std::atomic<uint64_t> good_count_{0};
  std::atomic<uint64_t> bad_count_{0};

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Pending> pending_;
  uint64_t clock_ = 0;
  uint64_t forgotten_ = 0;
};

}  // namespace packfs
