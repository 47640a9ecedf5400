// A small Parquet reader for the metadata tables of LeRobot datasets: opens the footer of a file
// read through a ShardSource (a loose file or a member inside a pack set) and reads whole columns
// by dotted path. Supports what pyarrow, parquet-wasm (Rust) and hyparquet-writer write for such
// tables: DATA_PAGE v1 and v2 and DICTIONARY_PAGE; UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW;
// PLAIN, dictionary, RLE (booleans), DELTA_* and BYTE_STREAM_SPLIT encodings; INT32/INT64/FLOAT/
// DOUBLE/BOOLEAN/BYTE_ARRAY leaves, OPTIONAL columns (nulls) and 3-level LISTs (of numbers also
// nested in LISTs, ReadNestedDoubleList). Anything else is a NotSupported status naming the file,
// the column and the feature — never a wrong value. Only the byte ranges of the requested column
// chunks are read (for ReadColumnRows, of the row groups holding the rows).
//
// Thread-safety: a ParquetFile is immutable after Open; its Read* methods may run concurrently
// (the ShardSource contract is thread-safe positional reads).
// Ownership: a ParquetFile keeps a pointer to the ShardSource, which must outlive it.
#pragma once

#include <cstdint>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/lerobot/parquet_pages.h"
#include "core/lerobot/parquet_thrift.h"

namespace packfs {

// Caps on what one read may allocate, checked before allocating (a few bytes of run-length
// encoding or a footer can declare billions of values). The defaults are far above any LeRobot
// metadata file (episodes tables have thousands of rows, data files about a million).
struct ParquetOptions {
  uint64_t max_footer_bytes = uint64_t{64} << 20;
  uint64_t max_column_values = uint64_t{1} << 26;    // level entries per column read
  uint64_t max_column_bytes = uint64_t{1} << 30;     // decoded bytes per column read
  // One page's uncompressed size: writers cut pages at about 1 MiB, so a page declaring more is
  // refused before its buffer is allocated (a zstd page may claim 32768x its compressed size).
  uint64_t max_page_bytes = uint64_t{256} << 20;
};

// Rows [first_row, first_row + count) of one top-level column with a single leaf (a flat column
// or a 3-level LIST), as decoded: the levels and the non-null values (ColumnValues), for callers
// that copy columns (parquet_writer) or interpret levels themselves.
struct ParquetColumnRows {
  std::string leaf_path;  // dotted, e.g. "observation.state.list.element"
  parquet::LeafShape shape;
  bool list = false;  // a 3-level LIST of one repeated group: max_rep is 1
  // Definition level at which a list holds an element (the repeated group's); for a flat column,
  // max_def.
  uint32_t element_def = 0;
  parquet::ColumnValues values;  // level entries of exactly `count` rows
};

// One row of a list of lists (of lists ...) of numbers: the innermost lists hold `values`, the
// others `lists`.
struct ParquetNestedList {
  std::vector<double> values;
  std::vector<ParquetNestedList> lists;
};

class ParquetFile {
 public:
  // Reads and decodes the footer only. Fails with Corruption (bad magic, truncated file, bad
  // footer) or NotSupported (encrypted footer, columns in other files), naming src.name().
  static Result<ParquetFile> Open(const ShardSource& src, const ParquetOptions& options = {});

  const std::string& name() const { return src_->name(); }
  uint64_t num_rows() const { return num_rows_; }
  const std::string& created_by() const { return meta_.created_by; }
  // Dotted leaf paths in schema order, e.g. "episode_index", "tasks.list.element",
  // "videos/observation.images.front/from_timestamp" (names may themselves hold dots).
  std::vector<std::string> column_paths() const;
  bool HasColumn(std::string_view path) const;

  // Flat (non-repeated) columns, one entry per row; nullopt for a null. ReadInt64 accepts INT32,
  // INT64 and BOOLEAN leaves, ReadDouble FLOAT and DOUBLE, ReadString BYTE_ARRAY. A missing column
  // is NotFound; a type mismatch or a repeated column is InvalidArgument.
  Result<std::vector<std::optional<int64_t>>> ReadInt64(std::string_view path) const;
  Result<std::vector<std::optional<double>>> ReadDouble(std::string_view path) const;
  Result<std::vector<std::optional<std::string>>> ReadString(std::string_view path) const;
  // A 3-level LIST of strings named by its top-level group (e.g. "tasks" for leaf
  // "tasks.list.element"), one vector per row. A null list reads as empty; a null element fails.
  Result<std::vector<std::vector<std::string>>> ReadStringList(std::string_view list_column) const;
  // The same for lists of numbers (e.g. LeRobot's "observation.state", a list of 6 FLOATs per
  // frame): ReadInt64List takes INT32/INT64/BOOLEAN elements, ReadDoubleList FLOAT/DOUBLE.
  Result<std::vector<std::vector<int64_t>>> ReadInt64List(std::string_view list_column) const;
  Result<std::vector<std::vector<double>>> ReadDoubleList(std::string_view list_column) const;
  // Lists of FLOAT/DOUBLE nested any number of 3-level LISTs deep (e.g. LeRobot v3's per-episode
  // image stats, list<list<list<double>>> of shape (3,1,1)), named by the top-level group; one
  // per row. At the innermost depth a row reads like ReadDoubleList's. A null list at any depth
  // reads as empty; a null element fails with NotSupported.
  Result<std::vector<ParquetNestedList>> ReadNestedDoubleList(std::string_view list_column) const;

  // The rows [first_row, first_row + count) of the top-level column `column` (see
  // ParquetColumnRows), decoding only the row groups that hold them. A range past num_rows is
  // InvalidArgument; a column of several leaves (a struct) or lists nested in lists is
  // NotSupported; a missing column NotFound. The caps of ParquetOptions apply to the row groups
  // read.
  Result<ParquetColumnRows> ReadColumnRows(std::string_view column, uint64_t first_row,
                                           uint64_t count) const;
  // Rows of each row group, in order.
  std::vector<uint64_t> row_group_rows() const;

 private:
  struct Leaf {
    std::string path;              // dotted
    std::vector<size_t> chain;     // schema indices from the top-level field down to the leaf
    parquet::LeafShape shape;
  };

  ParquetFile(const ShardSource* src, ParquetOptions options, parquet::FileMetaData meta)
      : src_(src), options_(options), meta_(std::move(meta)) {}
  Status BuildLeaves();
  Result<size_t> FindLeaf(std::string_view path) const;
  // Decodes row groups [first_group, end_group) of the leaf (all of them by default).
  Status ReadLeaf(size_t leaf, parquet::ColumnValues* out, size_t first_group = 0,
                  size_t end_group = SIZE_MAX) const;
  Status CheckFlat(const Leaf& leaf, const char* want, bool type_ok) const;
  // The leaf of a 3-level LIST and the definition level of a present element; `type_ok` checks
  // the element type, `want` names it in the message.
  Status FindList(std::string_view list_column, const char* want, bool (*type_ok)(int32_t),
                  size_t* leaf, uint32_t* elem_def) const;
  template <typename T>
  Result<std::vector<std::vector<T>>> AssembleList(std::string_view list_column, size_t leaf,
                                                   uint32_t elem_def,
                                                   parquet::ColumnValues* cv,
                                                   std::vector<T>* values) const;
  std::string Where(const Leaf& leaf) const;

  const ShardSource* src_;
  ParquetOptions options_;
  parquet::FileMetaData meta_;
  uint64_t num_rows_ = 0;
  std::vector<Leaf> leaves_;
};

}  // namespace packfs
