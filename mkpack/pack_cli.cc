// Helpers shared by the packing subcommands (see pack_cli.h).
#include "mkpack/pack_cli.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace packfs::mkpack {

std::string Human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

ProgressBar::ProgressBar(uint64_t files, uint64_t bytes)
    : files_(files), bytes_(bytes), start_(Clock::now()) {}

void ProgressBar::Update(const WriteProgress& p, bool force) {
  auto now = Clock::now();
  if (!force && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  double secs = std::chrono::duration<double>(now - start_).count();
  double rate = secs > 0 ? p.bytes / secs : 0;
  double frac = bytes_ > 0 ? static_cast<double>(p.bytes) / bytes_
                           : (files_ > 0 ? static_cast<double>(p.files) / files_ : 1);
  int filled = static_cast<int>(frac * 24);
  std::string bar(filled, '#');
  bar.resize(24, '.');
  double eta = rate > 0 ? (bytes_ - p.bytes) / rate : 0;
  std::fprintf(stderr, "\r[%s] %llu/%llu files  %s/%s  %s/s  ETA %.0fs   ", bar.c_str(),
               static_cast<unsigned long long>(p.files), static_cast<unsigned long long>(files_),
               Human(p.bytes).c_str(), Human(bytes_).c_str(), Human(rate).c_str(), eta);
  drawn_ = true;
}

void ProgressBar::Clear() {
  if (drawn_) std::fprintf(stderr, "\r%*s\r", 100, "");
}

RunProgressBar::RunProgressBar() : tty_(::isatty(STDERR_FILENO) == 1) {}

void RunProgressBar::Attach(PackEvents* events) {
  events->writing = [this](const PackSummary& s) -> const std::atomic<int>* {
    Start(s);
    return nullptr;
  };
  events->progress = [this](const WriteProgress& p) {
    if (bar_) bar_->Update(p);
  };
  events->write_ended = [this] {
    if (bar_) bar_->Clear();
  };
}

void RunProgressBar::Start(const PackSummary& s) {
  if (tty_) bar_.emplace(s.inputs.size(), s.plan.data_bytes);
}

void PrintPlannedShards(const PackPlan& plan) {
  for (const PlannedShard& s : plan.shards) {
    std::printf("%s\t%zu members\t%llu data bytes\t%llu bytes\n", s.name.c_str(),
                s.members.size(), static_cast<unsigned long long>(s.data_bytes),
                static_cast<unsigned long long>(s.bytes));
  }
}

void AddShardLimitOptions(CLI::App* sub, ShardLimitArgs* args, bool members_and_align) {
  sub->add_option("--max-pack-bytes", args->max_pack_bytes,
                  "shard size limit counting every header and padding byte; suffixes K, M, G, T "
                  "(binary). A single larger member sits alone in its shard (reported)")
      ->capture_default_str();
  if (!members_and_align) return;
  sub->add_option("--max-members", args->max_members, "members per shard at most")
      ->capture_default_str();
  sub->add_option("--align", args->align,
                  "data alignment: 'auto' = 4096 for members of 1 MiB or more, none below; N = "
                  "every member's data starts on an N-byte boundary (0: no padding; <= 65535)")
      ->capture_default_str();
}

Status ApplyShardLimits(const ShardLimitArgs& args, PackOptions* opts) {
  auto bytes = ParseByteSize(args.max_pack_bytes);
  if (!bytes.ok()) return bytes.status().WithPrefix("--max-pack-bytes");
  opts->max_pack_bytes = *bytes;
  opts->max_members = args.max_members;
  if (args.align != "auto") {
    const char* s = args.align.c_str();
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < 0 || v > 65535 ||
        !std::isdigit(static_cast<unsigned char>(*s))) {
      return Status::InvalidArgument("--align must be 'auto' or 0..65535, got '" + args.align +
                                     "'");
    }
    opts->align = v;
  }
  return Status::OK();
}

void AddPackOutputOptions(CLI::App* sub, PackOutputArgs* args, const std::string& jobs_do,
                          const std::string& dry_run_prints) {
  sub->add_flag("--reproducible", args->reproducible,
                "fixed times (1980-01-01) so that two runs over the same input give identical "
                "shards");
  sub->add_option("--jobs,-j", args->jobs,
                  jobs_do + "; 0 = auto (" + std::to_string(kAutoJobs) +
                      "); the output does not depend on it")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  sub->add_flag("--json", args->json, "print the summary as JSON on stdout");
  sub->add_flag("--no-catalog", args->no_catalog, "do not write .packfs-catalog.sqlite");
  sub->add_flag("--dry-run", args->dry_run, dry_run_prints + "; write nothing");
  sub->add_flag("--no-fsync", args->no_fsync,
                "skip fsync of shards and directory (faster; not crash-safe)");
}

}  // namespace packfs::mkpack
