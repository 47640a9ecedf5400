// Unpacking a pack set into a directory tree (`mkpack unpack`). Every file is created through
// directory fds opened with O_NOFOLLOW, so nothing is written outside the target, even when the
// target already holds symlinks pointing elsewhere. Bytes are CRC-checked while copied; a bad
// member is removed and reported. Worker threads are started and joined inside UnpackPackSet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/read/pack_set.h"

namespace packfs {

struct UnpackOptions {
  bool force = false;  // replace existing files (a symlink in the way is removed, never followed)
  int threads = 0;     // 0: one per core
};

struct UnpackReport {
  uint64_t files = 0;
  uint64_t bytes = 0;
  std::vector<std::string> problems;  // members not written, with the reason
};

// Without `force`, fails with AlreadyExists naming the first existing target before writing
// anything. I/O errors on the target (ENOSPC, EACCES) stop the run with a Status.
Result<UnpackReport> UnpackPackSet(const PackSet& set, const std::string& out_dir,
                                   const UnpackOptions& opts);

}  // namespace packfs
