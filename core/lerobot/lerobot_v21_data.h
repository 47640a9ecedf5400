// data/chunk-XXX/episode_NNNNNN.parquet of a LeRobot v2.1 view: one episode's rows of a v3.0 data
// file (data/chunk-CCC/file-FFF.parquet, many episodes per file) re-written as LeRobot v2.1 writes
// them (core/lerobot/lerobot_v21_format.md §5): columns in info.json's feature order without video
// features, vectors as fixed-size lists of info's `shape`, and the `huggingface` schema metadata in
// datasets-3 form ({"info": {"features": {...}}} with "_type": "Sequence" and "length": n).
//
// There is deliberately no ARROW:schema key: pyarrow then reads the vectors as plain lists, and
// datasets casts them to the features of the `huggingface` key (fixed-size lists, float32, ...),
// which is what a v2.1 trainer sees. The file is written by parquet_writer (UNCOMPRESSED, PLAIN,
// no statistics; row groups of 1000 rows as v2.1 has) so that its size follows from the schema
// and the row count: a mount can stat every episode file without reading the data.
//
// Pure functions; thread-safe. Sources are read through ShardSource (thread-safe positional
// reads) and must outlive the call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/lerobot/parquet_reader.h"
#include "core/lerobot/parquet_writer.h"

namespace packfs {

// One column of the v2.1 episode files.
struct LeRobotV21DataColumn {
  std::string key;    // feature name = column name
  // info.json dtype: float32, float64, int64, int32, int16, int8, uint16, uint8, bool, string
  std::string dtype;
  uint32_t length = 0;  // vectors: shape[0]
  bool vector = false;  // shape [n] other than [1]: a fixed-size list of n values
};

struct LeRobotV21DataSchema {
  std::vector<LeRobotV21DataColumn> columns;  // info.json feature order
  std::vector<parquet::WriterColumn> writer_columns;  // the same, for parquet_writer
  parquet::WriterOptions writer_options;  // row groups, the huggingface key
};

// The episode file schema from a v3 meta/info.json text. Features of dtype "video" are skipped
// (they live in mp4 files) and so are dtypes v2.1 does not know (e.g. HEAD's "language" list of
// structs, §5.3). Features v2.1 knows but this writer does not write yet — "image" (a struct of
// PNG bytes and path) and shapes of 2 or more dimensions (datasets' Array2D..5D) — are
// NotSupported naming the feature. JSON errors name `info_path_for_messages`.
Result<LeRobotV21DataSchema> LeRobotV21DataSchemaFromInfo(
    std::string_view v3_info_json, const std::string& info_path_for_messages);

// The `huggingface` metadata value written into each file (json.dumps layout, ASCII-escaped).
std::string LeRobotV21HuggingfaceMetadata(const LeRobotV21DataSchema& schema);

// The exact size of an episode file of `rows` rows, from the schema alone, when every column is
// fixed-width (the normal LeRobot case: no "string" feature; nulls are refused when building).
// NotSupported when a string column makes the size depend on the data: the file must then be
// built (LeRobotV21EpisodeParquet) to know its size.
Result<uint64_t> LeRobotV21EpisodeParquetSize(const LeRobotV21DataSchema& schema, uint64_t rows);

// The bytes of the v2.1 episode file holding rows [first_row, first_row + count) of the v3 data
// file `v3_data`. Each column must be in the file with a matching type (float32 <- FLOAT, float64
// <- DOUBLE, int64 <- INT64 or INT32, narrower ints and bool <- INT32/BOOLEAN), as a list of
// exactly `length` values per row for vectors (fixed-size or, in files converted from v2.1,
// variable lists), or flat for scalars. A null, a row whose list length differs from the shape,
// or, when `expect_episode_index` is set, a row whose episode_index differs, is Corruption naming
// the file, the column and the row. A range past the end of the file is InvalidArgument. Memory:
// the output plus one source column of the range.
Result<std::vector<uint8_t>> LeRobotV21EpisodeParquet(
    const LeRobotV21DataSchema& schema, const ShardSource& v3_data, uint64_t first_row,
    uint64_t count, std::optional<int64_t> expect_episode_index = std::nullopt,
    const ParquetOptions& options = {});

// Where each episode's rows are. v3 gives every episode a half-open global row range
// [dataset_from_index, dataset_to_index) over the concatenation of all data files sorted by path;
// the data/chunk_index and data/file_index columns are not used, since converters before lerobot
// 0d1be72dc wrote the previous file's index for the first episode of each file (§5.4).
struct LeRobotV3EpisodeRange {
  int64_t episode_index = 0;
  int64_t from = 0;  // dataset_from_index
  int64_t to = 0;    // dataset_to_index
};
struct LeRobotV3DataFile {
  std::string path;   // for messages, e.g. "data/chunk-000/file-001.parquet"
  uint64_t rows = 0;  // from its footer (ParquetFile::num_rows)
};
struct LeRobotEpisodeRows {
  size_t file = 0;         // index into the data files
  uint64_t first_row = 0;  // row offset inside that file
  uint64_t count = 0;
};

// One entry per episode, in the order given. `files` must be sorted by path. An empty or inverted
// range, a range past the rows of all files, or one that spans two files is Corruption naming the
// episode and saying which metadata disagree. Pass each result to LeRobotV21EpisodeParquet with
// expect_episode_index to check the episode_index column as well.
Result<std::vector<LeRobotEpisodeRows>> LocateLeRobotEpisodes(
    const std::vector<LeRobotV3EpisodeRange>& episodes, const std::vector<LeRobotV3DataFile>& files,
    const std::string& episodes_path_for_messages);

}  // namespace packfs
