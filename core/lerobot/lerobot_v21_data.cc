// v2.1 episode parquet files from v3 data files: the schema from info.json, the huggingface
// metadata, the per-column normalisation of source levels (ParquetFile::ReadColumnRows) into
// fixed-size lists without nulls, and the location of each episode's rows.
#include "core/lerobot/lerobot_v21_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <utility>

#include "core/lerobot/python_json.h"

namespace packfs {
namespace {

using OrderedJson = nlohmann::ordered_json;
using parquet::ColumnValues;
using parquet::WriterColumn;

// A dtype v2.1 knows for a data column: its physical type and the integer range it must hold.
struct DtypeInfo {
  const char* name;
  int32_t type;
  std::optional<int32_t> converted;  // ConvertedType of a narrow INT32
  int64_t min;
  int64_t max;
};

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

const DtypeInfo* FindDtype(std::string_view dtype) {
  static constexpr DtypeInfo kDtypes[] = {
      {"float32", parquet::kFloat, std::nullopt, 0, 0},
      {"float64", parquet::kDouble, std::nullopt, 0, 0},
      {"int64", parquet::kInt64, std::nullopt, kI64Min, kI64Max},
      {"int32", parquet::kInt32, std::nullopt, INT32_MIN, INT32_MAX},
      {"int16", parquet::kInt32, 16, INT16_MIN, INT16_MAX},
      {"int8", parquet::kInt32, 15, INT8_MIN, INT8_MAX},
      {"uint16", parquet::kInt32, 12, 0, UINT16_MAX},
      {"uint8", parquet::kInt32, 11, 0, UINT8_MAX},
      {"bool", parquet::kBoolean, std::nullopt, 0, 1},
      {"string", parquet::kByteArray, std::nullopt, 0, 0},
  };
  for (const auto& d : kDtypes) {
    if (dtype == d.name) return &d;
  }
  return nullptr;
}

std::string RowText(const std::string& file, const std::string& column, uint64_t row) {
  return "v3 data file " + file + ", column " + column + ", row " + std::to_string(row);
}

// Rows [first, first + count) of one feature as the writer column wants them: every value
// present, vectors with exactly `length` elements.
Result<ColumnValues> EpisodeColumn(const ParquetFile& f, const LeRobotV21DataColumn& col,
                                   const WriterColumn& wc, uint64_t first, uint64_t count) {
  const std::string where = "v3 data file " + f.name() + ", column " + col.key;
  PACKFS_ASSIGN_OR_RETURN(ParquetColumnRows rows, f.ReadColumnRows(col.key, first, count));
  const DtypeInfo& dt = *FindDtype(col.dtype);
  const int32_t src = rows.shape.type;
  const bool type_ok = src == dt.type || (dt.type == parquet::kInt64 && src == parquet::kInt32);
  if (!type_ok) {
    return Status::NotSupported(where + " holds " + parquet::TypeName(src) +
                                " values, but info.json says dtype " + col.dtype +
                                " (stored as " + parquet::TypeName(dt.type) +
                                "); packfs does not convert between types");
  }
  if (rows.list != col.vector) {
    return Status::NotSupported(
        where + (rows.list ? " is a list, but info.json's shape says a single value"
                           : " is a single value, but info.json's shape says a vector of " +
                                 std::to_string(col.length)));
  }
  ColumnValues in = std::move(rows.values);
  ColumnValues out;
  const uint32_t max_def = rows.shape.max_def;
  if (!col.vector) {
    for (uint64_t i = 0; i < in.num_levels; ++i) {
      if (max_def > 0 && in.def[i] != max_def) {
        return Status::Corruption(RowText(f.name(), col.key, first + i) +
                                  " is null; a LeRobot v2.1 feature has a value in every row");
      }
    }
    out.def.assign(in.num_levels, parquet::WriterLeafShape(wc).max_def);
    out.num_levels = in.num_levels;
  } else {
    const uint32_t n = col.length;
    uint64_t row = 0, have = 0;
    auto end_row = [&]() -> Status {
      if (have != n) {
        return Status::Corruption(RowText(f.name(), col.key, first + row - 1) + " holds " +
                                  std::to_string(have) + " values, but info.json's shape says " +
                                  std::to_string(n));
      }
      return Status::OK();
    };
    for (uint64_t i = 0; i < in.num_levels; ++i) {
      if (in.rep[i] == 0) {
        if (row > 0) PACKFS_RETURN_IF_ERROR(end_row());
        ++row;
        have = 0;
      }
      if (in.def[i] < rows.element_def) continue;  // a null or empty list
      if (in.def[i] != max_def) {
        return Status::Corruption(RowText(f.name(), col.key, first + row - 1) +
                                  " holds a null element");
      }
      ++have;
    }
    if (row > 0) PACKFS_RETURN_IF_ERROR(end_row());
    const parquet::LeafShape ws = parquet::WriterLeafShape(wc);
    if (n == 0) {
      out.def.assign(count, ws.max_def - 2);  // empty lists
      out.rep.assign(count, 0);
      out.num_levels = count;
    } else {
      out.def.assign(count * n, ws.max_def);
      out.rep.assign(count * n, 1);
      for (uint64_t r = 0; r < count; ++r) out.rep[r * n] = 0;
      out.num_levels = count * n;
    }
  }
  if (dt.type == parquet::kInt32 || dt.type == parquet::kBoolean) {
    for (size_t i = 0; i < in.ints.size(); ++i) {
      if (in.ints[i] < dt.min || in.ints[i] > dt.max) {
        return Status::Corruption(where + ": value " + std::to_string(in.ints[i]) +
                                  " is out of the range of dtype " + col.dtype);
      }
    }
  }
  out.ints = std::move(in.ints);
  out.doubles = std::move(in.doubles);
  out.strings = std::move(in.strings);
  return out;
}

Status CheckEpisodeIndex(const ParquetFile& f, uint64_t first, uint64_t count, int64_t want) {
  PACKFS_ASSIGN_OR_RETURN(ParquetColumnRows rows, f.ReadColumnRows("episode_index", first, count));
  if (rows.list) {
    return Status::Corruption("v3 data file " + f.name() + ": column episode_index is a list");
  }
  size_t k = 0;
  for (uint64_t i = 0; i < rows.values.num_levels; ++i) {
    const bool present = rows.shape.max_def == 0 || rows.values.def[i] == rows.shape.max_def;
    if (!present || k >= rows.values.ints.size() || rows.values.ints[k] != want) {
      return Status::Corruption(
          RowText(f.name(), "episode_index", first + i) + " holds " +
          (present && k < rows.values.ints.size() ? std::to_string(rows.values.ints[k])
                                                  : std::string("null")) +
          ", not episode " + std::to_string(want) +
          ": meta/episodes' dataset_from_index/dataset_to_index disagree with the data files; "
          "the dataset is damaged (re-convert it or fix meta/episodes)");
    }
    ++k;
  }
  return Status::OK();
}

}  // namespace

Result<LeRobotV21DataSchema> LeRobotV21DataSchemaFromInfo(std::string_view v3_info_json,
                                                          const std::string& where) {
  OrderedJson info;
  try {
    info = OrderedJson::parse(v3_info_json);
  } catch (const OrderedJson::exception& e) {
    return Status::Corruption(where + " is not valid JSON: " + e.what());
  }
  auto features = info.is_object() ? info.find("features") : info.end();
  if (!info.is_object() || features == info.end() || !features->is_object()) {
    return Status::InvalidArgument(where + ": field \"features\" is missing or not an object");
  }
  LeRobotV21DataSchema schema;
  for (auto it = features->begin(); it != features->end(); ++it) {
    const OrderedJson& f = it.value();
    const std::string fw = where + ": feature \"" + it.key() + "\"";
    auto dtype = f.is_object() ? f.find("dtype") : f.end();
    if (!f.is_object() || dtype == f.end() || !dtype->is_string()) {
      return Status::InvalidArgument(fw + " is not an object with a string \"dtype\"");
    }
    const std::string d = dtype->get<std::string>();
    if (d == "video") continue;
    if (d == "image") {
      return Status::NotSupported(fw + " has dtype image, whose v2.1 data column (PNG bytes in "
                                  "a struct) packfs does not write yet");
    }
    const DtypeInfo* dt = FindDtype(d);
    if (!dt) continue;  // a dtype v2.1 does not know (e.g. "language"): not in the view
    auto shape = f.find("shape");
    std::vector<int64_t> dims;
    if (shape != f.end() && shape->is_array()) {
      for (const auto& x : *shape) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > (1 << 24)) {
          dims.clear();
          break;
        }
        dims.push_back(x.get<int64_t>());
      }
    }
    if (dims.empty()) {
      return Status::InvalidArgument(fw + " has no \"shape\" list of sizes");
    }
    if (dims.size() > 1) {
      return Status::NotSupported(fw + " has a shape of " + std::to_string(dims.size()) +
                                  " dimensions (datasets' ArrayND), which packfs does not write "
                                  "yet");
    }
    LeRobotV21DataColumn col{it.key(), d, static_cast<uint32_t>(dims[0]), dims[0] != 1};
    if (d == "string" && col.vector) {
      return Status::NotSupported(fw + " is a vector of strings, which packfs does not write");
    }
    WriterColumn wc;
    wc.name = col.key;
    wc.type = dt->type;
    wc.utf8 = dt->type == parquet::kByteArray;
    wc.int_converted_type = dt->converted;
    wc.list = col.vector;
    if (col.vector) wc.fixed_length = col.length;
    schema.columns.push_back(std::move(col));
    schema.writer_columns.push_back(std::move(wc));
  }
  if (schema.columns.empty()) {
    return Status::InvalidArgument(where + " lists no feature stored in the data files");
  }
  schema.writer_options.row_group_rows = 1000;  // datasets' writer batch; 100 with images
  schema.writer_options.key_value_metadata = {
      {"huggingface", LeRobotV21HuggingfaceMetadata(schema)}};
  schema.writer_options.created_by = "packfs (LeRobot v2.1 view)";
  return schema;
}

