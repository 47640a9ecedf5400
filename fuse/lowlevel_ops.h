// The libfuse3 low-level operations of packfs: each callback translates one kernel request into a
// Filesystem call and the result into a reply. The errno a failure carries is chosen in core,
// where the error is made (Status::err(): ENOENT for a missing key, EIO for a changed shard, ...);
// a reply sends it as it is, or EIO for a status that carries none (ErrnoOf).
//
// Thread-safety: callbacks run on any worker of the multi-threaded session loop at once; they keep
// no state of their own beyond the SessionState reached through fuse_req_userdata, which the
// caller owns and keeps alive (unchanged, apart from its atomics, its thread-safe read buffers
// and listing parts) until the session is destroyed.
// No C++ exception leaves a callback: each catches everything and replies EIO.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <atomic>
#include <functional>
#include <memory>

#include "core/base/status.h"
#include "core/read/filesystem.h"
#include "fuse/listing_ahead.h"
#include "fuse/logger.h"
#include "fuse/push.h"
#include "fuse/read_buffers.h"

namespace packfs {

class UringTransport;

struct ServeConfig {
  // Nothing in a mount ever changes, so the kernel may keep names, attributes and negative
  // lookups for as long as it likes (a year); every cached answer saves a request.
  double entry_timeout = 365.0 * 86400;
  double attr_timeout = 365.0 * 86400;
  double negative_timeout = 365.0 * 86400;
  // Reply to reads from the shard fd (splice when the kernel allows; through the ring, read
  // straight into its buffer), or from a remote shard's cached blocks (one writev).
  bool zero_copy = true;
  bool splice = true;      // ask for FUSE_CAP_SPLICE_WRITE|MOVE
  // Reads smaller than this are copied (pread + write: fewer system calls than a splice
  // through a pipe); larger ones are zero-copy (or lent, from a remote shard).
  size_t zero_copy_min = 128 * 1024;
  // Reads through /dev/fuse larger than this are copied too: what libfuse cannot splice it
  // copies through a fresh allocation per reply (packfs sets it from what a pipe can hold,
  // fuse/read_ahead.h). Reads through the ring are bounded by its buffer instead.
  size_t zero_copy_max = SIZE_MAX;
  // Answer OPEN and OPENDIR with ENOSYS where the kernel supports it (-o open: answer them).
  bool no_open = true;
  // A LOOKUP of a file up to this size starts reading its bytes into the page cache (0: never).
  uint64_t prefetch_max = 1u << 20;
  // Largest READ we ask the kernel for (1 MiB: large members stream at disk speed). It is
  // also the max_read mount option, which libfuse wants repeated in INIT.
  unsigned max_read = 1u << 20;
  // The kernel's read-ahead for the mount (bytes): up to 128 KiB it is asked for in INIT, more is
  // set through sysfs once INIT is through (as root; fuse/read_ahead.h). 512 KiB against 1008
  // (max_read): cold LeRobot episodes of 1.8 MB 1.1-1.45x as fast (5 interleaved rounds, 1 MiB
  // and 32 KiB reads), 150 files of 1-8 MB the same, a 1 GiB member 1.05-1.2x cold and the same
  // from a cached shard (3 rounds; 2026-12-05).
  uint32_t read_ahead = 512u << 10;
  // A READ that reaches the end of a file pushes the files that follow it in its shard, up to
  // this many bytes from the read's start, into the kernel's page cache (fuse/push.h; 0: off).
  // 1 MiB: in an epoch after a scan, 24k files/s with 2 readers against 19-20k at 256 KiB and
  // 24k at 512 KiB (30,000 files of 4-32 KiB; tenth-of-a-set passes push nothing either way).
  uint64_t push_window = 1u << 20;
  // Once a directory is ready for pushing, a thread walks it in shard order and pushes every
  // file the kernel holds and has not been given (Pusher::StartWalks; -o nowalk: off).
  bool walk_dirs = true;
  // Once a directory is ready for pushing, a thread lists it through the mount, so that the rest
  // of its files are opened without a LOOKUP and can be pushed (fuse/dir_lister.h; -o nolist:
  // off).
  bool list_dirs = true;
};

struct SessionState {
  const Filesystem* fs = nullptr;
  const Logger* log = nullptr;
  ServeConfig config;
  // Set by INIT from the kernel's capabilities.
  std::atomic<bool> no_open_supported{false};
  std::atomic<bool> no_opendir_supported{false};
  // Buffers for replies that are copied (remote and small reads), shared by the workers.
  // Shared with main's stats attribute (SessionParams::read_buffers).
  std::shared_ptr<ReadBuffers> read_buffers = std::make_shared<ReadBuffers>();
  // Called once from the INIT callback: the mount now answers requests.
  std::function<void()> on_ready;
  // The io_uring transport when the mount has one (its session hooks find it here).
  UringTransport* uring = nullptr;
  // The session, for notifications (set before the mount answers).
  fuse_session* se = nullptr;
  // Pushes followers of a read into the kernel's cache (null when config.push_window is 0).
  std::unique_ptr<Pusher> pusher;
  // Where the mount is (as /proc/self/mountinfo shows it), and whether its read-ahead is still
  // to be raised to config.read_ahead by the first request after INIT (fuse/read_ahead.h).
  std::string mountpoint;
  std::atomic<bool> read_ahead_pending{false};
  // The mount's device ("MAJ:MIN", fuse/read_ahead.h MountDevice), looked up once it is mounted,
  // before any request is served; empty when unknown.
  std::string device;
  // The next part of each directory listing under way (thread-safe; shared with main's stats
  // attribute, SessionParams::listing_ahead).
  std::shared_ptr<ListingAhead> listing_ahead = std::make_shared<ListingAhead>();
};

// The operation table (read-only ops implemented; every mutating op replies EROFS).
fuse_lowlevel_ops MakeLowlevelOps();

// The errno a reply carries for a failed core call (positive; EIO when the status has none).
int ErrnoOf(const Status& status);

}  // namespace packfs
