// Session: mounts a Filesystem with libfuse and serves it on a multi-threaded loop until it is
// unmounted (fusermount3 -u, umount) or the process gets SIGINT, SIGTERM or SIGHUP; then it
// unmounts and returns.
//
// Threads: ServeMount serves requests with `threads` workers (fuse/worker_loop.h), started from
// and joined by the calling thread before it returns. The Filesystem and Logger must outlive
// the call.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/read/filesystem.h"
#include "fuse/logger.h"
#include "fuse/lowlevel_ops.h"
#include "fuse/uring_transport.h"
#include "fuse/worker_loop.h"

namespace packfs {

struct SessionParams {
  std::string mountpoint;    // absolute path
  std::string fuse_options;  // the -o string for libfuse
  int threads = 8;
  // Of the workers, at most this many take requests at once; one whose read waits for the disk
  // steps aside (fuse/worker_loop.h). -1: the CPUs; 0: all of them.
  int active_threads = -1;
  // Its counters (may be null).
  std::shared_ptr<WorkerCounters> worker_counters;
  bool debug = false;        // libfuse request tracing on stderr
  // Serve requests over FUSE io_uring when the kernel allows it (fuse/uring_transport.h),
  // otherwise through /dev/fuse, saying why when `io_uring_asked` (-o io_uring). Its counters go
  // here (may be null).
  bool io_uring = true;
  bool io_uring_asked = false;
  std::shared_ptr<UringCounters> uring_counters;
  // The workers' reply buffers, whose Json() the caller puts in the stats attribute (null: the
  // session makes its own).
  std::shared_ptr<ReadBuffers> read_buffers;
  // The listings' parts read ahead, likewise (fuse/listing_ahead.h).
  std::shared_ptr<ListingAhead> listing_ahead;
};

// Returns OK after a clean unmount. Fails (before anything is served, leaving nothing mounted)
// when libfuse rejects the options or the mount itself fails. `on_ready` runs once, on a worker
// thread, when the kernel's INIT has been answered: from then on the mount answers requests.
Status ServeMount(const Filesystem& fs, const ServeConfig& config, const SessionParams& params,
                  const Logger& log, std::function<void()> on_ready);

}  // namespace packfs
