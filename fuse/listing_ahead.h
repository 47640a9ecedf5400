// ListingAhead: the next part of a directory listing, read from the catalog while the kernel is
// still busy with the part just sent.
//
// Why: a reader listing a large directory (find, ls, os.scandir) sends one READDIRPLUS after
// another, each for the entries after the last, and waits for each reply; the kernel then spends
// about a millisecond making a dentry and an inode for each of its ~400 entries before it asks
// for the next part. Reading that part from the catalog only once it is asked for adds the
// catalog's time to the reader's wait every time: a find over a million members sent 4,004
// READDIRPLUS and waited 0.7 s of its 4.0-5.8 s. So after a worker replies with a part that did
// not reach the end, it reads the part that follows and keeps it here, and the request for it is
// answered from it; one that comes while the part is still being read waits for it instead of
// reading it again.
//
// Entries, not formatted replies: a reply is formatted for its own request (its size), which is
// cheap beside the catalog's reads. A kept part is used only by a request for the same directory
// and offset, and once: a reader that lists from elsewhere (seekdir) reads the catalog as before.
// The mount never changes, so a kept part cannot go stale.
//
// Thread-safety: safe for concurrent use (one lock around a handful of slots).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/read/filesystem.h"

namespace packfs {

class ListingAhead {
 public:
  // Parts kept at once (listings under way at once); the oldest read one goes first.
  static constexpr size_t kSlots = 8;
  // Longest a request waits for a part being read (then it reads the catalog itself).
  static constexpr int kWaitMs = 100;

  // Marks the part of directory `ino` from readdir offset `offset` as being read; false when it
  // is kept or being read already, or every slot holds a part being read.
  bool Reserve(uint64_t ino, uint64_t offset);
  // Keeps `entries` as that part (none: the part is dropped). After a Reserve that returned true.
  void Fill(uint64_t ino, uint64_t offset, std::vector<DirEntry> entries);
  // That part, taken out (waiting up to kWaitMs while it is being read); nullopt if none.
  std::optional<std::vector<DirEntry>> Take(uint64_t ino, uint64_t offset);
  // `"listing_ahead": {"kept": N, "used": N}` for the stats attribute: parts read ahead, and
  // those a request was answered from.
  std::string Json() const;

 private:
  struct Slot {
    uint64_t ino = 0;
    uint64_t offset = 0;
    uint64_t age = 0;    // when it was reserved (a counter)
    bool ready = false;  // filled
    std::vector<DirEntry> entries;
  };
  std::vector<Slot>::iterator Find(uint64_t ino, uint64_t offset);

  std::mutex mu_;
  std::condition_variable filled_;
  std::vector<Slot> slots_;
  uint64_t next_age_ = 0;
  std::atomic<uint64_t> kept_{0};
  std::atomic<uint64_t> used_{0};
};

}  // namespace packfs
