// UringTransport: serves FUSE requests over io_uring (Linux 6.14+, fuse module parameter
// enable_uring=Y) beside libfuse's /dev/fuse loop, which keeps INIT, FORGET, INTERRUPT and
// whatever arrives before every queue is registered.
//
// How: libfuse 3.14 has no ring support, so each ring request is rebuilt as the classic
// request (in header, op header, payload) and handed to fuse_session_process_buf; the reply
// that the same thread then writes is caught by a custom-io writev hook, copied into the
// entry's buffers and committed with COMMIT_AND_FETCH, which also waits for the next request.
// The INIT reply gets FUSE_OVER_IO_URING added (libfuse 3.14 cannot ask for it) when the kernel
// offered it and every ring thread is running: the kernel then holds new requests until every
// possible CPU's queue has an entry, switches to the ring, and keeps taking ring commands even
// if enable_uring is turned off later. A REGISTER that fails unbinds the connection and
// everything stays on /dev/fuse. See fuse/IO_URING.md for the kernel ABI and its sources.
//
// Threads: `threads_per_queue` threads per queue (one queue per possible CPU), each with its own
// io_uring and one entry, so the kernel hands a request only to an idle thread. They end when
// the kernel completes their entries at unmount (ENOTCONN) or when the destructor wakes them;
// it joins them and closes the rings, so it must run after the unmount and before
// fuse_session_destroy.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "fuse/logger.h"
#include "fuse/lowlevel_ops.h"

namespace packfs {

// Counters readable while mounted (user.packfs.stats); shared with the stats callback.
struct UringCounters {
  std::atomic<uint64_t> requests{0};    // requests served through the ring
  std::atomic<bool> bound{false};       // INIT bound the connection to the ring
  std::atomic<uint32_t> registered{0};  // entries the kernel accepted
  std::atomic<bool> failed{false};      // asked for, refused: serving through /dev/fuse
  std::atomic<bool> used{false};        // the ring serves this mount
  std::atomic<uint64_t> in_place_bytes{0};  // reply bytes read straight into ring buffers
  std::string Json() const;             // "io_uring": {...}
};

class UringTransport {
 public:
  struct Options {
    int threads_per_queue = 4;
    size_t payload_bytes = size_t{1} << 20;  // >= max(8 KiB, max_write, max_pages * page)
  };

  // Whether the running kernel takes FUSE io_uring commands; `why` says why not.
  static bool KernelAllows(std::string* why);
  // Number of queues the kernel expects (one per possible CPU).
  static int QueueCount();
  // The reply buffer of the ring request this thread is serving (empty on any other thread, or
  // once the reply went): bytes a reply has put there already are committed without a copy.
  static std::span<uint8_t> ReplyArea();

  UringTransport(fuse_session* se, const Logger& log, std::shared_ptr<UringCounters> counters,
                 Options options);
  ~UringTransport();
  UringTransport(const UringTransport&) = delete;
  UringTransport& operator=(const UringTransport&) = delete;

  // Puts the reply hook on the session's /dev/fuse fd (after fuse_session_mount).
  Status InstallIo();
  // Starts the ring threads; they REGISTER (retrying until INIT has been answered).
  void Start();

  struct Entry;
  struct Ring;

 private:
  // The custom-io hooks of the session (userdata: its SessionState): they note the INIT
  // request, ask for the ring in its reply, and turn replies to ring requests into commits.
  static ssize_t HookRead(int fd, void* buf, size_t len, void* userdata);
  static ssize_t HookWritev(int fd, struct iovec* iov, int count, void* userdata);
  static UringTransport* Of(void* userdata);
  void RunRing(Ring* ring);
  void Serve(Entry* e);

  fuse_session* se_;
  const Logger& log_;
  std::shared_ptr<UringCounters> counters_;
  Options options_;
  int fd_ = -1;
  int efd_ = -1;  // written once to wake every ring thread at the end
  std::atomic<bool> stopping_{false};
  std::atomic<bool> started_{false};    // every ring thread is running
  // INIT, seen by the hooks on libfuse's loop thread (set before init_seen_ is).
  uint64_t init_unique_ = 0;
  bool init_offers_ring_ = false;
  std::atomic<bool> init_seen_{false};
  bool init_answered_ = false;
  std::vector<std::unique_ptr<Ring>> rings_;
  std::vector<std::thread> threads_;
};

}  // namespace packfs
