// Reading one zip local file header (and, for data-descriptor members, checking the descriptor
// after the data). Private to zip_reader.cc. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/shard_source.h"
#include "core/status.h"

namespace packfs {

struct LocalHeader {
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;  // from the ZIP64 extra when the 32-bit field is masked
  uint64_t size = 0;
  bool sizes_masked = false;     // 0xFFFFFFFF size fields (values from the ZIP64 extra)
  bool sizes_known = true;       // false when masked without a usable ZIP64 extra
  std::string name;
  uint64_t data_offset = 0;      // absolute
  bool extra_well_formed = true; // extra parses as (id, len, data) records filling its length
};

// Reads the local header at absolute offset `offset`. `name_hint` is the name length the central
// entry expects; the header is read with one ReadAt of 30 + name_hint + 256 bytes, and a second
// read only when the local extra is longer. Corruption (with a message that does not name the
// shard; callers add it) when the header is truncated or its signature is wrong.
Result<LocalHeader> ReadLocal(const ShardSource& src, uint64_t offset, size_t name_hint);

// The length (12, 16, 20 or 24) of the data descriptor matching crc/size at absolute offset
// `at` (optional signature, crc32, then 4- or 8-byte compressed and uncompressed sizes), ending
// at or before `limit`; 0 when none matches.
Result<size_t> DataDescriptorLength(const ShardSource& src, uint64_t at, uint64_t limit,
                                    uint32_t crc32, uint64_t size);

// CRC-32 of `size` bytes at absolute offset `offset`, read in bounded chunks.
Result<uint32_t> CrcOfRange(const ShardSource& src, uint64_t offset, uint64_t size);

}  // namespace packfs
