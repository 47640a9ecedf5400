// Locating a zip archive's end records (EOCD, ZIP64 locator and ZIP64 EOCD) and, from them, the
// central directory and the archive start (junk prefix). Private to zip_reader.cc. Stateless;
// thread-safe (reads go through ShardSource::ReadAt).
#pragma once

#include <cstdint>

#include "core/base/shard_source.h"
#include "core/base/status.h"

namespace packfs {

struct ZipEnd {
  uint64_t archive_start = 0;  // bytes before the archive; stored offsets are relative to this
  uint64_t cd_offset = 0;      // absolute offset of the central directory
  uint64_t cd_size = 0;
  uint64_t entries = 0;        // declared entry count, already checked against cd_size
  bool zip64 = false;
};

// Finds the last valid end record by scanning back over at most 22 + 65535 bytes. A candidate
// counts only when its comment reaches exactly the end of the file and its central directory
// starts with a central-header signature; fake records inside comments are skipped. Corruption
// naming the shard when nothing valid is found (the error of the last candidate tried, if any).
Result<ZipEnd> FindZipEnd(const ShardSource& src);

}  // namespace packfs
