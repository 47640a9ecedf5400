// DirLister: lists a directory of the mount through the mount itself, so that the kernel holds an
// entry and an inode for each of its files before they are opened.
//
// Why: by path (no listing first) the kernel learns of a file only at its LOOKUP, which comes
// right before its READ: two round trips a file, and nothing to push into (fuse/push.h). Once a
// directory is known to be read through (the push rule: 15% of it served), the rest of it will be
// opened too. Listing it then costs a few READDIRPLUS requests (hundreds of entries each), after
// which its files are opened without a LOOKUP (entries are valid for the mount's life), and,
// known, they can be pushed before their reader comes (the walk of a ready directory), so they
// need no READ either. Measured: see fuse/push.h. Where memory is short (no room for the
// inodes) nothing is listed: in a 179 MiB memory cgroup, listing anyway gained nothing and had
// pushed files evicted before their read.
//
// How: opendir and getdents64 of <mountpoint>/<directory's path>, on a thread that serves no
// requests (the pusher's list thread), which the mount's own workers answer. The mount is
// recognised before its first listing: its root's user.packfs.stats names this process ("pid"),
// and every directory opened must be on the same device as that root, so a mount stacked on the
// mountpoint later, or a path that leads elsewhere, is never listed. Each listing goes through a
// detached clone of the mount (open_tree(2), OPEN_TREE_CLONE, as root), not the mount itself:
// an unmount while it runs (3-5 ms for 1,000 entries) then goes through, and the daemon ends
// when the listing lets the clone go. Without CAP_SYS_ADMIN the listing holds the directory open
// on the mount itself, and an unmount at that moment fails as busy.
//
// Thread-safety: one thread calls List (not safe for concurrent use).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/base/status.h"
#include "core/base/unique_fd.h"

namespace packfs {

class DirLister {
 public:
  // The path of directory `dir` relative to the mount's root (Filesystem::DirPath).
  using PathOf = std::function<std::optional<std::string>(uint64_t dir)>;
  // `mountpoint`: absolute, symbolic links resolved.
  DirLister(std::string mountpoint, PathOf path_of);

  // Lists directory `dir` through the mount; returns the entries read. Fails (naming why) when
  // the mount cannot be recognised, or the directory cannot be opened or read; after the mount
  // was not recognised once, every later call fails at once.
  Result<uint64_t> List(uint64_t dir);

 private:
  Status Recognise();
  // The mount's root: a detached clone of the mount where this process may make one, else the
  // mountpoint.
  UniqueFd OpenRoot();

  std::string mountpoint_;
  PathOf path_of_;
  std::optional<Status> recognised_;  // the outcome of Recognise, once tried
  dev_t dev_ = 0;                     // the mount's device, once recognised
  bool clone_ = true;                 // open_tree clones worked (or were not tried yet)
};

}  // namespace packfs
