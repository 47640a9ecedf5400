// DirStream: reads the shard bytes of a directory that a pass is reading most of into the page
// cache ahead of its reads, in large sequential requests from a thread of its own.
//
// Why: in an epoch by path every file costs a LOOKUP and a READ, and the hint each lookup gives
// the disk (Filesystem::Prefetch) is 4-160 KiB; the readers then often all wait on the disk
// together while the CPUs idle (cold 0.72x loose files with 8 readers against 0.97x with the
// shards already cached, 2026-12-04). Once a directory is known to be read through (the push rule:
// kPushAfterPercent of it served, fuse/push.h), its remaining files will all be read, so its whole
// extent is worth having: read in order, a megabyte a request, it costs the disk less than the
// hints would and leaves the readers' requests only page-cache hits. Once a directory is
// streamed whole its lookups give no hint at all (two system calls a file fewer). The same
// holds for shards on a network file system, where a request costs a round trip.
//
// When memory is short the bytes would be evicted before their reads: an extent is streamed only
// when the page cache can take twice its size plus kReserve without evicting anything
// (MemoryRoom, core/read/page_cache.h: MemAvailable, and the room left under a memory cgroup),
// and streaming stops when the room (looked at every kCheckEvery chunks) falls below what is left
// to read plus kReserve.
//
// Pacing: at most two kChunk requests are out at once (the next is hinted, then the one before it
// is waited for), so a reader's own disk read queues behind at most two of them.
//
// Threads: the constructor starts the thread; the destructor stops it between chunks and joins.
// Thread-safety: Want, Streamed and Drain are safe for concurrent use; the extents callback runs
// on the stream's thread only.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/stats.h"

namespace packfs {

class DirStream {
 public:
  static constexpr uint64_t kChunk = 1 << 20;
  static constexpr uint64_t kReserve = 64ull << 20;
  static constexpr uint64_t kCheckEvery = 4;  // chunks between two looks at the room
  static constexpr size_t kMaxDirs = 65536;   // directories remembered as asked for
  // A range of a shard file to stream; the lease keeps its descriptor open. A shard without one
  // (remote) is streamed from `copy`, its disk cache's file, instead.
  struct Extent {
    ShardLease lease;
    uint64_t from = 0;
    uint64_t to = 0;
    std::shared_ptr<const UniqueFd> copy;
  };
  using ExtentsOf = std::function<std::vector<Extent>(uint64_t dir)>;
  using Room = std::function<std::optional<uint64_t>()>;

  // `extents_of(dir)` gives the ranges holding a directory's files (called on the thread);
  // `room` the bytes the page cache can take (nullopt: unknown, nothing is streamed).
  DirStream(ExtentsOf extents_of, Room room, Stats& stats);
  ~DirStream();
  DirStream(const DirStream&) = delete;
  DirStream& operator=(const DirStream&) = delete;

  // Asks for `dir` to be streamed; each directory once (later calls are a set lookup).
  void Want(uint64_t dir);
  // Whether `dir` has been streamed whole (every extent, none skipped or stopped): its files'
  // bytes were all brought in, so a hint for one of them would find them there.
  bool Streamed(uint64_t dir) const;
  // Waits until every directory asked for so far has been streamed or skipped (tests).
  void Drain();

 private:
  void Run();
  enum class Outcome { kDone, kSkipped, kStopped };
  // Streams one extent (kSkipped: not, or not all of it, for want of room).
  Outcome StreamExtent(const Extent& e);

  ExtentsOf extents_of_;
  Room room_;
  Stats& stats_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // work or stop, for the thread
  std::condition_variable idle_cv_;  // queue empty and nothing in hand, for Drain
  std::unordered_set<uint64_t> asked_;
  std::unordered_set<uint64_t> streamed_;
  std::deque<uint64_t> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace packfs
