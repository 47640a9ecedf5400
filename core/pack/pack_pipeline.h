// Pack pipeline: the one run every packing command configures (target check, plan, write, catalog).
//
// A command builds its inputs (a directory walk, a file list, tar members, LeRobot episodes),
// fills a PackJob and calls RunPackJob, which
//   1. scans the target directory and applies the policy (new, append, resume) to what it holds;
//   2. resume: drops the inputs whose keys complete shards already hold; append: refuses them;
//      append/resume: refuses a run after which a catalog refresh would lose members of shards
//      the catalog lists but the directory no longer holds;
//   3. plans the shards (numbered after the last one there) and reports the plan (`planned`);
//      a dry run ends here, having written nothing;
//   4. creates the target, removes an interrupted run's temp shards (resume), writes the shards;
//   5. calls `shards_complete` (the command's extra files) and writes or refreshes the catalog.
// It never prints: the command prints from the events and the returned PackSummary.
//
// Thread-safety: RunPackJob is a free function without shared state; every event is called on
// the calling thread. The writer's reader threads are started and joined inside step 4.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/write/pack_input.h"
#include "core/write/pack_writer.h"

namespace packfs {

// What a target directory that already holds shards (or an interrupted run's temp shards) means.
enum class TargetPolicy {
  kNew,      // refused, naming --append and --resume (`mkpack pack`)
  kNewOnly,  // refused as "convert into an empty or new directory" (the converters)
  kAppend,   // new shards after the last one; a key a shard already holds is an error
  kResume,   // continue after the last complete shard: inputs already packed are skipped
};

struct PackJob {
  std::string dir;                // the pack directory to write
  std::vector<PackInput> inputs;  // what to pack, in order (keys validated by their maker)
  // Limits, grouping, threads, fsync. `stop` may be set here or returned by events.writing.
  PackOptions options;
  TargetPolicy policy = TargetPolicy::kNew;
  bool dry_run = false;  // plan only: nothing is created or written
  bool catalog = true;   // write or refresh <dir>/.packfs-catalog.sqlite after the shards
  // A target without complete shards gets its catalog from what the writer knows instead of
  // reading the shards back (reading 100k local headers cost seconds off the page cache).
  bool catalog_from_writer = false;
  // Create the target with its missing parents (like mkdir -p); otherwise only the target itself.
  bool create_parents = false;
};

// What a run found, planned and did. Input indices in `plan` index `inputs`.
struct PackSummary {
  PackDirState target;            // what the target held before the run
  std::vector<PackInput> inputs;  // the inputs this run packs (resume: less those already packed)
  std::vector<std::pair<std::string, std::string>> resumed;  // key, shard: already packed
  PackPlan plan;
  bool written = false;  // the shards of the plan are all complete (false for a dry run)
  // Non-zero when the writer stopped early on options.stop: the flag's value then. The complete
  // shards stay (`done.shards` of them from this run), the unfinished one stays a temp shard.
  int stopped = 0;
  WriteProgress done;  // how far the writer got
};

// The points at which a command follows a run; every member may be empty.
struct PackEvents {
  // The plan is made and nothing is written yet (with dry_run the run ends after it).
  std::function<void(const PackSummary&)> planned;
  // The target exists and its leftover temps are gone; the writer starts next. Returns the stop
  // flag for the write (e.g. after starting to watch for SIGINT), or nullptr to keep
  // options.stop.
  std::function<const std::atomic<int>*(const PackSummary&)> writing;
  ProgressFn progress;              // after each member and each completed shard
  std::function<void()> write_ended;  // the writer returned: complete, failed or stopped
  // Every shard is complete, the catalog is next; an error ends the run with that status.
  std::function<Status(const PackSummary&)> shards_complete;
};

// Runs `job` (see the top of this file). Errors name the directory, shard, key or input; a run
// stopped by options.stop is not an error: it returns the summary with `stopped` set.
Result<PackSummary> RunPackJob(PackJob job, const PackEvents& events = {});

}  // namespace packfs
