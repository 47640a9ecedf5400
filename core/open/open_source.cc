// Opening a source: what a location is and which sets serve it (see open_source.h).
#include "core/open/open_source.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <set>
#include <utility>

#include "core/format/tar_reader.h"
#include "core/lerobot/lerobot_v21_view.h"
#include "core/read/loose_dir.h"
#include "core/read/prefixed_set.h"
#include "core/remote/url.h"

namespace packfs {
namespace {

// A local SOURCE argument: a directory, or one tar shard (then `file` is its name inside `dir`).
struct LocalSourceArg {
  std::string dir;   // absolute
  std::string file;  // "" for a directory
};

Result<LocalSourceArg> CheckLocalSourceArg(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Status::NotFound("source " + path + ": " + ErrnoText(errno));
  }
  const bool tar = S_ISREG(st.st_mode) &&
                   IsTarShardName(std::filesystem::path(path).filename().string());
  if (!S_ISDIR(st.st_mode) && !tar) {
    return Status::InvalidArgument("source " + path + " is neither a directory (give the pack " +
                                   "directory holding pack-0000.zip or *.tar) nor a .tar file");
  }
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) {
    return Status::IOError("source " + path + ": " + ErrnoText(errno), errno);
  }
  if (!tar) return LocalSourceArg{buf, ""};
  std::filesystem::path real(buf);
  return LocalSourceArg{real.parent_path().string(), real.filename().string()};
}

OpenedSource PlainSource(std::unique_ptr<PackSet> set) {
  OpenedSource out;
  out.set = std::move(set);
  return out;
}

// `set` plus the LeRobot view options.lerobot asks for. In the v2.1 layout the dataset moves
// under v3/ and the view serves the v2.1 metadata.
Result<OpenedSource> AddLeRobotView(std::unique_ptr<PackSet> set,
                                    const OpenSourceOptions& options) {
  using LeRobot = OpenSourceOptions::LeRobot;
  if (options.lerobot == LeRobot::kOff) return PlainSource(std::move(set));
  PACKFS_ASSIGN_OR_RETURN(std::optional<LeRobotInfo> info, ReadLeRobotInfo(*set));
  if (!info) {
    if (options.lerobot == LeRobot::kOn) {
      return Status::NotFound("--lerobot: " + set->dir() + " holds no meta/info.json");
    }
    return PlainSource(std::move(set));
  }
  if (!IsLeRobotV3(*info)) {
    if (options.lerobot != LeRobot::kOn) {
      return PlainSource(std::move(set));  // v2.x already has one file per episode
    }
    if (options.warn) {
      options.warn(set->dir() + "/meta/info.json says codebase_version '" +
                   info->codebase_version + "'; reading it as v3 as --lerobot asks");
    }
  }
  if (options.lerobot == LeRobot::kAuto) {
    // Already converted (`mkpack convert-lerobot` adds meta/episodes.jsonl beside the v3 tables
    // and stores the episode files themselves): nothing to synthesize.
    PACKFS_ASSIGN_OR_RETURN(std::optional<Node> jsonl,
                            set->catalog().Find("meta/episodes.jsonl"));
    if (jsonl) return PlainSource(std::move(set));
  }
  LeRobotViewOptions view_options;
  PACKFS_ASSIGN_OR_RETURN(LeRobotPlan plan, PlanLeRobotView(*set, *info, view_options));
  if (options.lerobot_layout == LeRobotLayout::kV21) {
    Status st = AddLeRobotV21Files(*set, &plan);
    if (!st.ok() && options.lerobot_layout_given) return st;
    if (!st.ok() && options.warn) {
      options.warn(st.message() + "; showing the v3 layout (--lerobot-view v3)");
    }
  }
  OpenedSource out;
  if (plan.layout == LeRobotLayout::kV3) {
    PACKFS_ASSIGN_OR_RETURN(out.view, OpenLeRobotView(*set, std::move(plan), view_options));
    out.set = std::move(set);
    return out;
  }
  // The view and the v3/ set share the dataset, which the Filesystem no longer serves itself.
  std::shared_ptr<const PackSet> dataset = std::move(set);
  PACKFS_ASSIGN_OR_RETURN(out.view,
                          OpenLeRobotView(*dataset, std::move(plan), view_options, dataset));
  PACKFS_ASSIGN_OR_RETURN(out.set, OpenPrefixedSet(dataset, kLeRobotV3Prefix));
  return out;
}

}  // namespace

