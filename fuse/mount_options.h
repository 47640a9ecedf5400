// Mount options: splits `-o a,b=c` lists into what packfs handles itself (uid=, gid=, umask=,
// catalog=, on_collision=, threads=, active_threads=, log=, read_ahead=, nozerocopy, nosplice,
// noprefetch, push=, nopush, nostream, nocrc, nonempty, open, io_uring, noio_uring) and what goes
// to libfuse and the kernel (allow_other, max_read=, ...), dropping what only mount(8) and fstab
// use (defaults, noauto, nofail, _netdev, user, x-*, ...). Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace packfs {

struct MountOptions {
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint32_t> umask;
  std::optional<std::string> catalog;       // path, or "none"
  std::optional<std::string> on_collision;  // "error" | "first" | "last"
  std::optional<std::string> log;           // -o log=FILE
  std::optional<int> threads;
  // -o active_threads=N: of the workers, at most N take requests at once (0: all of them; unset:
  // the CPUs; fuse/worker_loop.h).
  std::optional<int> active_threads;
  std::optional<uint32_t> max_read;         // -o max_read=N (libfuse needs it in INIT too)
  std::optional<uint32_t> read_ahead;       // -o read_ahead=SIZE (bytes)
  bool zero_copy = true;
  bool splice = true;
  bool no_open = true;
  // FUSE io_uring: unset = where the kernel allows it, quietly; true (-o io_uring) = asked for,
  // a warning when refused; false (-o noio_uring) = /dev/fuse only.
  std::optional<bool> io_uring;
  bool prefetch = true;                     // -o noprefetch: no read-ahead at lookup
  bool stream = true;                       // -o nostream: no directory streaming
  bool walk = true;                         // -o nowalk: no walks of ready directories
  bool list = true;                         // -o nolist: no listings of ready directories
  bool block_gets = true;                   // -o exact_gets: remote small files fetched exactly
  std::optional<uint64_t> push_window;      // -o push=SIZE (bytes), -o nopush (0)
  bool crc = true;                          // -o nocrc: no CRC-32 checks of members
  bool debug = false;                       // -o debug
  bool nonempty = false;                    // -o nonempty: no warning for a non-empty mountpoint
  std::vector<std::string> fuse_options;    // passed on, in order
};

// Adds the options of one `-o` argument to `out`. Fails on malformed values (uid=abc, umask=9).
Status ParseMountOptions(std::string_view list, MountOptions* out);

// The option string for libfuse: the passed-on options plus what every packfs mount uses
// (ro, default_permissions, fsname=<fsname>, subtype=packfs, max_read=<max_read>).
std::string FuseOptionString(const MountOptions& opts, const std::string& fsname,
                             uint32_t max_read);

}  // namespace packfs
