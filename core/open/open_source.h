// Opening a source: decides, for packfs and mkpack alike, what a location is (an http(s):// or
// s3:// URL, a pack directory, tar files, a loose LeRobot dataset) and which sets serve it (the
// set itself, plus the LeRobot view of a v3 dataset).
//
// Thread-safety: the functions are stateless and may run on any thread; what they return is
// owned by the caller. Warnings about the decisions go to OpenSourceOptions::warn as they are
// made; the opened sets keep their own warnings (PackSet::warnings()).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/lerobot/lerobot_view.h"
#include "core/read/pack_set.h"
#include "core/remote/remote_pack_set.h"

namespace packfs {

// A location to open: an http(s):// or s3:// URL, or a local directory, possibly served only
// through some of its tar files.
struct SourceLocation {
  std::string location;
  // Tar files of the directory given one by one (names inside it); empty: every shard it holds.
  std::vector<std::string> shard_files;
};

// Checks the SOURCE arguments of a mount, before anything is opened: a URL must parse, a local
// path must be a directory or a .tar file (made absolute through realpath). A source given twice
// fails; tar files given one by one are grouped into one SourceLocation per directory (at the
// position of the first). Errors start with "source" and name the argument.
Result<std::vector<SourceLocation>> ResolveSources(const std::vector<std::string>& args);

struct OpenSourceOptions {
  PackSetOptions pack;  // local pack directories (and ref_prefix of loose ones)
  // Remote sets; without them a URL is taken for a local path (commands that read local sets
  // only).
  std::optional<RemoteOptions> remote;
  // Which local directories without shards (pack-*.zip, *.tar) are served as loose files
  // (core/read/loose_dir.h) rather than failing as pack directories do.
  enum class Loose {
    kNever,
    kLeRobot,  // those holding meta/info.json (a LeRobot dataset kept as plain files)
    kAlways,   // any, and a directory that cannot be listed fails saying so
  } loose = Loose::kNever;
  // LeRobot v3 datasets get the per-episode view: when detected (kAuto), always (kOn:
  // meta/info.json is enough, a v2.x one is read as v3 with a warning), or never.
  enum class LeRobot { kAuto, kOn, kOff } lerobot = LeRobot::kOff;
  LeRobotLayout lerobot_layout = LeRobotLayout::kV21;
  // When the layout was asked for, a dataset that cannot be shown as v2.1 fails; otherwise it is
  // shown as v3 with a warning.
  bool lerobot_layout_given = false;
  // Receives warnings about the view (may be empty: they are dropped).
  std::function<void(const std::string&)> warn;
};

// What a location is, as OpenSourceSet opens it.
enum class SourceKind {
  kRemote,      // an http(s):// or s3:// URL (only with options.remote)
  kLooseFiles,  // a directory without shards, by options.loose
  kPackDir,     // a pack directory (zip or tar shards), or tar files of one
};
// Costs no I/O for a URL or under Loose::kNever; otherwise lists the directory until its first
// shard (and stats meta/info.json). Fails only under Loose::kAlways, for a directory that cannot
// be listed.
Result<SourceKind> ClassifySource(const SourceLocation& source, const OpenSourceOptions& options);

// The set of `source` itself, with no LeRobot view: the remote set of a URL (when
// options.remote), the loose files of a directory without shards (per options.loose), else the
// pack directory (all its shards, or source.shard_files). Errors are those of the set's open.
Result<std::unique_ptr<PackSet>> OpenSourceSet(const SourceLocation& source,
                                               const OpenSourceOptions& options);

// What serves one source in a Filesystem.
struct OpenedSource {
  // The source's own files: its set, or in the LeRobot v2.1 layout that set under v3/.
  std::unique_ptr<PackSet> set;
  // The LeRobot view, or null. It reads through the dataset: merge it after every source's
  // `set`, and keep `set` alive as long as the view.
  std::unique_ptr<PackSet> view;
};

// OpenSourceSet, then the LeRobot view by options.lerobot: a v3 dataset (meta/info.json says
// v3.x) not already converted (no meta/episodes.jsonl) gets it under kAuto; kOn gives it to any
// dataset with meta/info.json and fails without one. Errors of the view start with "LeRobot view
// of <location>".
Result<OpenedSource> OpenSource(const SourceLocation& source,
                                const OpenSourceOptions& options);

// Every source opened, in the order Filesystem::Open takes them: each source's set, in the
// order given, then the views (which read through those sets).
Result<std::vector<std::unique_ptr<PackSet>>> OpenSources(
    const std::vector<SourceLocation>& sources, const OpenSourceOptions& options);

}  // namespace packfs
