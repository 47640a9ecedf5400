// Decoders of Parquet's delta and split value encodings (internal to parquet_pages):
// DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT, as
// parquet-format's Encodings.md defines them. Each reads exactly the n values the page holds,
// checks every count and length against the bytes present before using it, and charges decoded
// bytes to *bytes_used, failing once it passes max_bytes. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace packfs::parquet {

// DELTA_BINARY_PACKED: appends the n values of the stream at the start of `data` to *out
// (arithmetic wraps at 32 bits when `int32`) and returns the bytes the stream occupies. A stream
// whose header counts other than n values is Corruption.
Result<size_t> DecodeDeltaBinaryPacked(std::span<const uint8_t> data, uint64_t n, bool int32,
                                       uint64_t max_bytes, uint64_t* bytes_used,
                                       std::vector<int64_t>* out);

// DELTA_LENGTH_BYTE_ARRAY: n lengths (DELTA_BINARY_PACKED), then the n byte strings back to back.
// Returns the bytes used.
Result<size_t> DecodeDeltaLengthByteArray(std::span<const uint8_t> data, uint64_t n,
                                          uint64_t max_bytes, uint64_t* bytes_used,
                                          std::vector<std::string>* out);

// DELTA_BYTE_ARRAY: n prefix lengths, then the n suffixes as DELTA_LENGTH_BYTE_ARRAY; each value
// is the previous value's prefix followed by its suffix. Returns the bytes used.
Result<size_t> DecodeDeltaByteArray(std::span<const uint8_t> data, uint64_t n, uint64_t max_bytes,
                                    uint64_t* bytes_used, std::vector<std::string>* out);

// BYTE_STREAM_SPLIT: `data` holds exactly `width` streams of n bytes; *plain receives the n values
// re-interleaved, i.e. their PLAIN encoding.
Status UnsplitByteStreams(std::span<const uint8_t> data, uint64_t n, size_t width,
                          std::vector<uint8_t>* plain);

}  // namespace packfs::parquet
