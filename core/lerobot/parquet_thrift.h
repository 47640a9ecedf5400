// Parquet's Thrift structures (the file footer and page headers), decoded from the Thrift compact
// protocol. Only the fields packfs reads are kept; every other field is skipped. Decoding is pure,
// bounds-checked against the given span and never allocates more than the span could describe, so
// hostile bytes yield a Corruption status, not a crash. Thread-compatible (plain values).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace packfs::parquet {

// Type codes of Thrift's compact protocol, in which parquet's footer and page headers are
// encoded: read by parquet_thrift.cc, written by parquet_writer.cc.
enum ThriftType : uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDoubleT = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

// Enumerations as numbered in parquet.thrift.
enum PhysicalType : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};
enum Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };
enum Codec : int32_t {
  kUncompressed = 0,
  kSnappy = 1,
  kGzip = 2,
  kLzo = 3,
  kBrotli = 4,
  kLz4 = 5,
  kZstd = 6,
  kLz4Raw = 7,
};
enum PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };
enum Encoding : int32_t {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9,
};
constexpr int32_t kConvertedList = 3;  // ConvertedType.LIST

struct SchemaElement {
  std::optional<int32_t> type;        // physical type; absent for groups
  std::optional<int32_t> repetition;  // absent only for the root
  std::string name;
  int32_t num_children = 0;
  std::optional<int32_t> converted_type;
  bool logical_list = false;  // LogicalType.LIST
};

struct ColumnMetaData {
  int32_t type = 0;
  std::vector<std::string> path_in_schema;
  int32_t codec = 0;
  int64_t num_values = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
};

struct ColumnChunk {
  std::string file_path;  // non-empty: the data lives in another file (unsupported)
  std::optional<ColumnMetaData> meta;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t num_rows = 0;
};

struct FileMetaData {
  int32_t version = 0;
  std::vector<SchemaElement> schema;  // depth-first, root first
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::string created_by;
};

struct DataPageHeader {
  int32_t num_values = 0;
  int32_t encoding = 0;
  int32_t definition_level_encoding = 0;
  int32_t repetition_level_encoding = 0;
};

// DATA_PAGE_V2: levels come first, uncompressed and without length prefixes (their lengths are
// here); only the values after them are compressed, and only when is_compressed.
struct DataPageHeaderV2 {
  int32_t num_values = 0;  // level entries, nulls included
  int32_t num_nulls = 0;
  int32_t num_rows = 0;
  int32_t encoding = 0;
  int32_t definition_levels_byte_length = 0;
  int32_t repetition_levels_byte_length = 0;
  bool is_compressed = true;  // the Thrift default
};

struct DictionaryPageHeader {
  int32_t num_values = 0;
  int32_t encoding = 0;
};

struct PageHeader {
  int32_t type = 0;
  int32_t uncompressed_page_size = 0;
  int32_t compressed_page_size = 0;
  std::optional<DataPageHeader> data;
  std::optional<DictionaryPageHeader> dictionary;
  std::optional<DataPageHeaderV2> data_v2;
};

// Decodes the footer's FileMetaData occupying all of `bytes`. Messages do not name the file; the
// caller adds it.
Result<FileMetaData> DecodeFileMetaData(std::span<const uint8_t> bytes);

// Decodes the page header at the start of `bytes`; *header_size receives its encoded length.
Result<PageHeader> DecodePageHeader(std::span<const uint8_t> bytes, size_t* header_size);

}  // namespace packfs::parquet
