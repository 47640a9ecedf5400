// What indexing a shard finds, in either format: the members a pack set can serve (name,
// offsets, size, CRC-32, mode, mtime) and the problems of those it refuses. Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace packfs {

// One member of a shard.
struct ShardMember {
  std::string name;                  // the key (validated)
  uint64_t local_header_offset = 0;  // absolute offset in the shard file
  uint64_t data_offset = 0;          // absolute offset of the first data byte
  uint64_t size = 0;
  uint32_t crc32 = 0;
  uint32_t mode = 0;   // st_mode bits when the entry was made on Unix with a file type, else 0
  int64_t mtime = 0;   // seconds since the epoch (zip: extended timestamp, else DOS time as UTC)
};

// A zip shard's index (ReadZipIndex), or a tar shard's in the same form (IndexShard,
// core/read/shard_format.h: the zip-only fields stay 0).
struct ShardIndex {
  std::vector<ShardMember> members;   // central-directory order; directory entries excluded
  std::vector<std::string> problems;  // one message per refused member, naming shard and member
  uint64_t archive_start = 0;         // bytes of junk before the archive
  uint64_t cd_offset = 0;             // absolute offset of the central directory
  uint64_t cd_size = 0;
  uint64_t cd_entries = 0;            // central entries (including directories); equals the end
                                      // record's count, or wraps to it in a 16-bit field
  uint64_t fingerprint = 0;           // XXH3-64 of the central directory bytes (zip), of the
                                      // header blocks (tar)
};

}  // namespace packfs
