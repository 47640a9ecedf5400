// PackInput: one member to be packed — its key and where its bytes come from — and the readers
// that fetch those bytes with bounded memory. A PackInput names a byte range of a local file:
// a whole regular file for `mkpack pack`, or a member's data inside a tar for a WebDataset
// conversion, so every packing front end feeds the same shard writer.
//
// Thread-safety: the free functions are thread-safe (no shared state); an InputStream is
// thread-compatible and owns its fd; a Prefetcher owns its reader threads (started by the
// constructor, joined by the destructor) and is called from one consumer thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/base/unique_fd.h"

namespace packfs {

struct PackInput {
  std::string key;         // member name (validated by whoever made the input)
  std::string path;        // the file holding the bytes; messages name it
  uint64_t offset = 0;     // first byte in `path`
  uint64_t size = 0;       // byte count, known before writing (as stat or a tar header says)
  int64_t mtime = 0;       // seconds since the epoch
  bool whole_file = true;  // the bytes are all of `path`: growth or shrinkage is refused
  // When set, the bytes are [offset, offset + size) of this source instead of `path` (which then
  // only names the input in messages): a member of another pack set, or synthesized content such
  // as a LeRobot episode video sliced from a multi-episode MP4.
  std::shared_ptr<const ShardSource> source;
  std::string group;  // for GroupBy::kInput: inputs with the same group share a shard
};

// Streams one input. Read() returns 0 once `size` bytes were delivered; a file that turned out
// shorter or (whole_file) longer than `size`, or that vanished, is an error naming the path.
class InputStream {
 public:
  static Result<InputStream> Open(const PackInput& in);
  Result<size_t> Read(std::span<uint8_t> buf);

 private:
  InputStream(UniqueFd fd, const PackInput* in) : fd_(std::move(fd)), in_(in) {}
  UniqueFd fd_;
  const PackInput* in_;  // not owned; outlives the stream
  uint64_t done_ = 0;
};

// Allocator whose value-less construct leaves bytes uninitialised: resizing a buffer that a
// read(2) is about to fill skips the zero fill (8% of `mkpack pack`'s CPU on small files).
template <typename T>
struct NoInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <typename U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
// An input's bytes on their way into a shard.
using InputBuffer = std::vector<uint8_t, NoInitAllocator<uint8_t>>;

// Reads all of `in` into *out (resized to in.size) and its CRC-32 into *crc. One open and, for a
// small whole file, one read(2) of size + 1 bytes that also proves the file did not grow.
Status ReadInput(const PackInput& in, InputBuffer* out, uint32_t* crc);

// "<path> changed while being packed ..." — the one message for size mismatches.
Status InputChanged(const PackInput& in, uint64_t got);

// Reads small inputs ahead of a writer, in parallel, handing them over strictly in sequence.
// Inputs above `small_limit` are not read (the writer streams them itself). At most
// `window_bytes` of data (and 8192 items) are held ahead of the consumer, so memory is bounded.
class Prefetcher {
 public:
  struct Item {
    Status status;
    bool prefetched = false;  // false: too large, the consumer streams it
    InputBuffer data;
    uint32_t crc = 0;
  };

  // `order` lists indices into `inputs` in the sequence Take() will ask for them. Both must
  // outlive the Prefetcher. Starts `threads` reader threads.
  Prefetcher(const std::vector<PackInput>& inputs, std::vector<size_t> order, int threads,
             uint64_t small_limit, uint64_t window_bytes);
  ~Prefetcher();  // stops and joins the threads
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The item at position `seq` of the order (each position exactly once, increasing).
  Item Take(size_t seq);
  // Hands a used data buffer back for reuse (saves an allocation and page faults per input).
  void Recycle(InputBuffer buf);

 private:
  void Worker();
  bool Claimable() const;  // under mu_

  const std::vector<PackInput>& inputs_;
  const std::vector<size_t> order_;
  const uint64_t small_limit_;
  const uint64_t window_bytes_;

  std::mutex mu_;
  std::condition_variable work_cv_;   // workers wait for room in the window
  std::condition_variable ready_cv_;  // the consumer waits for its item
  std::vector<Item> items_;
  std::vector<uint8_t> ready_;        // per position: 1 when items_[pos] is filled
  std::vector<InputBuffer> free_bufs_;
  uint64_t free_bytes_ = 0;  // their capacity
  size_t next_claim_ = 0;
  size_t consumed_ = 0;
  uint64_t bytes_ahead_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace packfs
