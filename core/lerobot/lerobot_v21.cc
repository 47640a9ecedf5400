// LeRobot v2.1 metadata generated from v3.0 metadata: info.json rebuilt in v2.1's key order,
// episodes.jsonl and tasks.jsonl lines, all written with Python's json formatting (python_json).
#include "core/lerobot/lerobot_v21.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "core/lerobot/parquet_reader.h"
#include "core/lerobot/python_json.h"

namespace packfs {
namespace {

using V21Json = nlohmann::ordered_json;

// One jsonl line's `"key": ` prefix (after the opening brace or a ", " separator).
void AppendV21Key(std::string_view key, std::string* out) {
  AppendPythonJsonString(key, out);
  *out += ": ";
}

// task strings column of a tasks.parquet, by the names pandas and LeRobot give it.
Result<std::string> V21TaskColumn(const ParquetFile& f) {
  for (const char* name : {"task", "__index_level_0__"}) {
    if (f.HasColumn(name)) return std::string(name);
  }
  std::vector<std::string> others;
  for (const auto& path : f.column_paths()) {
    if (path != "task_index") others.push_back(path);
  }
  if (others.size() == 1) return others[0];
  return Status::Corruption("LeRobot tasks table " + f.name() +
                            " has no task string column (\"task\" or \"__index_level_0__\")");
}

}  // namespace

V21Totals LeRobotV21TotalsOf(const std::vector<Episode>& episodes, uint64_t total_tasks) {
  V21Totals t;
  t.total_episodes = episodes.size();
  for (const auto& e : episodes) t.total_frames += e.length;
  t.total_tasks = total_tasks;
  return t;
}

Result<std::string> LeRobotV21InfoJson(std::string_view v3_info_json, const V21Totals& totals,
                                       const std::string& path_for_messages) {
  const std::string& where = path_for_messages;
  V21Json in;
  try {
    in = V21Json::parse(v3_info_json);
  } catch (const V21Json::exception& e) {
    return Status::Corruption(where + " is not valid JSON: " + e.what());
  }
  if (!in.is_object()) return Status::Corruption(where + " is not a JSON object");

  auto version = in.find("codebase_version");
  if (version == in.end() || !version->is_string() ||
      !version->get_ref<const std::string&>().starts_with("v3")) {
    return Status::InvalidArgument(where + ": codebase_version is not \"v3.x\"; only LeRobot v3 "
                                   "metadata is converted to v2.1");
  }
  auto fps = in.find("fps");
  if (fps == in.end() || !fps->is_number() || !(fps->get<double>() > 0)) {
    return Status::InvalidArgument(where + ": field \"fps\" is missing or not a positive number");
  }
  auto features_in = in.find("features");
  if (features_in == in.end() || !features_in->is_object()) {
    return Status::InvalidArgument(where + ": field \"features\" is missing or not an object");
  }

  V21Json features = V21Json::object();
  uint64_t video_keys = 0;
  for (auto it = features_in->begin(); it != features_in->end(); ++it) {
    const V21Json& f = it.value();
    auto dtype = f.is_object() ? f.find("dtype") : f.end();
    if (!f.is_object() || dtype == f.end() || !dtype->is_string()) {
      return Status::InvalidArgument(where + ": feature \"" + it.key() +
                                     "\" is not an object with a string \"dtype\"");
    }
    V21Json copy = f;
    if (*dtype == "video") {
      ++video_keys;
    } else {
      copy.erase("fps");  // added by the v2.1 -> v3.0 converter; v2.1 never wrote it
    }
    features[it.key()] = std::move(copy);
  }

  const uint64_t episodes = totals.total_episodes;
  V21Json out = V21Json::object();
  out["codebase_version"] = "v2.1";
  out["robot_type"] = in.contains("robot_type") ? in["robot_type"] : V21Json(nullptr);
  out["total_episodes"] = episodes;
  out["total_frames"] = totals.total_frames;
  out["total_tasks"] = totals.total_tasks;
  out["total_videos"] = episodes * video_keys;
  out["total_chunks"] = (episodes + kLeRobotV21ChunksSize - 1) / kLeRobotV21ChunksSize;
  out["chunks_size"] = kLeRobotV21ChunksSize;
  const double fps_value = fps->get<double>();
  if (fps->is_number_float() && fps_value == std::floor(fps_value) && fps_value < 1e15) {
    out["fps"] = static_cast<uint64_t>(fps_value);  // v2.1 (and the v3 converter) store int(fps)
  } else {
    out["fps"] = *fps;
  }
  if (in.contains("splits")) {
    out["splits"] = in["splits"];
  } else {
    out["splits"] = V21Json::object({{"train", "0:" + std::to_string(episodes)}});
  }
  out["data_path"] = std::string(kLeRobotV21DataPath);
  auto video_path = in.find("video_path");
  const bool has_video_path = video_path != in.end() && !video_path->is_null();
  out["video_path"] =
      has_video_path && video_keys > 0 ? V21Json(std::string(kLeRobotV21VideoPath)) : V21Json();
  out["features"] = std::move(features);

  std::string text;
  AppendPythonJson(out, 4, &text);
  return text;
}

std::string LeRobotV21EpisodesJsonl(const std::vector<Episode>& episodes) {
  std::string out;
  for (const auto& e : episodes) {
    out += '{';
    AppendV21Key("episode_index", &out);
    out += std::to_string(e.index);
    out += ", ";
    AppendV21Key("tasks", &out);
    out += '[';
    for (size_t i = 0; i < e.tasks.size(); ++i) {
      if (i > 0) out += ", ";
      AppendPythonJsonString(e.tasks[i], &out);
    }
    out += "], ";
    AppendV21Key("length", &out);
    out += std::to_string(e.length);
    out += "}\n";
  }
  return out;
}

Result<std::vector<LeRobotTask>> ReadLeRobotTasks(const ShardSource& tasks_parquet) {
  PACKFS_ASSIGN_OR_RETURN(ParquetFile f, ParquetFile::Open(tasks_parquet));
  PACKFS_ASSIGN_OR_RETURN(std::string task_column, V21TaskColumn(f));
  PACKFS_ASSIGN_OR_RETURN(auto indexes, f.ReadInt64("task_index"));
  PACKFS_ASSIGN_OR_RETURN(auto strings, f.ReadString(task_column));
  if (indexes.size() != strings.size()) {
    return Status::Corruption("LeRobot tasks table " + f.name() + ": task_index has " +
                              std::to_string(indexes.size()) + " rows but " + task_column +
                              " has " + std::to_string(strings.size()));
  }
  std::vector<LeRobotTask> tasks;
  tasks.reserve(indexes.size());
  for (size_t row = 0; row < indexes.size(); ++row) {
    if (!indexes[row] || *indexes[row] < 0 || !strings[row]) {
      return Status::Corruption("LeRobot tasks table " + f.name() + ", row " +
                                std::to_string(row) + ": task_index or " + task_column +
                                " is null or negative");
    }
    tasks.push_back({static_cast<uint64_t>(*indexes[row]), std::move(*strings[row])});
  }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const LeRobotTask& a, const LeRobotTask& b) { return a.index < b.index; });
  for (size_t i = 1; i < tasks.size(); ++i) {
    if (tasks[i].index == tasks[i - 1].index) {
      return Status::Corruption("LeRobot tasks table " + f.name() + " repeats task_index " +
                                std::to_string(tasks[i].index));
    }
  }
  return tasks;
}

std::string LeRobotV21TasksJsonl(const std::vector<LeRobotTask>& tasks) {
  std::string out;
  for (const auto& t : tasks) {
    out += '{';
    AppendV21Key("task_index", &out);
    out += std::to_string(t.index);
    out += ", ";
    AppendV21Key("task", &out);
    AppendPythonJsonString(t.task, &out);
    out += "}\n";
  }
  return out;
}

Result<std::string> LeRobotV21TasksJsonl(const ShardSource& tasks_parquet) {
  PACKFS_ASSIGN_OR_RETURN(auto tasks, ReadLeRobotTasks(tasks_parquet));
  return LeRobotV21TasksJsonl(tasks);
}

}  // namespace packfs
