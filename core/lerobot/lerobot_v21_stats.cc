// v2.1 episodes_stats.jsonl from v3 stats/<feature>/<stat> list columns (ParquetFile), written
// with Python's json layout (python_json).
#include "core/lerobot/lerobot_v21_stats.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <utility>

#include "core/lerobot/parquet_reader.h"
#include "core/lerobot/python_json.h"

namespace packfs {
namespace {

using V21StatsJson = nlohmann::ordered_json;

struct StatsFeature {
  std::string key;
  std::string dtype;
};

// The features of a v3 info.json that v2.1 keeps stats for, in info order.
Result<std::vector<StatsFeature>> StatsFeatures(std::string_view info_json,
                                                const std::string& where) {
  V21StatsJson info;
  try {
    info = V21StatsJson::parse(info_json);
  } catch (const V21StatsJson::exception& e) {
    return Status::Corruption(where + " is not valid JSON: " + e.what());
  }
  auto features = info.is_object() ? info.find("features") : info.end();
  if (!info.is_object() || features == info.end() || !features->is_object()) {
    return Status::InvalidArgument(where + ": field \"features\" is missing or not an object");
  }
  std::vector<StatsFeature> out;
  for (auto it = features->begin(); it != features->end(); ++it) {
    const V21StatsJson& f = it.value();
    auto dtype = f.is_object() ? f.find("dtype") : f.end();
    if (!f.is_object() || dtype == f.end() || !dtype->is_string()) {
      return Status::InvalidArgument(where + ": feature \"" + it.key() +
                                     "\" is not an object with a string \"dtype\"");
    }
    if (*dtype != "string") out.push_back({it.key(), dtype->get<std::string>()});
  }
  return out;
}

// One stats column as JSON lists, one per row: integers stay integers (booleans for a bool
// feature), floating-point values become floats.
Result<std::vector<V21StatsJson>> ReadStatsColumn(const ParquetFile& f, const std::string& column,
                                               const StatsFeature& feature) {
  std::vector<V21StatsJson> rows;
  auto doubles = f.ReadDoubleList(column);
  if (doubles.ok()) {
    for (const auto& list : *doubles) {
      V21StatsJson row = V21StatsJson::array();
      for (double v : list) row.push_back(v);
      rows.push_back(std::move(row));
    }
    return rows;
  }
  if (doubles.status().code() != Code::kInvalidArgument) return doubles.status();
  PACKFS_ASSIGN_OR_RETURN(auto ints, f.ReadInt64List(column));
  for (const auto& list : ints) {
    V21StatsJson row = V21StatsJson::array();
    for (int64_t v : list) {
      if (feature.dtype == "bool") {
        row.push_back(v != 0);
      } else {
        row.push_back(v);
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

V21StatsJson NestedToJson(const ParquetNestedList& list) {
  V21StatsJson out = V21StatsJson::array();
  for (double v : list.values) out.push_back(v);
  for (const auto& inner : list.lists) out.push_back(NestedToJson(inner));
  return out;
}

// Image and video stats: min/max/mean/std are float lists nested three deep (shape (3,1,1), one
// value per channel), count a flat integer list; kept nested as stored.
Result<std::vector<V21StatsJson>> ReadCameraStatsColumn(const ParquetFile& f,
                                                        const std::string& column,
                                                        const StatsFeature& feature) {
  auto nested = f.ReadNestedDoubleList(column);
  if (!nested.ok()) {
    if (nested.status().code() != Code::kInvalidArgument) return nested.status();
    return ReadStatsColumn(f, column, feature);  // integers (count)
  }
  std::vector<V21StatsJson> rows;
  rows.reserve(nested->size());
  for (const auto& row : *nested) rows.push_back(NestedToJson(row));
  return rows;
}

}  // namespace

Result<std::string> LeRobotV21EpisodesStatsJsonl(
    const std::vector<const ShardSource*>& episodes_tables, std::string_view v3_info_json,
    const std::string& info_path_for_messages) {
  PACKFS_ASSIGN_OR_RETURN(auto features, StatsFeatures(v3_info_json, info_path_for_messages));
  static constexpr const char* kStats[] = {"min", "max", "mean", "std", "count"};
  std::map<uint64_t, std::string> lines;  // by episode_index
  for (const ShardSource* src : episodes_tables) {
    PACKFS_ASSIGN_OR_RETURN(ParquetFile f, ParquetFile::Open(*src));
    PACKFS_ASSIGN_OR_RETURN(auto episode_index, f.ReadInt64("episode_index"));
    std::vector<V21StatsJson> stats(episode_index.size(), V21StatsJson::object());
    for (const auto& feature : features) {
      const bool camera = feature.dtype == "image" || feature.dtype == "video";
      for (const char* stat : kStats) {
        const std::string column = "stats/" + feature.key + "/" + stat;
        PACKFS_ASSIGN_OR_RETURN(auto values, camera ? ReadCameraStatsColumn(f, column, feature)
                                                    : ReadStatsColumn(f, column, feature));
        if (values.size() != stats.size()) {
          return Status::Corruption("LeRobot episodes table " + f.name() + ": column " + column +
                                    " has " + std::to_string(values.size()) + " rows, not " +
                                    std::to_string(stats.size()));
        }
        for (size_t row = 0; row < stats.size(); ++row) {
          stats[row][feature.key][stat] = std::move(values[row]);
        }
      }
    }
    for (size_t row = 0; row < stats.size(); ++row) {
      if (!episode_index[row] || *episode_index[row] < 0) {
        return Status::Corruption("LeRobot episodes table " + f.name() + ", row " +
                                  std::to_string(row) + ": episode_index is null or negative");
      }
      const auto index = static_cast<uint64_t>(*episode_index[row]);
      V21StatsJson line = V21StatsJson::object();
      line["episode_index"] = index;
      line["stats"] = std::move(stats[row]);
      std::string text;
      AppendPythonJson(line, -1, &text);
      text += '\n';
      if (!lines.emplace(index, std::move(text)).second) {
        return Status::Corruption("LeRobot episodes table " + f.name() + " repeats episode " +
                                  std::to_string(index));
      }
    }
  }
  std::string out;
  for (const auto& [index, text] : lines) out += text;
  return out;
}

}  // namespace packfs
