// Decoding of one Parquet column chunk's pages (internal to parquet_reader): DATA_PAGE (v1),
// DATA_PAGE_V2 and DICTIONARY_PAGE; codecs UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW
// (parquet_codecs); values PLAIN, dictionary, RLE (BOOLEAN), DELTA_BINARY_PACKED,
// DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT (parquet_encodings);
// RLE/bit-packed levels. Anything else is NotSupported, never guessed. Pure functions over bytes
// already read; messages do not name the file or column (the caller prefixes them).
// Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/lerobot/parquet_codecs.h"
#include "core/lerobot/parquet_thrift.h"

namespace packfs::parquet {

// One leaf column as the schema describes it.
struct LeafShape {
  int32_t type = 0;       // PhysicalType
  uint32_t max_def = 0;   // definition level of a present value
  uint32_t max_rep = 0;   // 0 for a flat column
};

// Levels and non-null values of a column, appended page by page. Numbers land in `ints` (INT32,
// INT64, BOOLEAN) or `doubles` (FLOAT, DOUBLE), strings in `strings` (BYTE_ARRAY).
struct ColumnValues {
  std::vector<uint32_t> def;  // one per level entry; empty when max_def == 0
  std::vector<uint32_t> rep;  // one per level entry; empty when max_rep == 0
  uint64_t num_levels = 0;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::vector<std::string> strings;
};

// Caps on what one column read may materialize, so a small hostile file cannot ask for gigabytes
// (run-length encoding lets a few bytes declare billions of values).
struct DecodeLimits {
  uint64_t max_values = 0;       // level entries
  uint64_t max_value_bytes = 0;  // 8 per number, the length of each string
  uint64_t max_page_bytes = 0;   // one page's declared uncompressed size
};

// Names for messages: "DELTA_BINARY_PACKED", "INT96", ... (CodecName is in parquet_codecs.h).
std::string EncodingName(int32_t encoding);
std::string TypeName(int32_t type);

// Decodes the pages of one column chunk (`chunk` holds its bytes, from its first page) and
// appends to *out. `bytes_used` accumulates the value bytes counted against limits.
Status DecodeColumnChunk(std::span<const uint8_t> chunk, const ColumnMetaData& meta,
                         const LeafShape& shape, const DecodeLimits& limits, ColumnValues* out,
                         uint64_t* bytes_used);

}  // namespace packfs::parquet
