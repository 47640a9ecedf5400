// `mkpack pack`: packs a directory tree (or a file list) into a pack set of STORED zip shards.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "core/base/key.h"
#include "core/pack/pack_pipeline.h"
#include "core/read/pack_set.h"
#include "core/write/file_walk.h"
#include "core/write/pack_writer.h"
#include "mkpack/commands.h"
#include "mkpack/interrupt.h"
#include "mkpack/pack_cli.h"

namespace packfs::mkpack {
namespace {

struct PackArgs : PackOutputArgs {
  // SRC DST; with --files-from SRC may be left out, and CLI11 then gives the one path as `src`.
  std::string src;
  std::string dst;
  ShardLimitArgs limits;
  std::string group_by = "none";
  bool resume = false;
  bool append = false;
  std::string files_from;
  std::string missing = "error";
  std::string refs_out;
  bool follow_symlinks = false;
};

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string JsonString(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

std::string BaseName(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// The path as given, minus what only makes messages odd ("media/" and "media//x" read as "media"
// and "media/x"). Never resolves "..": through a symlink that would change the meaning.
std::string TidyPath(const std::string& p) {
  std::string o;
  for (char c : p) {
    if (c == '/' && !o.empty() && o.back() == '/') continue;
    o += c;
  }
  while (o.size() > 1 && o.back() == '/') o.pop_back();
  return o;
}

// Refuses a DST that is SRC, lies inside it (the next run would pack the shards themselves) or
// holds it, comparing canonical paths (symlinks resolved; DST need not exist yet).
Status CheckSrcDstApart(const std::string& src, const std::string& dst) {
  std::error_code ec1, ec2;
  const fs::path s = fs::weakly_canonical(src, ec1);
  const fs::path d = fs::weakly_canonical(dst, ec2);
  if (ec1 || ec2) return Status::OK();  // the walk or the write reports what is wrong
  auto inside = [](const fs::path& inner, const fs::path& outer) {
    auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
    return o == outer.end() || (o->empty() && std::next(o) == outer.end());
  };
  const std::string where = " (" + s.string() + " and " + d.string() + ")";
  if (s == d || (inside(d, s) && inside(s, d))) {
    return Status::InvalidArgument("SRC and DST are the same directory" + where +
                                   ": the shards would be written among the files they hold; "
                                   "give a DST outside " + src);
  }
  if (inside(d, s)) {
    return Status::InvalidArgument("DST " + dst + " is inside SRC " + src + where +
                                   ": its shards would be packed into themselves by the next "
                                   "run; give a DST outside " + src);
  }
  if (inside(s, d)) {
    return Status::InvalidArgument("SRC " + src + " is inside DST " + dst + where +
                                   ": the pack directory would hold its own source; give a DST "
                                   "that neither is nor holds " + src);
  }
  return Status::OK();
}

// The names of `keys` for a one-line note: the first few quoted, then how many more.
std::string SomeKeys(const std::vector<std::string>& keys) {
  constexpr size_t kShown = 5;
  std::string s;
  for (size_t i = 0; i < keys.size() && i < kShown; ++i) s += (i ? ", " : "") + QuoteKey(keys[i]);
  if (keys.size() > kShown) s += " and " + std::to_string(keys.size() - kShown) + " more";
  return s;
}

Result<std::string> ReadListText(const std::string& file) {
  std::ostringstream ss;
  if (file == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream f(file, std::ios::binary);
    if (!f) return Status::IOError("cannot read file list " + file + ": " + ErrnoText(errno), errno);
    ss << f.rdbuf();
  }
  return ss.str();
}

// The notes on the plan, before anything is written.
void PrintPackNotes(const PackArgs& a, const InputList& list, const PackPlan& plan) {
  if (!plan.oversized.empty()) {
    const size_t n = plan.oversized.size();
    std::fprintf(stderr,
                 "mkpack pack: note: %zu member%s larger than --max-pack-bytes (%s) and sit%s "
                 "alone in %s shard%s: %s\n",
                 n, n == 1 ? " is" : "s are", a.limits.max_pack_bytes.c_str(), n == 1 ? "s" : "",
                 n == 1 ? "its" : "their", n == 1 ? "" : "s", SomeKeys(plan.oversized).c_str());
  }
  if (!plan.split_groups.empty()) {
    const size_t n = plan.split_groups.size();
    std::fprintf(stderr, "mkpack pack: note: %zu group%s larger than a shard and split: %s\n", n,
                 n == 1 ? " is" : "s are", SomeKeys(plan.split_groups).c_str());
  }
  if (list.skipped_symlinks > 0 || list.skipped_special > 0) {
    std::fprintf(stderr, "mkpack pack: skipped %llu symlink(s) and %llu special file(s)%s\n",
                 static_cast<unsigned long long>(list.skipped_symlinks),
                 static_cast<unsigned long long>(list.skipped_special),
                 list.skipped_symlinks > 0 && !a.follow_symlinks
                     ? " (--follow-symlinks packs links to files)"
                     : "");
  }
  if (!list.missing.empty()) {
    std::fprintf(stderr, "mkpack pack: skipped %zu missing file(s):\n", list.missing.size());
    for (const std::string& m : list.missing) std::fprintf(stderr, "  %s\n", m.c_str());
  }
}

// The inputs SRC or the file list names; an error, or an empty list with nothing pointed at.
Result<InputList> ReadPackInputs(const PackArgs& a, const std::string& src) {
  if (!a.files_from.empty()) {
    PACKFS_ASSIGN_OR_RETURN(std::string text, ReadListText(a.files_from));
    auto r = ReadFileList(text, src,
                          a.missing == "skip" ? MissingPolicy::kSkip : MissingPolicy::kError);
    if (!r.ok()) return r.status().WithPrefix(a.files_from == "-" ? "stdin" : a.files_from);
    return r;
  }
  WalkOptions wo;
  wo.follow_symlinks = a.follow_symlinks;
  return WalkTree(src, wo);
}

// Why there is nothing to pack, for the message that ends the run.
std::string NothingToPack(const PackArgs& a, const InputList& list, const std::string& src) {
  if (!a.files_from.empty()) {
    return list.missing.empty() ? "the file list names no files"
                                : "every file the list names is missing";
  }
  std::string why = src + " holds no regular files";
  if (list.skipped_symlinks > 0 || list.skipped_special > 0) {
    why += " (skipped " + std::to_string(list.skipped_symlinks) + " symlink(s)" +
           (list.skipped_symlinks > 0 && !a.follow_symlinks
                ? ", which --follow-symlinks packs when they point to files"
                : "") +
           ", and " + std::to_string(list.skipped_special) + " special file(s))";
  }
  return why;
}

// --refs-out: every member's blob reference, those packed before this run first.
Status WriteRefs(const std::string& path, const std::string& dst, const PackSummary& s) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::string prefix = BaseName(dst) + "/";
  for (const auto& [key, shard] : s.resumed) {
    out << key << '\t' << FormatRef(key, prefix + shard) << '\n';
  }
  for (const PlannedShard& ps : s.plan.shards) {
    for (size_t i : ps.members) {
      const std::string& key = s.inputs[i].key;
      out << key << '\t' << FormatRef(key, prefix + ps.name) << '\n';
    }
  }
  out.flush();
  if (!out) return Status::IOError("cannot write " + path);
  return Status::OK();
}

// The message of a run that SIGINT or SIGTERM stopped while writing.
void PrintInterrupted(const PackArgs& a, const std::string& src, const std::string& dst,
                      const PackSummary& s) {
  const size_t before = s.target.shards.size();
  size_t members = s.resumed.size();
  for (size_t i = 0; i < s.done.shards && i < s.plan.shards.size(); ++i) {
    members += s.plan.shards[i].members.size();
  }
  std::string resume = "mkpack pack --resume";
  if (!a.files_from.empty()) resume += " --files-from " + a.files_from;
  if (!src.empty()) resume += " " + src;
  resume += " " + dst;
  const std::string unfinished = s.done.shards < s.plan.shards.size()
                                     ? TempShardName(s.plan.shards[s.done.shards].name)
                                     : "";
  std::fprintf(stderr,
               "mkpack pack: interrupted by %s: %llu of %zu shards and %zu of %zu members are "
               "complete in %s%s; run `%s` with the same options to continue\n",
               InterruptName(s.stopped), static_cast<unsigned long long>(before + s.done.shards),
               before + s.plan.shards.size(), members, s.resumed.size() + s.inputs.size(),
               dst.c_str(),
               unfinished.empty() ? ""
                                  : (" (the unfinished shard is left as " + unfinished +
                                     ", which --resume removes)").c_str(),
               resume.c_str());
}

// The summary of a complete run: a line on stderr, and with --json an object on stdout.
void PrintPackSummary(const PackArgs& a, const InputList& list, const PackSummary& s,
                      double secs) {
  const PackPlan& plan = s.plan;
  double mbps = secs > 0 ? plan.data_bytes / secs / 1e6 : 0;
  std::fprintf(stderr, "mkpack pack: %zu files, %llu bytes, %zu shards in %.2f s (%.1f MB/s)%s\n",
               s.inputs.size(), static_cast<unsigned long long>(plan.data_bytes),
               plan.shards.size(), secs, mbps,
               s.resumed.empty()
                   ? ""
                   : (", " + std::to_string(s.resumed.size()) + " already packed").c_str());
  if (a.json) {
    std::printf(
        "{\"files\": %zu, \"bytes\": %llu, \"shards\": %zu, \"shard_bytes\": %llu, "
        "\"seconds\": %.3f, \"mb_per_s\": %.1f, \"resumed\": %zu, \"skipped_symlinks\": %llu, "
        "\"skipped_special\": %llu, \"missing\": %zu, \"oversized\": %zu, \"split_groups\": %zu, "
        "\"first_shard\": %s}\n",
        s.inputs.size(), static_cast<unsigned long long>(plan.data_bytes), plan.shards.size(),
        static_cast<unsigned long long>(plan.shard_bytes), secs, mbps, s.resumed.size(),
        static_cast<unsigned long long>(list.skipped_symlinks),
        static_cast<unsigned long long>(list.skipped_special), list.missing.size(),
        plan.oversized.size(), plan.split_groups.size(),
        plan.shards.empty() ? "null" : JsonString(plan.shards[0].name).c_str());
  }
}

// Runs the whole command; returns the exit code. Messages go to stderr.
int RunPack(const PackArgs& a) {
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "mkpack pack: %s\n", st.message().c_str());
    return kExitError;
  };
  auto t0 = Clock::now();
  std::string src = TidyPath(a.src), dst = TidyPath(a.dst);
  if (!a.files_from.empty() && dst.empty()) std::swap(src, dst);
  if (src.empty() && a.files_from.empty()) {
    return fail(Status::InvalidArgument("expected SRC DST (or DST alone with --files-from)"));
  }
  if (dst.empty()) return fail(Status::InvalidArgument("expected SRC DST"));
  if (a.resume && a.append) {
    return fail(Status::InvalidArgument("--resume and --append exclude each other"));
  }
  // A file list names its files, so DST may well sit inside the SRC its paths start from.
  if (a.files_from.empty()) {
    if (Status st = CheckSrcDstApart(src, dst); !st.ok()) return fail(st);
  }

