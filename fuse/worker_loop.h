// WorkerLoop: serves a session's requests from /dev/fuse with `threads` workers, of which at most
// `active` (the CPUs, by default) hold a turn to take requests. A worker whose read is about to
// wait — for the disk, or a remote source — gives its turn up first (core/base/wait_notice.h),
// so a parked worker takes the next request while it waits, and once its wait is over it takes
// one more request without a turn: as many reads wait as there are workers, while requests that
// do not wait are served by no more workers than there are CPUs.
//
// Why not libfuse's loop: with 8 workers on 2 vCPUs, an epoch read by path (every request served
// from the page cache once the first reads are in) ran 11-14% slower than with the workers kept
// to 2; with 2 workers, a pass whose reads wait on the disk had two reads in flight and ran 20%
// slower than with 8 (bench/FINDINGS.md, "Fewer FUSE workers", "Workers take turns").
//
// Threads: RunWorkerLoop blocks until the session ends — unmounted, an error on /dev/fuse, a
// SIGINT, SIGTERM or SIGHUP during the call, or fuse_session_exit before it — and joins every
// worker before it returns. For the call it installs its own handlers for those three signals
// (putting the ones before back after): libfuse's end the session, and libfuse then drops a
// request a worker has read, which its reader waits for until the unmount; here the workers
// stop taking requests, and process every one they read. The workers block every signal but
// SIGRTMIN, which wakes them from a read of /dev/fuse when the loop ends (a do-nothing handler
// is installed for it during the call). One loop runs at a time in a process.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace packfs {

struct WorkerCounters {
  std::atomic<uint32_t> threads{0};  // workers
  std::atomic<uint32_t> active{0};   // of them at most this many take requests at once
  std::atomic<uint64_t> waits{0};    // turns given up before a read waited
  std::atomic<uint64_t> parks{0};    // times a worker waited for a turn
  std::string Json() const;          // "workers": {...}
};

// The CPUs this process may run on (at least 1).
int UsableCpus();

// Returns 0 when the session ended by unmount or a signal, -errno of the read from /dev/fuse
// that failed, or -EAGAIN when no worker could be started (fewer serve when only some could).
// The session is not marked ended on return (fuse_session_reset): requests can be served on
// after it (session.cc). `active` <= 0 or >= threads: every worker takes requests.
int RunWorkerLoop(fuse_session* se, int threads, int active, WorkerCounters& counters);

}  // namespace packfs
