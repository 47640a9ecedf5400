// Helpers shared by the packing subcommands (`mkpack pack`, `convert-wds`, `convert-lerobot`):
// the options they share, reader threads, binary-unit sizes, and the terminal progress bar. Not
// thread-safe; one bar per command.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/base/byte_size.h"
#include "core/base/status.h"
#include "core/pack/pack_pipeline.h"
#include "core/write/pack_writer.h"

namespace packfs::mkpack {

// Default reader threads of the packing subcommands (`--jobs 0`). Cold small-file reads are
// latency bound and the virtio SSD serves many requests at once: on 100k files of 4-32 KiB, 8
// readers cut the cold pack from 55.6 s (1 reader) to 20.4 s; the readers mostly sleep in I/O,
// so more threads than cores is right.
constexpr int kAutoJobs = 8;
inline int JobsOrAuto(int jobs) { return jobs > 0 ? jobs : kAutoJobs; }

// The options every packing subcommand takes; their argument structs derive from this one.
struct PackOutputArgs {
  bool reproducible = false;
  int jobs = 0;  // 0: auto (kAutoJobs)
  bool json = false;
  bool no_catalog = false;
  bool dry_run = false;
  bool no_fsync = false;
};
// Adds --reproducible, --jobs/-j, --json, --no-catalog, --dry-run and --no-fsync to `sub`, bound
// to *args (which must outlive the parse and the callback), worded alike in every command. What
// differs: what the --jobs threads do, and what --dry-run prints.
void AddPackOutputOptions(CLI::App* sub, PackOutputArgs* args, const std::string& jobs_do,
                          const std::string& dry_run_prints);

// The shard limits: --max-pack-bytes for every packing subcommand, --max-members and --align
// where the members are free to be laid out (`pack`, `convert-wds`).
struct ShardLimitArgs {
  std::string max_pack_bytes = "4294967296";
  uint64_t max_members = kDefaultMaxMembers;
  std::string align = "auto";
};
void AddShardLimitOptions(CLI::App* sub, ShardLimitArgs* args, bool members_and_align);
// Parses the limits into *opts. Strict: "12x" is refused, not read as 12; the error names the
// flag and the value.
Status ApplyShardLimits(const ShardLimitArgs& args, PackOptions* opts);

// "1.5 GiB" (binary units).
std::string Human(double bytes);

// Terminal progress on stderr: files, bytes, rate, ETA; redrawn at most 10 times a second.
class ProgressBar {
 public:
  ProgressBar(uint64_t files, uint64_t bytes);
  void Update(const WriteProgress& p, bool force = false);
  void Clear();

 private:
  using Clock = std::chrono::steady_clock;
  uint64_t files_, bytes_;
  Clock::time_point start_, last_{};
  bool drawn_ = false;
};

// The progress bar of a packing run: drawn while the shards are written, when stderr is a
// terminal; nothing otherwise. Must outlive the run it is attached to.
class RunProgressBar {
 public:
  RunProgressBar();
  // Sets events->writing (Start), events->progress and events->write_ended (clears the bar). A
  // command with its own `writing` event replaces it and calls Start from there.
  void Attach(PackEvents* events);
  // Starts the bar over the run's inputs and data bytes.
  void Start(const PackSummary& s);

 private:
  bool tty_;
  std::optional<ProgressBar> bar_;
};

// The dry run's shards on stdout, one line each: name, members, data bytes, bytes (tab-separated).
void PrintPlannedShards(const PackPlan& plan);

}  // namespace packfs::mkpack
