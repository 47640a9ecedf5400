// RecentErrors: the last errors of a mount, kept so that a daemonized mount's failures can be read
// back from the mount itself (the `user.packfs.errors` attribute) where no log is at hand.
// Bounded: the oldest entries give way to new ones (total() still counts them).
//
// Thread-safety: every method is safe for concurrent use (one mutex, held to push or copy; errors
// are rare, so this is never a hot path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace packfs {

struct ErrorRecord {
  int64_t time = 0;     // seconds since the epoch
  std::string path;     // key of the file or directory concerned ("" when none)
  std::string shard;    // shard it was read from, as messages name it ("" when none)
  std::string message;  // what failed and what to do
};

class RecentErrors {
 public:
  // Longest message kept; longer ones are cut (with "...") so that a full list stays small.
  static constexpr size_t kMaxMessage = 1024;
  // Keeps the last `capacity` records.
  explicit RecentErrors(size_t capacity = 100) : capacity_(capacity) {}
  RecentErrors(const RecentErrors&) = delete;
  RecentErrors& operator=(const RecentErrors&) = delete;

  // Adds a record stamped with the current time.
  void Add(std::string path, std::string shard, std::string message);
  void Add(ErrorRecord record);

  // The records kept, oldest first.
  std::vector<ErrorRecord> Snapshot() const;
  // Records ever added, those dropped for room included.
  uint64_t total() const;

  // The records kept as a JSON array, oldest first:
  //   [{"time": "2026-12-02T10:00:00Z", "path": "a/b.jpg", "shard": "media/pack-0000.zip",
  //     "message": "..."}, ...]
  // When the whole list would be longer than `max_bytes` (an extended attribute's value holds at
  // most 64 KiB), the oldest records are left out.
  std::string ToJson(size_t max_bytes = 65536) const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<ErrorRecord> records_;
  uint64_t total_ = 0;
};

// "2026-12-02T10:00:00Z": UTC, as the errors list and log files stamp their lines.
std::string FormatUtcTime(int64_t seconds);

}  // namespace packfs