  PackJob job;
  job.dir = dst;
  if (Status st = ApplyShardLimits(a.limits, &job.options); !st.ok()) return fail(st);
  job.options.group_by = a.group_by == "dir"    ? GroupBy::kDir
                         : a.group_by == "stem" ? GroupBy::kStem
                                                : GroupBy::kNone;
  job.options.reproducible = a.reproducible;
  job.options.jobs = JobsOrAuto(a.jobs);
  job.options.sync = !a.no_fsync;
  job.policy = a.append   ? TargetPolicy::kAppend
               : a.resume ? TargetPolicy::kResume
                          : TargetPolicy::kNew;
  job.dry_run = a.dry_run;
  job.catalog = !a.no_catalog;
  job.catalog_from_writer = true;
  job.create_parents = true;

  auto read = ReadPackInputs(a, src);
  if (!read.ok()) return fail(read.status());
  InputList& list = *read;
  if (list.inputs.empty()) {
    // Nothing is written, not even DST: an empty pack directory helps no one.
    std::fprintf(stderr, "mkpack pack: nothing to pack: %s; %s was not written\n",
                 NothingToPack(a, list, src).c_str(), dst.c_str());
    return kExitProblems;
  }
  job.inputs = std::move(list.inputs);

  PackEvents events;
  RunProgressBar bar;
  bar.Attach(&events);
  events.planned = [&](const PackSummary& s) { PrintPackNotes(a, list, s.plan); };
  // From the first shard on SIGINT and SIGTERM stop the run between members, so it can say what
  // is done.
  std::optional<InterruptWatch> interrupt;
  events.writing = [&](const PackSummary& s) {
    interrupt.emplace();
    bar.Start(s);
    return &interrupt->signal();
  };
  if (!a.refs_out.empty()) {
    events.shards_complete = [&](const PackSummary& s) { return WriteRefs(a.refs_out, dst, s); };
  }
  auto run = RunPackJob(std::move(job), events);
  if (!run.ok()) return fail(run.status());
  const PackSummary& s = *run;
  const PackPlan& plan = s.plan;
  if (a.dry_run) {
    PrintPlannedShards(plan);
    std::printf("total\t%zu shards\t%zu members\t%llu bytes\n", plan.shards.size(),
                s.inputs.size(), static_cast<unsigned long long>(plan.shard_bytes));
    return list.missing.empty() ? kExitOk : kExitProblems;
  }
  if (s.stopped != 0) {
    PrintInterrupted(a, src, dst, s);
    return 128 + s.stopped;
  }
  if (const int sig = interrupt ? interrupt->signal().load() : 0; sig != 0) {
    std::fprintf(stderr,
                 "mkpack pack: %s arrived after the last shard was written; %s is complete "
                 "(%zu members packed in this run)\n",
                 InterruptName(sig), dst.c_str(), s.inputs.size());
    return 128 + sig;
  }