std::string LeRobotV21HuggingfaceMetadata(const LeRobotV21DataSchema& schema) {
  std::string s = "{\"info\": {\"features\": {";
  bool first = true;
  for (const auto& c : schema.columns) {
    if (!first) s += ", ";
    first = false;
    AppendPythonJsonAsciiString(c.key, &s);
    std::string value = "{\"dtype\": ";
    AppendPythonJsonAsciiString(c.dtype, &value);
    value += ", \"_type\": \"Value\"}";
    if (c.vector) {
      s += ": {\"feature\": " + value + ", \"length\": " + std::to_string(c.length) +
           ", \"_type\": \"Sequence\"}";
    } else {
      s += ": " + value;
    }
  }
  return s + "}}}";
}

Result<uint64_t> LeRobotV21EpisodeParquetSize(const LeRobotV21DataSchema& schema, uint64_t rows) {
  return parquet::ParquetFileSize(schema.writer_columns, rows, schema.writer_options);
}

Result<std::vector<uint8_t>> LeRobotV21EpisodeParquet(const LeRobotV21DataSchema& schema,
                                                      const ShardSource& v3_data,
                                                      uint64_t first_row, uint64_t count,
                                                      std::optional<int64_t> expect_episode_index,
                                                      const ParquetOptions& options) {
  PACKFS_ASSIGN_OR_RETURN(ParquetFile f, ParquetFile::Open(v3_data, options));
  if (first_row > f.num_rows() || count > f.num_rows() - first_row) {
    return Status::InvalidArgument("v3 data file " + f.name() + " has " +
                                   std::to_string(f.num_rows()) + " rows; rows " +
                                   std::to_string(first_row) + " to " +
                                   std::to_string(first_row + count) + " lie past its end");
  }
  if (expect_episode_index) {
    PACKFS_RETURN_IF_ERROR(CheckEpisodeIndex(f, first_row, count, *expect_episode_index));
  }
  return parquet::WriteParquetFile(
      schema.writer_columns, count, schema.writer_options, [&](size_t c) {
        return EpisodeColumn(f, schema.columns[c], schema.writer_columns[c], first_row, count);
      });
}

