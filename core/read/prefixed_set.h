// A pack set shown under a directory prefix: every file of `set` at prefix + its key (the
// LeRobot v2.1 view serves the v3 dataset under "v3/"), the bytes read from `set`'s own shards.
//
// Thread-safety: the returned PackSet is safe for concurrent use. It shares ownership of `set`,
// which it reads through (`set`'s pool validates every shard it opens).
#pragma once

#include <memory>
#include <string>

#include "core/base/status.h"
#include "core/read/pack_set.h"

namespace packfs {

// The files of `set` under `prefix` (a relative directory path ending in "/", e.g. "v3/"), with
// their sizes, modes and mtimes. Each file is a whole source of the result (as loose files are),
// read through set->MemberSource, so a zip or tar member keeps its once-per-member local header
// check under its own key; but the Filesystem does not check zip CRC-32s of these files and they
// carry no blob reference (user.packfs.ref), as for loose files. `set`'s warnings become the
// result's. Costs one pass over the members at open and an in-memory catalog of them.
Result<std::unique_ptr<PackSet>> OpenPrefixedSet(std::shared_ptr<const PackSet> set,
                                                 const std::string& prefix);

}  // namespace packfs
