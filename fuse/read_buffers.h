// ReadBuffers: the buffers FUSE workers copy read replies through (remote reads, small local
// reads), shared by all workers instead of one per thread, with a bound on what stays resident
// while idle.
//
// Why: a per-thread buffer grows to the largest read it served (max_read, 1 MiB) and stays, so
// 8 workers kept 8 MiB resident past --cache-size. Shared and last-in-first-out, the buffers in
// use at once are about as many as reads run at once (one or two for a sequential reader), and
// a returned buffer past `resident_bytes` of idle ones gives its pages back (MADV_DONTNEED).
// Keeping a couple resident matters: refaulting 1 MiB per read costs a page fault per 4 KiB.
// A buffer counts with its capacity, not the size of its last read: its pages stay touched up
// to the largest read it served. So the pool's resident memory rises as its buffers meet their
// largest reads (the last-in-first-out bottom ones only at peaks of concurrency, minutes in),
// up to the bound; Json() (in user.packfs.stats) tells that from a leak. With a buffer size
// set (SetBufferBytes) every buffer has that capacity from the start, of which only the pages
// its reads touched are resident: the count then overstates them, so the pool keeps fewer idle
// buffers' pages than its bound would allow, never more.
//
// Thread-safety: Take and Give are safe for concurrent use (one mutex, held only to push/pop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace packfs {

class ReadBuffers {
 public:
  explicit ReadBuffers(size_t resident_bytes = size_t{2} << 20) : resident_max_(resident_bytes) {}
  ReadBuffers(const ReadBuffers&) = delete;
  ReadBuffers& operator=(const ReadBuffers&) = delete;

  // A buffer to fill (any size; the reader resizes it), most recently returned first.
  std::vector<uint8_t> Take();
  // Returns a buffer taken before.
  void Give(std::vector<uint8_t> buf);

  // Changes the bound (before the buffers are shared: not thread-safe with Take and Give).
  void SetResidentMax(size_t bytes) { resident_max_ = bytes; }
  // Every buffer Take returns has at least `bytes` of capacity from then on (0: as it comes),
  // so that a buffer never grows by steps, each a new allocation whose pages fault in again
  // and into which the old bytes are moved (same threading rule as SetResidentMax).
  void SetBufferBytes(size_t bytes) { buffer_bytes_ = bytes; }
  size_t resident_max() const { return resident_max_; }
  // For user.packfs.stats: "read_buffers": {"buffers": idle buffers (at a quiet moment: all of
  // them), "idle_bytes": their capacity, "idle_resident_bytes", "resident_max_bytes": the bound}.
  std::string Json() const;

  // Bytes of idle buffers whose pages were kept (tests).
  size_t resident_idle_bytes() const;

 private:
  struct Idle {
    std::vector<uint8_t> buf;
    size_t resident = 0;  // bytes of it counted as resident
  };
  size_t resident_max_;
  size_t buffer_bytes_ = 0;
  mutable std::mutex mu_;
  std::vector<Idle> idle_;
  size_t resident_ = 0;  // sum of idle_[i].resident
};

}  // namespace packfs
