// The v2.1 metadata files and the plan of the data files of a LeRobot v3 dataset's v2.1 layout
// (see lerobot_v21_view.h).
#include "core/lerobot/lerobot_v21_view.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

#include "core/base/parallel_for.h"
#include "core/lerobot/lerobot_v21.h"
#include "core/lerobot/lerobot_v21_data.h"
#include "core/lerobot/lerobot_v21_stats.h"
#include "core/lerobot/parquet_reader.h"

namespace packfs {
namespace {

// The file `key` of `dataset`; NotFound naming it when absent.
Result<Node> FindRequired(const PackSet& dataset, const std::string& key) {
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, dataset.catalog().Find(key));
  if (!node || node->is_dir()) {
    return Status::NotFound(dataset.dir() + "/" + key + " is missing; the v2.1 layout is made "
                            "from it (--lerobot-view v3 serves the files as they are)");
  }
  return *node;
}

// fn(0) ... fn(n - 1) on one thread per core (footers of a remote set are a round trip each);
// the first error, if any.
Status ParallelStatus(size_t n, const std::function<Status(size_t)>& fn) {
  std::mutex mu;
  Status first_error;
  ParallelFor(n, 0, [&](size_t i) {
    Status st = fn(i);
    if (st.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (first_error.ok()) first_error = std::move(st);
  });
  return first_error;
}

// The global row range of each episode, from the episodes tables' dataset_from_index and
// dataset_to_index columns, in the order of `plan->episodes`.
Result<std::vector<LeRobotV3EpisodeRange>> ReadEpisodeRanges(
    const PackSet& dataset, const std::vector<std::shared_ptr<const ShardSource>>& tables,
    const LeRobotPlan& plan) {
  std::map<int64_t, LeRobotV3EpisodeRange> by_index;
  for (size_t t = 0; t < tables.size(); ++t) {
    const std::string where = dataset.dir() + "/" + plan.episodes_tables[t];
    PACKFS_ASSIGN_OR_RETURN(ParquetFile table, ParquetFile::Open(*tables[t]));
    std::vector<std::vector<std::optional<int64_t>>> cols;
    for (const char* name : {"episode_index", "dataset_from_index", "dataset_to_index"}) {
      Result<std::vector<std::optional<int64_t>>> col = table.ReadInt64(name);
      if (!col.ok()) return col.status().WithPrefix(where + ": column " + name);
      cols.push_back(std::move(col).value());
    }
    for (size_t r = 0; r < cols[0].size(); ++r) {
      if (!cols[0][r] || r >= cols[1].size() || r >= cols[2].size() || !cols[1][r] ||
          !cols[2][r]) {
        return Status::Corruption(where + ": row " + std::to_string(r) + " lacks episode_index, "
                                  "dataset_from_index or dataset_to_index");
      }
      by_index[*cols[0][r]] = {*cols[0][r], *cols[1][r], *cols[2][r]};
    }
  }
  std::vector<LeRobotV3EpisodeRange> out;
  for (const Episode& e : plan.episodes) {
    auto it = by_index.find(static_cast<int64_t>(e.index));
    if (it == by_index.end()) {
      return Status::Corruption(dataset.dir() + "/meta/episodes: no row range for episode " +
                                std::to_string(e.index));
    }
    out.push_back(it->second);
  }
  return out;
}

// Plans data/chunk-XXX/episode_XXXXXX.parquet for every episode from the v3 data files' footers
// (and the schema; a file is built here only when its size depends on the data). An error means
// data/ is left out, the caller saying why.
Status PlanV21Data(const PackSet& dataset, const std::string& info_text,
                   const std::vector<std::shared_ptr<const ShardSource>>& tables,
                   LeRobotPlan* plan) {
  const std::string where = dataset.dir() + "/";
  PACKFS_ASSIGN_OR_RETURN(LeRobotV21DataSchema schema_value,
                          LeRobotV21DataSchemaFromInfo(info_text, where + "meta/info.json"));
  auto schema = std::make_shared<const LeRobotV21DataSchema>(std::move(schema_value));
  for (size_t i = 0; i < plan->episodes.size(); ++i) {
    if (plan->episodes[i].index != i) {
      return Status::NotSupported("the episodes are not numbered 0.." +
                                  std::to_string(plan->episodes.size() - 1) + " (episode " +
                                  std::to_string(plan->episodes[i].index) + " is number " +
                                  std::to_string(i) + "), which a v2.1 loader requires");
    }
  }
  PACKFS_ASSIGN_OR_RETURN(auto data_files, ListLeRobotParquet(dataset, "data"));
  if (data_files.empty()) {
    return Status::NotFound(where + "data holds no .parquet files");
  }
  std::vector<LeRobotV3DataFile> files(data_files.size());
  std::vector<std::shared_ptr<const ShardSource>> sources(data_files.size());
  PACKFS_RETURN_IF_ERROR(ParallelStatus(data_files.size(), [&](size_t i) -> Status {
    const auto& [key, node] = data_files[i];
    sources[i] = dataset.MemberSource(key, node);
    PACKFS_ASSIGN_OR_RETURN(ParquetFile file, ParquetFile::Open(*sources[i]));
    files[i] = {key, file.num_rows()};
    return Status::OK();
  }));
  PACKFS_ASSIGN_OR_RETURN(std::vector<LeRobotV3EpisodeRange> ranges,
                          ReadEpisodeRanges(dataset, tables, *plan));
  PACKFS_ASSIGN_OR_RETURN(std::vector<LeRobotEpisodeRows> rows,
                          LocateLeRobotEpisodes(ranges, files, where + "meta/episodes"));
  std::vector<V21EpisodeDataFile> out(rows.size());
  PACKFS_RETURN_IF_ERROR(ParallelStatus(rows.size(), [&](size_t i) -> Status {
    const Episode& e = plan->episodes[i];
    const auto& [key, node] = data_files[rows[i].file];
    if (rows[i].count != e.length) {
      return Status::Corruption(where + "meta/episodes: episode " + std::to_string(e.index) +
                                " has length " + std::to_string(e.length) + " but " +
                                std::to_string(rows[i].count) + " rows (dataset_from_index.."
                                "dataset_to_index); a v2.1 loader needs them equal");
    }
    V21EpisodeDataFile& d = out[i];
    PACKFS_ASSIGN_OR_RETURN(
        d.key, FormatLeRobotTemplate(kLeRobotV21DataPath,
                                     {{"episode_chunk", e.index / kLeRobotV21ChunksSize},
                                      {"episode_index", e.index}}));
    d.episode = e.index;
    d.source_key = key;
    d.first_row = rows[i].first_row;
    d.count = rows[i].count;
    d.mtime = node.mtime;
    Result<uint64_t> size = LeRobotV21EpisodeParquetSize(*schema, d.count);
    if (size.ok()) {
      d.size = *size;
    } else if (size.status().code() == Code::kNotSupported) {
      // A string column: the size follows from the data, so the file is built once to know it.
      Result<std::vector<uint8_t>> built = LeRobotV21EpisodeParquet(
          *schema, *sources[rows[i].file], d.first_row, d.count, static_cast<int64_t>(e.index));
      if (!built.ok()) return built.status().WithPrefix(d.key + " (from " + where + key + ")");
      d.size = built->size();
    } else {
      return size.status().WithPrefix(d.key);
    }
    return Status::OK();
  }));
  plan->v21_data = std::move(out);
  plan->v21_data_schema = std::move(schema);
  return Status::OK();
}

}  // namespace

Status AddLeRobotV21Files(const PackSet& dataset, LeRobotPlan* plan) {
  const std::string where = dataset.dir() + "/";
  PACKFS_ASSIGN_OR_RETURN(Node info_node, FindRequired(dataset, "meta/info.json"));
  PACKFS_ASSIGN_OR_RETURN(std::string info_text,
                          ReadLeRobotMetaFile(dataset, "meta/info.json", info_node));
  PACKFS_ASSIGN_OR_RETURN(Node tasks_node, FindRequired(dataset, "meta/tasks.parquet"));
  std::shared_ptr<const ShardSource> tasks_source =
      dataset.MemberSource("meta/tasks.parquet", tasks_node);
  Result<std::vector<LeRobotTask>> tasks = ReadLeRobotTasks(*tasks_source);
  if (!tasks.ok()) return tasks.status().WithPrefix(dataset.dir());

  const V21Totals totals = LeRobotV21TotalsOf(plan->episodes, tasks->size());
  PACKFS_ASSIGN_OR_RETURN(std::string info_json,
                          LeRobotV21InfoJson(info_text, totals, where + "meta/info.json"));
  std::vector<GeneratedFile> files;
  files.push_back({"meta/info.json", std::move(info_json), info_node.mtime});
  files.push_back(
      {"meta/episodes.jsonl", LeRobotV21EpisodesJsonl(plan->episodes), plan->episodes_mtime});
  files.push_back({"meta/tasks.jsonl", LeRobotV21TasksJsonl(*tasks), tasks_node.mtime});

  // The stats read the episodes tables again (PlanLeRobotView read other columns of them).
  std::vector<std::shared_ptr<const ShardSource>> tables;
  std::vector<const ShardSource*> raw;
  for (const std::string& key : plan->episodes_tables) {
    PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, dataset.catalog().Find(key));
    if (!node || node->is_dir()) {
      return Status::Stale(where + key + " is no longer in the dataset; remount");
    }
    tables.push_back(dataset.MemberSource(key, *node));
    raw.push_back(tables.back().get());
  }
  Result<std::string> stats =
      LeRobotV21EpisodesStatsJsonl(raw, info_text, where + "meta/info.json");
  if (stats.ok()) {
    files.push_back({"meta/episodes_stats.jsonl", std::move(stats).value(),
                     plan->episodes_mtime});
  } else {
    plan->v21_notes.push_back(
        "LeRobot v2.1 layout without meta/episodes_stats.jsonl (a v2.1 loader needs it): " +
        stats.status().message());
  }
  // data/: left out with a note when it cannot be made (e.g. image features); the metadata and
  // videos are still useful, and a v2.1 loader says what is missing.
  if (Status data = PlanV21Data(dataset, info_text, tables, plan); !data.ok()) {
    plan->v21_data.clear();
    plan->v21_data_schema.reset();
    plan->v21_notes.push_back("LeRobot v2.1 layout without data/ (the episode parquet files a "
                              "v2.1 loader needs): " + data.message());
  }
  plan->v21_meta = std::move(files);
  plan->layout = LeRobotLayout::kV21;
  return Status::OK();
}

}  // namespace packfs
