// The v2.1 metadata files of a LeRobot v3 dataset's v2.1 layout (see lerobot_v21_view.h).
#include "core/lerobot_v21_view.h"

#include <optional>

#include "core/lerobot_v21.h"
#include "core/lerobot_v21_stats.h"

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
  plan->v21_meta = std::move(files);
  plan->layout = LeRobotLayout::kV21;
  return Status::OK();
}

}  // namespace packfs