Result<std::vector<LeRobotEpisodeRows>> LocateLeRobotEpisodes(
    const std::vector<LeRobotV3EpisodeRange>& episodes, const std::vector<LeRobotV3DataFile>& files,
    const std::string& episodes_path) {
  std::vector<uint64_t> starts;
  uint64_t total = 0;
  for (const auto& file : files) {
    starts.push_back(total);
    total += file.rows;
  }
  std::vector<LeRobotEpisodeRows> out;
  out.reserve(episodes.size());
  for (const auto& ep : episodes) {
    const std::string where =
        episodes_path + ": episode " + std::to_string(ep.episode_index) + " has rows " +
        std::to_string(ep.from) + " to " + std::to_string(ep.to) + " (dataset_from_index, "
        "dataset_to_index)";
    if (ep.from < 0 || ep.to <= ep.from) {
      return Status::Corruption(where + ", an empty or inverted range");
    }
    const auto from = static_cast<uint64_t>(ep.from), to = static_cast<uint64_t>(ep.to);
    if (to > total) {
      return Status::Corruption(where + ", but the data files hold " + std::to_string(total) +
                                " rows; the dataset is incomplete or meta/episodes is damaged");
    }
    const size_t file =
        static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), from) - starts.begin()) -
        1;
    if (to > starts[file] + files[file].rows) {
      return Status::Corruption(where + ", which spans " + files[file].path + " and the next "
                                "data file; LeRobot v3 keeps an episode in one file, so the "
                                "data files or meta/episodes are damaged");
    }
    out.push_back({file, from - starts[file], to - from});
  }
  return out;
}

}  // namespace packfs
