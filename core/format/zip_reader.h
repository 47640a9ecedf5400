// Zip shard indexing: finds the end records, walks the central directory, checks every member's
// local header, and returns the STORED members a pack set can serve. Stateless; thread-safe (all
// reads go through ShardSource::ReadAt).
//
// Structural damage (no end record, central directory outside the file, ZIP64 records that point
// nowhere, entry counts that disagree) fails the whole shard. Problems confined to one member
// (compressed or encrypted member, unsafe name, data outside the archive or overlapping another
// member, local header that disagrees with the central entry) refuse that member only: it is left
// out of `members` and described in `problems`, so the rest of the shard stays servable.
// A name repeated inside one shard fails the shard (which copy is meant is ambiguous).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/format/shard_index.h"

namespace packfs {

// Indexes the whole shard. Errors name the shard (src.name()).
Result<ShardIndex> ReadZipIndex(const ShardSource& src);

struct ZipIndexOptions {
  // Bytes read at once where local headers lie close together (small members); 0 reads each
  // header on its own. The result never depends on it, only the number of ReadAt calls.
  size_t read_window = 256 * 1024;
};
Result<ShardIndex> ReadZipIndex(const ShardSource& src, const ZipIndexOptions& options);

// Reads the local header at `local_header_offset` and checks signature, STORED method and that
// its name equals `expected_name`. Returns the absolute data offset. Used before a member's first
// read when offsets come from a catalog.
Result<uint64_t> ReadLocalHeader(const ShardSource& src, uint64_t local_header_offset,
                                 std::string_view expected_name);

}  // namespace packfs

namespace packfs {

// XXH3-64 of the central directory bytes only (reads the end records and the directory, nothing
// else): the shard fingerprint a catalog records.
Result<uint64_t> ZipFingerprint(const ShardSource& src);

}  // namespace packfs