  PrintPackSummary(a, list, s, std::chrono::duration<double>(Clock::now() - t0).count());
  return list.missing.empty() ? kExitOk : kExitProblems;
}

}  // namespace

void RegisterPack(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<PackArgs>();
  CLI::App* sub = app.add_subcommand(
      "pack",
      "Pack every regular file under SRC into STORED zip shards in DST (pack-0000.zip, ...), key = "
      "path relative to SRC, in key byte order, then write the catalog.\n"
      "Symlinks are skipped and counted unless --follow-symlinks (links to regular files only; "
      "links to directories are never followed). FIFOs, sockets and devices are skipped.\n"
      "Shards are written as .pack-NNNN.zip.tmp and renamed when complete. A DST that already "
      "holds shards is refused unless --append (new shards; an existing key is an error) or "
      "--resume (continue after the last complete shard; leftover temp files are removed).\n"
      "DST may be neither SRC nor inside it nor around it; it is created with its parents.\n"
      "SIGINT or SIGTERM stops the run between members, keeping the complete shards; --resume "
      "continues it.\n"
      "Exit status: 0 ok, 1 nothing to pack or some --files-from entries were missing "
      "(--missing skip), 2 usage or I/O error, 130/143 stopped by SIGINT/SIGTERM.");
  sub->add_option("SRC", args->src,
                  "the directory to pack (with --files-from: optional, where relative paths in "
                  "the list start)")
      ->type_name("");
  sub->add_option("DST", args->dst,
                  "the pack directory to write (created with its parents if missing)")
      ->type_name("");
  AddShardLimitOptions(sub, &args->limits, /*members_and_align=*/true);
  sub->add_option("--group-by", args->group_by,
                  "keep groups in one shard: none; dir (same parent directory); stem (WebDataset "
                  "sample: directory + name up to its first dot). Groups are written adjacent, in "
                  "order of first appearance; a group larger than a shard is split (reported)")
      ->check(CLI::IsMember({"none", "dir", "stem"}))
      ->capture_default_str();
  sub->add_flag("--resume", args->resume, "continue an interrupted run into DST");
  sub->add_flag("--append", args->append, "add new shards to a DST that already holds shards");
  sub->add_option("--files-from", args->files_from,
                  "pack exactly the files listed (one per line, in that order; '-' = stdin): "
                  "'path' or 'key<TAB>path' (split at the last tab). Relative paths are relative to "
                  "SRC, or to the current directory when SRC is omitted; the key of a plain path "
                  "is that relative path (absolute paths need SRC above them, or a key)");
  sub->add_option("--missing", args->missing,
                  "a listed file that does not exist: error (stop before any shard is written) or "
                  "skip (pack the rest, list the skipped files, exit status 1)")
      ->check(CLI::IsMember({"error", "skip"}))
      ->capture_default_str();
  sub->add_option("--refs-out", args->refs_out,
                  "write 'key<TAB>zip://key::<basename(DST)>/pack-NNNN.zip' for every member");
  sub->add_flag("--follow-symlinks", args->follow_symlinks, "pack symlinks to regular files");
  AddPackOutputOptions(sub, args.get(),
                       "reader threads prefetching small files (helps on cold caches and network "
                       "filesystems)",
                       "print the plan (shards, members, bytes)");
  sub->callback([args, exit_code] { *exit_code = RunPack(*args); });
}

}  // namespace packfs::mkpack
