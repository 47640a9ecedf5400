// Stats: lock-free counters of a mounted filesystem (requests by kind, bytes served, errors, reads
// in flight, a log2 latency histogram of reads), rendered as JSON for `user.packfs.stats`.
//
// Thread-safety: every method is safe for concurrent use (relaxed atomics; a snapshot may mix
// counts from requests that finished while it was taken, which is fine for monitoring).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace packfs {

enum class RequestKind : uint8_t {
  kLookup = 0,
  kGetattr,
  kOpen,
  kOpendir,
  kReaddir,
  kReaddirplus,
  kRead,
  kStatfs,
  kGetxattr,
  kListxattr,
  kMutating,  // anything refused with EROFS
  kOther,
  kCount,
};

const char* RequestKindName(RequestKind kind);

class Stats {
 public:
  // Read latency buckets: bucket i counts reads that took [2^i, 2^(i+1)) microseconds; bucket 0
  // also holds reads under 1 µs and the last bucket everything slower (~1 s and more).
  static constexpr size_t kLatencyBuckets = 21;

  void Count(RequestKind kind) {
    requests_[static_cast<size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  }
  void CountError() { errors_.fetch_add(1, std::memory_order_relaxed); }
  void AddBytes(uint64_t n) { bytes_served_.fetch_add(n, std::memory_order_relaxed); }
  void RecordReadLatency(uint64_t micros);
  void ReadStarted() { reads_in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void ReadFinished() { reads_in_flight_.fetch_sub(1, std::memory_order_relaxed); }
  // Counts a shard's first use (callers make sure each shard is counted once).
  void ShardUsed() { shards_used_.fetch_add(1, std::memory_order_relaxed); }

  // Files pushed into the kernel's page cache beside a read (fuse/push.h): a read that pushed
  // any, each file pushed and its bytes, pushes the kernel refused because it had no inode for
  // the file (by path, before its LOOKUP), other refusals, and READs that arrived for a file
  // pushed before (its pushed pages were evicted before it was read: a wasted push), reads
  // whose followers were not pushed because the push queue was full, pauses of pushing because
  // pushed files, or the shard bytes of the windows read to push them, were being evicted
  // before their read (memory too short for it), such windows found evicted, and directories
  // walked (pushed through in shard order once ready: Pusher::Walk) or not for want of room;
  // ready directories listed through the mount (fuse/dir_lister.h), not for want of room, or
  // not because the listing failed; windows that ended at a file another read had taken.
  enum class PushEvent : uint8_t {
    kWindow = 0, kFile, kUnknownInode, kFailed, kReread, kDropped, kPaused, kEvictedWindow,
    kBusy, kWalk, kWalkNoRoom, kList, kListNoRoom, kListFailed, kCutShort, kCount
  };
  void CountPush(PushEvent e, uint64_t bytes = 0) {
    push_[static_cast<size_t>(e)].fetch_add(1, std::memory_order_relaxed);
    if (bytes) pushed_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  uint64_t push_count(PushEvent e) const {
    return push_[static_cast<size_t>(e)].load(std::memory_order_relaxed);
  }
  // The lookup's prefetch hint past the file (Filesystem::Prefetch): hints that took the span,
  // files found already cached at their lookup (an earlier hint or read-ahead brought them: it
  // paid) or evicted before it (it did not), pauses of the span for that reason, lookups on
  // a network file system left to the kernel's read-ahead (a walk in shard order: no hint), and
  // first READs of files no lookup hinted, on a network file system (Filesystem::ReadHint).
  enum class HintEvent : uint8_t {
    kWide = 0,
    kResident,
    kEvicted,
    kPaused,
    kStreamed,
    kRead,
    kCount
  };
  void CountHint(HintEvent e) {
    hint_[static_cast<size_t>(e)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t hint_count(HintEvent e) const {
    return hint_[static_cast<size_t>(e)].load(std::memory_order_relaxed);
  }
  // Directories streamed into the page cache ahead of their reads (core/read/dir_stream.h):
  // extents streamed and their bytes, extents skipped because memory had no room for them, and
  // streams stopped part way because the room ran out.
  enum class StreamEvent : uint8_t { kExtent = 0, kNoRoom, kStopped, kCount };
  void CountStream(StreamEvent e) {
    stream_[static_cast<size_t>(e)].fetch_add(1, std::memory_order_relaxed);
  }
  void AddStreamed(uint64_t bytes) { streamed_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  uint64_t stream_count(StreamEvent e) const {
    return stream_[static_cast<size_t>(e)].load(std::memory_order_relaxed);
  }
  uint64_t streamed_bytes() const { return streamed_bytes_.load(std::memory_order_relaxed); }
  uint64_t requests(RequestKind kind) const {
    return requests_[static_cast<size_t>(kind)].load(std::memory_order_relaxed);
  }
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  uint64_t bytes_served() const { return bytes_served_.load(std::memory_order_relaxed); }

  // One JSON object: {"requests": {...}, "bytes_served": N, "errors": N, "reads_in_flight": N,
  // "shards_used": N, "push": {...}, "hint": {...}, "dir_stream": {...}, "read_latency_us":
  // {"<lower bound>": count, ...}}. `extra` is spliced in verbatim as additional members (e.g.
  // "\"sources\": 2"), or empty.
  std::string ToJson(const std::string& extra = "") const;

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(RequestKind::kCount)> requests_{};
  std::array<std::atomic<uint64_t>, kLatencyBuckets> latency_{};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> bytes_served_{0};
  std::atomic<int64_t> reads_in_flight_{0};
  std::atomic<uint64_t> shards_used_{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(PushEvent::kCount)> push_{};
  std::atomic<uint64_t> pushed_bytes_{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(HintEvent::kCount)> hint_{};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(StreamEvent::kCount)> stream_{};
  std::atomic<uint64_t> streamed_bytes_{0};
};

}  // namespace packfs
