// Decompression of Parquet page bodies: UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW (internal to
// the parquet_* units). The declared uncompressed size is checked against the caller's cap and
// against the most the codec can expand its input before any buffer is allocated, so a few hostile
// bytes cannot ask for gigabytes. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace packfs::parquet {

// Returns `body` decoded with `codec` (a CompressionCodec number), exactly `uncompressed_size`
// bytes, stored in *storage unless the codec is UNCOMPRESSED (then `body` itself). Fails with
// NotSupported for other codecs or a size over `max_bytes`, and with Corruption for bad data, a
// size that differs from what the data decodes to, or one the codec could not reach from
// body.size() bytes. Messages name the codec, not the file.
Result<std::span<const uint8_t>> Decompress(std::span<const uint8_t> body, int32_t codec,
                                            int64_t uncompressed_size, uint64_t max_bytes,
                                            std::vector<uint8_t>* storage);

// "SNAPPY", "GZIP", "ZSTD", ... or "#<n>" for numbers parquet.thrift does not name.
std::string CodecName(int32_t codec);

}  // namespace packfs::parquet
