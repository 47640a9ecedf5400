// Shard formats of a pack set: STORED zip shards (pack-NNNN.zip) and tar shards (*.tar), chosen by
// file name. Dispatches indexing, fingerprinting and the per-member header check to the zip or
// tar reader so pack sets, catalogs and the shard pool treat both alike. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/catalog/catalog.h"
#include "core/format/zip_reader.h"

namespace packfs {

enum class ShardFormat { kZip, kTar };

ShardFormat ShardFormatOf(std::string_view file_name);

// Indexes a shard into the zip index shape a catalog is built from. For tar shards the members'
// local_header_offset is the start of their tar header chain and crc32 is 0 (tar records none;
// indexing reads headers only).
Result<ShardIndex> IndexShard(const ShardSource& src, std::string_view file_name);

// The fingerprint a catalog records for the shard (zip: central directory; tar: header blocks).
Result<uint64_t> ShardFingerprint(const ShardSource& src, std::string_view file_name);

// The once-per-member header check: the header(s) in front of `file`'s data still describe
// member `key` at the catalog's offsets, and (zip) its data lies inside the shard. A mismatch is
// a non-OK status describing it (PackSet adds the shard, the key and how to refresh).
Status CheckShardMember(const ShardSource& src, std::string_view file_name, std::string_view key,
                        const Node& file);

}  // namespace packfs
