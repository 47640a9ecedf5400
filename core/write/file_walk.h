// Turning a source tree or a file list into PackInputs: keys, sizes, modification times.
// Pure functions over the filesystem (no shared state); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/write/pack_input.h"

namespace packfs {

struct WalkOptions {
  // Follow symbolic links that point to regular files (links to directories are never followed,
  // so a walk cannot loop). Without it every symlink is skipped and counted.
  bool follow_symlinks = false;
};

struct InputList {
  std::vector<PackInput> inputs;
  uint64_t skipped_symlinks = 0;   // symlinks not followed (or dangling / not to a regular file)
  uint64_t skipped_special = 0;    // FIFOs, sockets, devices
  std::vector<std::string> missing;  // --files-from entries that do not exist (skip mode)
};

// Every regular file under `root`, key = path relative to `root`, sorted by key bytes.
// Unsafe names (ValidateKey) fail the walk once it is complete, with one message that lists the
// first 20 such files (and how many more there are).
Result<InputList> WalkTree(const std::string& root, const WalkOptions& opts);

enum class MissingPolicy { kError, kSkip };

// Parses a file list: one entry per line, "path" or "key<TAB>path" (a line with a tab is split at
// its last tab, so keys may hold tabs but such paths may not). Relative paths are relative to
// `root` (the current directory when `root` is empty). Without an explicit key, the key is the
// path relative to `root`; an absolute path outside `root` then needs the key<TAB>path form.
// Entries keep the list's order. Empty lines are ignored. Listed symlinks are followed.
// A missing file fails the call naming it (kError) or is collected in `missing` (kSkip); a
// duplicate key fails naming both lines; unsafe keys fail the call once the list is read, all
// listed in one message (the first 20, and how many more).
Result<InputList> ReadFileList(const std::string& text, const std::string& root,
                               MissingPolicy missing);

}  // namespace packfs
