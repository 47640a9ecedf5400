// Pack writer: plans a sequence of PackInputs into zip shards and writes them crash-safely.
//
// Planning is pure arithmetic over ZipLayout, so the plan (shard boundaries, every byte of
// headers, ZIP64 records and padding) is exact before a byte is written: no shard exceeds
// max_pack_bytes / max_members unless it holds a single member that alone is larger. Groups
// (one sample's files) are kept in one shard: the writer rolls over before a group, never inside
// it, unless the group alone is larger than a shard (then it is split and reported).
//
// Writing: each shard is written as ".<name>.tmp" in the pack directory, fsynced, renamed into
// place (never over an existing file) and the directory fsynced. A failed shard stays a temp
// file (`--resume` removes it and continues after the last complete shard; `mkpack verify`
// reports it, so the set reads as incomplete), except on ENOSPC where it is removed at once.
// Complete shards are never touched again.
//
// Thread-safety: free functions, no shared state. WriteShards starts and joins its own reader
// threads (opts.jobs - 1 ... see PackOptions) and calls `progress` from the calling thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/catalog/catalog.h"
#include "core/format/zip_writer.h"
#include "core/write/pack_input.h"

namespace packfs {

enum class GroupBy {
  kNone,
  kDir,   // same parent directory
  kStem,  // WebDataset sample: directory + basename up to its first dot
  kInput, // PackInput::group, as the caller set it (e.g. one LeRobot episode's cameras)
};

inline constexpr uint64_t kDefaultMaxPackBytes = 4294967296ull;  // 4 GiB
inline constexpr uint64_t kDefaultMaxMembers = 65535;
inline constexpr uint64_t kDefaultAlignThreshold = 1 << 20;      // members of 1 MiB or more ...
inline constexpr uint32_t kDefaultAlign = 4096;                  // ... start on a page
inline constexpr int64_t kReproducibleMtime = 315532800;         // 1980-01-01T00:00:00Z

struct PackOptions {
  uint64_t max_pack_bytes = kDefaultMaxPackBytes;
  uint64_t max_members = kDefaultMaxMembers;
  // < 0: the default policy (kDefaultAlign for members >= kDefaultAlignThreshold, none below);
  // 0 or 1: no padding; N: every member's data starts on an N-byte boundary (N <= 65535).
  int64_t align = -1;
  GroupBy group_by = GroupBy::kNone;
  bool reproducible = false;  // fixed mtimes (kReproducibleMtime): identical bytes on every run
  // 1: the writer reads every input itself. N > 1: N reader threads prefetch small inputs
  // (<= 4 MiB, at most 64 MiB ahead) while the writer appends them in plan order; large inputs
  // are streamed by the writer. The bytes written do not depend on jobs.
  int jobs = 1;
  bool sync = true;  // fsync shards and the directory (off only for tests and benchmarks)
  // When set and it turns non-zero (e.g. the number of a signal that arrived), WriteShards stops
  // before the next member (or the next MiB of a large one) and fails with errno EINTR; the
  // unfinished shard stays a temp file like any failed one, the complete shards stay complete.
  // Not owned.
  const std::atomic<int>* stop = nullptr;
};

// The zip member spec of an input under `opts` (alignment policy, reproducible time).
ZipMemberSpec MemberSpec(const PackInput& in, const PackOptions& opts);

// The group an input belongs to ("" for kNone: every input is its own group; kInput: in.group).
std::string GroupKey(const std::string& key, GroupBy by);
std::string GroupKey(const PackInput& in, GroupBy by);

struct PlannedShard {
  uint64_t index = 0;
  std::string name;              // "pack-0003.zip"
  std::vector<size_t> members;   // indices into the inputs, in write order
  uint64_t bytes = 0;            // exact final file size
  uint64_t data_bytes = 0;       // sum of member sizes
};

struct PackPlan {
  std::vector<PlannedShard> shards;
  std::vector<std::string> oversized;     // keys alone in a shard over max_pack_bytes
  std::vector<std::string> split_groups;  // groups larger than a shard, spread over several
  uint64_t data_bytes = 0;
  uint64_t shard_bytes = 0;
};

// Plans `inputs` into shards numbered from `first_index`. With groups, inputs are reordered so
// each group's members are adjacent (groups in order of first appearance, members in input
// order). Fails on invalid options.
Result<PackPlan> PlanShards(const std::vector<PackInput>& inputs, const PackOptions& opts,
                            uint64_t first_index);

// What a pack directory already holds.
struct PackDirState {
  std::vector<std::string> shards;  // complete shard files, index order
  std::vector<std::string> temps;   // leftover ".pack-*.zip.tmp" of an interrupted run
  uint64_t next_index = 0;          // one past the highest shard index
};
// Scans `dir` (a missing directory is an empty state).
Result<PackDirState> ScanPackDir(const std::string& dir);
// Removes the leftover temp files listed in `state`.
Status RemoveTemps(const std::string& dir, const PackDirState& state);
// Keys of all members of the complete shards: key -> shard name. Fails naming a broken shard.
Result<std::unordered_map<std::string, std::string>> ReadShardKeys(const std::string& dir,
                                                                  const PackDirState& state);

// The temp name a shard is written under: ".pack-0003.zip.tmp".
std::string TempShardName(const std::string& shard_name);

struct WriteProgress {
  uint64_t files = 0;
  uint64_t bytes = 0;   // member data bytes written
  uint64_t shards = 0;  // shards completed
};
using ProgressFn = std::function<void(const WriteProgress&)>;

// Writes every shard of `plan` into `dir` (which must exist). Errors name the shard and, for
// input problems, the input file. `progress` (may be empty) is called after each member and
// after each completed shard (WriteProgress::shards counts the shards complete so far).
Status WriteShards(const std::string& dir, const std::vector<PackInput>& inputs,
                   const PackPlan& plan, const PackOptions& opts, const ProgressFn& progress);
// The same, also appending each completed shard's content to *written (its name, size and
// mtime as stat(2) sees it after the rename, and the index a reader would build from it), so a
// catalog can be written without reading the shards back (BuildNodes + WriteCatalog).
Status WriteShards(const std::string& dir, const std::vector<PackInput>& inputs,
                   const PackPlan& plan, const PackOptions& opts, const ProgressFn& progress,
                   std::vector<ShardContent>* written);

}  // namespace packfs
