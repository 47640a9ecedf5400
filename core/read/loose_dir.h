// Loose directories as pack sets: every regular file under a directory served as a member of its
// own (one "shard" per file, read at offset 0), so a dataset kept as plain files (a LeRobot
// dataset's meta/, data/ and videos/) mounts through the same Filesystem as packed ones.
//
// Thread-safety: the returned PackSet is safe for concurrent use like any other; files are opened
// lazily through its bounded pool and checked against the size and mtime seen at open (a file
// changed since gives EIO and a message saying to remount).
#pragma once

#include <memory>
#include <string>

#include "core/base/status.h"
#include "core/read/pack_set.h"

namespace packfs {

// Serves the regular files under `dir` (symlinks and special files skipped, counted in
// warnings). Keys are paths relative to `dir`; an unsafe name fails naming the file.
// `ref_prefix` prefixes file paths in references and xattrs ("" = the directory's base name).
Result<std::unique_ptr<PackSet>> OpenLooseDirectory(const std::string& dir,
                                                    const std::string& ref_prefix);

}  // namespace packfs