Result<std::vector<SourceLocation>> ResolveSources(const std::vector<std::string>& args) {
  std::vector<SourceLocation> sources;
  std::set<std::string> seen;
  for (const std::string& arg : args) {
    if (IsRemoteLocation(arg)) {
      // A URL is not a local path: it is checked for form now and reached when opened.
      Result<Url> url = ParseUrl(arg);
      if (!url.ok()) return url.status().WithPrefix("source");
      if (!seen.insert(url->ToString()).second) {
        return Status::InvalidArgument("source " + arg + " is given twice");
      }
      sources.push_back(SourceLocation{arg, {}});
      continue;
    }
    PACKFS_ASSIGN_OR_RETURN(LocalSourceArg src, CheckLocalSourceArg(arg));
    const std::string full = src.file.empty() ? src.dir : src.dir + "/" + src.file;
    if (!seen.insert(full).second) {
      return Status::InvalidArgument("source " + full + " is given twice");
    }
    // Tar files given one by one are served as one pack set per directory.
    size_t at = sources.size();
    if (!src.file.empty()) {
      for (size_t j = 0; j < sources.size(); ++j) {
        if (sources[j].location == src.dir && !sources[j].shard_files.empty()) at = j;
      }
    }
    if (at == sources.size()) sources.push_back(SourceLocation{src.dir, {}});
    if (!src.file.empty()) sources[at].shard_files.push_back(src.file);
  }
  return sources;
}

Result<SourceKind> ClassifySource(const SourceLocation& source, const OpenSourceOptions& options) {
  using Loose = OpenSourceOptions::Loose;
  if (options.remote && IsRemoteLocation(source.location)) return SourceKind::kRemote;
  if (options.loose == Loose::kNever || !source.shard_files.empty()) return SourceKind::kPackDir;
  Result<bool> packed = HoldsShardFiles(source.location);
  if (options.loose == Loose::kAlways) {
    if (!packed.ok()) return packed.status();
    return *packed ? SourceKind::kPackDir : SourceKind::kLooseFiles;
  }
  // kLeRobot: a directory that cannot be listed is left to the pack set's open to report.
  struct stat st;
  const bool dataset = packed.ok() && !*packed &&
                       ::stat((source.location + "/meta/info.json").c_str(), &st) == 0;
  return dataset ? SourceKind::kLooseFiles : SourceKind::kPackDir;
}

Result<std::unique_ptr<PackSet>> OpenSourceSet(const SourceLocation& source,
                                               const OpenSourceOptions& options) {
  PACKFS_ASSIGN_OR_RETURN(SourceKind kind, ClassifySource(source, options));
  switch (kind) {
    case SourceKind::kRemote:
      return OpenRemotePackSet(source.location, *options.remote);
    case SourceKind::kLooseFiles:
      return OpenLooseDirectory(source.location, options.pack.ref_prefix);
    case SourceKind::kPackDir:
      break;
  }
  return PackSet::Open(source.location, options.pack, source.shard_files);
}

Result<OpenedSource> OpenSource(const SourceLocation& source,
                                const OpenSourceOptions& options) {
  PACKFS_ASSIGN_OR_RETURN(std::unique_ptr<PackSet> set, OpenSourceSet(source, options));
  Result<OpenedSource> opened = AddLeRobotView(std::move(set), options);
  if (!opened.ok()) return opened.status().WithPrefix("LeRobot view of " + source.location);
  return opened;
}

Result<std::vector<std::unique_ptr<PackSet>>> OpenSources(
    const std::vector<SourceLocation>& sources, const OpenSourceOptions& options) {
  std::vector<std::unique_ptr<PackSet>> sets;
  // Declared after `sets`, so destroyed first on an error: a view reads through its dataset.
  std::vector<std::unique_ptr<PackSet>> views;
  for (const SourceLocation& source : sources) {
    PACKFS_ASSIGN_OR_RETURN(OpenedSource opened, OpenSource(source, options));
    sets.push_back(std::move(opened.set));
    if (opened.view) views.push_back(std::move(opened.view));
  }
  // Views read through their datasets, so they come last (and are destroyed last).
  for (auto& view : views) sets.push_back(std::move(view));
  return sets;
}

}  // namespace packfs
