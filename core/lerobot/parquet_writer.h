// A small Parquet writer: flat REQUIRED/OPTIONAL columns of BOOLEAN, INT32, INT64, FLOAT, DOUBLE
// and BYTE_ARRAY (optionally UTF8) values, and 3-level LISTs of them in Arrow's layout
// (`<name>` LIST group / repeated group `list` / `element`); key-value metadata in the footer.
// Pure functions over values in memory; thread-safe (no shared state).
//
// The layout is deterministic so that a file's size can be known without writing it (a mount
// stats thousands of virtual files before anyone reads one): UNCOMPRESSED, PLAIN values, no
// statistics, no dictionary, one DATA_PAGE (v1) per column chunk, row groups of a fixed number
// of rows, and levels in the RLE/bit-packed hybrid chosen by one rule (a page whose levels are
// all equal is one RLE run, any other page one bit-packed run). Every Thrift integer is then a
// function of the row count, so ParquetFileSize computes the exact size of a file whose columns
// are all fixed-width without nulls by encoding the footer and page headers alone.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/lerobot/parquet_pages.h"
#include "core/lerobot/parquet_thrift.h"

namespace packfs::parquet {

// One top-level column of the file.
struct WriterColumn {
  std::string name;
  int32_t type = kInt64;  // kBoolean, kInt32, kInt64, kFloat, kDouble or kByteArray
  bool utf8 = false;      // BYTE_ARRAY annotated as a UTF8 string
  // ConvertedType of an INT32 leaf holding narrower integers (INT_8 = 15, INT_16 = 16, UINT_8 =
  // 11, UINT_16 = 12), so readers give back the width written; nullopt: none.
  std::optional<int32_t> int_converted_type;
  bool optional = true;   // the value (or the whole list) may be null, as Arrow writes nullable
  bool list = false;      // a 3-level LIST of `type` elements
  bool element_optional = true;  // lists: an element may be null
  // Lists: every row holds exactly this many elements, none null and no null list. Set it to let
  // ParquetFileSize size the column from the row count; the writer checks the data keeps it.
  std::optional<uint32_t> fixed_length;
};

struct WriterOptions {
  uint64_t row_group_rows = 1000;
  std::vector<std::pair<std::string, std::string>> key_value_metadata;  // footer, in order
  std::string created_by = "packfs parquet_writer";
};

// The definition/repetition levels of a column's leaf.
LeafShape WriterLeafShape(const WriterColumn& column);

// Column c's levels and values for every row of the file, in the reader's ColumnValues form:
// `def` (when max_def > 0) and `rep` (when max_rep > 0) one per level entry, num_levels set, and
// the non-null values in `ints` (BOOLEAN as 0/1, INT32, INT64), `doubles` (FLOAT, DOUBLE; FLOAT
// values are written as float) or `strings` (BYTE_ARRAY). The writer may move from it.
using ColumnSupplier = std::function<Result<ColumnValues>(size_t column)>;

// Writes a whole file of `num_rows` rows. The supplier is called once per column, in order, and
// each column is encoded before the next is asked for, so peak memory is the output plus one
// column's values. Fails with InvalidArgument naming the column when the supplied levels or
// values do not fit the schema or the row count (or break fixed_length), with the supplier's
// status when it fails.
Result<std::vector<uint8_t>> WriteParquetFile(const std::vector<WriterColumn>& columns,
                                              uint64_t num_rows, const WriterOptions& options,
                                              const ColumnSupplier& supply);

// The exact size WriteParquetFile gives for `num_rows` rows of any values, when every column is
// fixed-width with no nulls: not BYTE_ARRAY, and lists with fixed_length. For other schemas the
// size depends on the data: NotSupported, saying the file must be built to know it.
Result<uint64_t> ParquetFileSize(const std::vector<WriterColumn>& columns, uint64_t num_rows,
                                 const WriterOptions& options);

}  // namespace packfs::parquet
