// readfiles: the one reader every small-file contender of bench/ is measured with, so that the
// reading code (not Python, not a shell loop) is never what differs between contenders.
//
//   readfiles --root DIR --list FILE [--threads N] [--scan] [--budget SECONDS]
//       reads every path of FILE (one relative path a line, in that order) under DIR whole:
//       open, read to EOF, close. --scan first lists every directory under DIR (readdir only,
//       as image-folder datasets do) and times that apart from the reads.
//   readfiles --pread FILE [--threads N] [--budget SECONDS]
//       FILE lines are SHARD<TAB>OFFSET<TAB>SIZE[<TAB>KEY]: positioned reads of exactly those
//       bytes from shards opened once before the clock starts (the physical limit for a pack set).
//   --verify DIR (either mode; a check, not a measurement): compares every file read with the
//       file of the same relative path (pread mode: KEY) under DIR; a difference is a mismatch.
//   --block BYTES (either mode): the size of each read(2) or pread(2), a multiple of 4096 up to
//       16 MiB (default 256 KiB); a reader of small blocks (ffmpeg reads 32 KiB) leans on the
//       kernel's read-ahead.
//   --split K (either mode): also reports when the K-th item was done (split_seconds), so that
//       one pass gives the rate of its first K items and of the rest: an epoch's first part,
//       before a mount knows it reads whole directories, costs differently from the rest.
//   --timeline MS (either mode): also reports the items done every MS milliseconds (timeline:
//       counts at MS, 2 MS, ...), to see where a pass stalls.
//
// N threads take the next item from one shared counter, so the order of the list is the order
// the reads are issued in. After --budget seconds the threads stop and the pass is reported as
// incomplete (a contender that is too slow is recorded, not waited for); a thread stuck in one
// read for another max(1 s, budget/5) is abandoned: the figures so far are printed and the
// process exits without joining it. Prints one JSON object: files, bytes, errors, mismatches,
// seconds, files_per_s, mib_per_s, complete, abandoned, scan_seconds, scan_entries, and with
// --split split_files and split_seconds (-1 when the pass ended before), with --timeline
// timeline_ms and timeline.
// Exit status: 0 all read, 1 read errors, 2 usage or list errors, 3 mismatches (wrong bytes).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string root;
  std::string list;
  std::string pread_list;
  int threads = 1;
  bool scan = false;
  double budget_s = 0;  // 0: no budget
  std::string verify_root;  // empty: no byte check
  size_t block = 256 * 1024;  // bytes per read(2) / pread(2)
  size_t split = 0;           // 0: no split time
  int timeline_ms = 0;        // 0: no timeline
};

// One positioned read of the raw-pread mode; `fd` indexes Job::fds.
struct Extent {
  size_t fd = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string key;  // relative path of the same bytes as a loose file (for --verify)
};

// Everything one pass reads. Filled before the clock starts; read-only while threads run.
struct Job {
  std::vector<std::string> paths;  // path mode: absolute paths
  std::vector<std::string> rel;    // path mode: the paths as listed (for --verify)
  std::vector<Extent> extents;     // pread mode
  std::vector<int> fds;            // pread mode: one fd per shard, closed at exit
  size_t count() const { return paths.empty() ? extents.size() : paths.size(); }
};

// Per-thread tallies (no shared counters on the hot path but the index). Relaxed atomics only
// because the main thread may read them while an abandoned worker is still stuck in a read.
struct Tally {
  std::atomic<uint64_t> files{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> mismatches{0};
  void Add(std::atomic<uint64_t>& c, uint64_t n) { c.fetch_add(n, std::memory_order_relaxed); }
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "readfiles: %s\nusage: readfiles --root DIR --list FILE [--threads N] [--scan] "
               "[--budget S] [--block BYTES] [--split K] [--timeline MS]\n"
               "       readfiles --pread FILE [--threads N] [--budget S] [--block BYTES] "
               "[--split K] [--timeline MS]\n",
               why);
  std::exit(2);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--root") o.root = value();
    else if (a == "--list") o.list = value();
    else if (a == "--pread") o.pread_list = value();
    else if (a == "--threads") o.threads = std::atoi(value().c_str());
    else if (a == "--budget") o.budget_s = std::atof(value().c_str());
    else if (a == "--scan") o.scan = true;
    else if (a == "--verify") o.verify_root = value();
    else if (a == "--block") o.block = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--split") o.split = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--timeline") o.timeline_ms = std::atoi(value().c_str());
    else Usage(("unknown argument " + a).c_str());
  }
  if (o.timeline_ms < 0) Usage("--timeline must be a number of milliseconds");
  if (o.threads < 1 || o.threads > 1024) Usage("--threads must be 1..1024");
  if (o.block < 4096 || o.block > (16u << 20) || o.block % 4096 != 0)
    Usage("--block must be a multiple of 4096 in 4096..16777216");
  if (o.pread_list.empty() == (o.list.empty() || o.root.empty()))
    Usage("give either --root and --list, or --pread");
  if (o.scan && !o.pread_list.empty()) Usage("--scan needs --root");
  return o;
}

bool LoadPaths(const Options& o, Job* job) {
  std::ifstream in(o.list);
  if (!in) {
    std::fprintf(stderr, "readfiles: cannot open list %s: %s\n", o.list.c_str(),
                 std::strerror(errno));
    return false;
  }
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    job->paths.push_back(o.root + "/" + line);
    job->rel.push_back(line);
  }
  return true;
}

bool LoadExtents(const Options& o, Job* job) {
  std::ifstream in(o.pread_list);
  if (!in) {
    std::fprintf(stderr, "readfiles: cannot open list %s: %s\n", o.pread_list.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::map<std::string, size_t> shard_index;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::string key;
    size_t t3 = line.find('\t');
    t3 = t3 == std::string::npos ? t3 : line.find('\t', t3 + 1);
    t3 = t3 == std::string::npos ? t3 : line.find('\t', t3 + 1);
    if (t3 != std::string::npos) {  // optional fourth column: the key
      key = line.substr(t3 + 1);
      line.resize(t3);
    }
    size_t t2 = line.rfind('\t');
    size_t t1 = t2 == std::string::npos || t2 == 0 ? std::string::npos : line.rfind('\t', t2 - 1);
    if (t1 == std::string::npos) {
      std::fprintf(stderr, "readfiles: %s: expected SHARD<TAB>OFFSET<TAB>SIZE, got '%s'\n",
                   o.pread_list.c_str(), line.c_str());
      return false;
    }
    std::string shard = line.substr(0, t1);
    auto [it, fresh] = shard_index.emplace(shard, job->fds.size());
    if (fresh) {
      int fd = ::open(shard.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        std::fprintf(stderr, "readfiles: cannot open shard %s: %s\n", shard.c_str(),
                     std::strerror(errno));
        return false;
      }
      job->fds.push_back(fd);
    }
    Extent e;
    e.fd = it->second;
    e.offset = std::strtoull(line.c_str() + t1 + 1, nullptr, 10);
    e.size = std::strtoull(line.c_str() + t2 + 1, nullptr, 10);
    e.key = std::move(key);
    job->extents.push_back(e);
  }
  return true;
}

// Lists every directory under `dir` (readdir only; stat just when d_type is unknown).
uint64_t Scan(const std::string& dir) {
  uint64_t entries = 0;
  std::vector<std::string> todo{dir};
  while (!todo.empty()) {
    std::string d = std::move(todo.back());
    todo.pop_back();
    std::unique_ptr<DIR, int (*)(DIR*)> h(::opendir(d.c_str()), ::closedir);
    if (!h) {
      std::fprintf(stderr, "readfiles: cannot list %s: %s\n", d.c_str(), std::strerror(errno));
      continue;
    }
    while (dirent* e = ::readdir(h.get())) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      ++entries;
      std::string child = d + "/" + e->d_name;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st;
        is_dir = ::lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      }
      if (is_dir) todo.push_back(std::move(child));
    }
  }
  return entries;
}

// Reads one file whole; returns its size, or -1 (counted as an error) on failure. With `keep`,
// appends the bytes to it (verification only: copying is not part of what is measured).
int64_t ReadWhole(const std::string& path, char* buf, size_t cap, std::string* keep = nullptr) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf, cap);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      total = -1;
      break;
    }
    if (n == 0) break;
    total += n;
    if (keep) keep->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return total;
}

int64_t PreadExtent(const Job& job, const Extent& e, char* buf, size_t cap,
                    std::string* keep = nullptr) {
  uint64_t done = 0;
  while (done < e.size) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(cap, e.size - done));
    ssize_t n = ::pread(job.fds[e.fd], buf, want, static_cast<off_t>(e.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    if (keep) keep->append(buf, static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
  return static_cast<int64_t>(done);
}

// True when `got` equals the whole content of `expected_path`.
bool SameAsFile(const std::string& got, const std::string& expected_path, char* buf, size_t cap) {
  std::string want;
  return ReadWhole(expected_path, buf, cap, &want) >= 0 && want == got;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = ParseArgs(argc, argv);
  Job job;
  if (!(opt.pread_list.empty() ? LoadPaths(opt, &job) : LoadExtents(opt, &job))) return 2;

  double scan_s = 0;
  uint64_t scan_entries = 0;
  if (opt.scan) {
    auto t0 = Clock::now();
    scan_entries = Scan(opt.root);
    scan_s = std::chrono::duration<double>(Clock::now() - t0).count();
  }

  const size_t n = job.count();
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::vector<Tally> tallies(static_cast<size_t>(opt.threads));
  const bool verify = !opt.verify_root.empty();
  std::mutex done_mu;
  std::condition_variable done_cv;
  int running = opt.threads;  // guarded by done_mu
  // Items done, counted only with --split or --timeline (one shared counter more on the hot path),
  // and when the split-th was (nanoseconds after start; -1: not yet).
  std::atomic<size_t> finished{0};
  std::atomic<int64_t> split_ns{-1};
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                  opt.budget_s > 0 ? opt.budget_s : 1e9));

  auto worker = [&](Tally* t) {
    const size_t block = opt.block;
    // Page-aligned, as cat's and dd's buffers are: the kernel's copy into a buffer 16 bytes past a
    // page (what `new char[256 KiB]` returns) from a page-aligned file offset runs 5x slower on
    // AMD EPYC (rep movsb), which slowed every whole-file read of loose files and mounts alike.
    std::unique_ptr<char, decltype(&std::free)> buf(
        static_cast<char*>(std::aligned_alloc(4096, block)), &std::free);
    if (!buf) std::abort();
    while (!stop.load(std::memory_order_relaxed)) {
      size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) break;
      std::string content;
      std::string* keep = verify ? &content : nullptr;
      int64_t got = job.paths.empty() ? PreadExtent(job, job.extents[i], buf.get(), block, keep)
                                      : ReadWhole(job.paths[i], buf.get(), block, keep);
      if (got < 0) {
        t->Add(t->errors, 1);
      } else {
        if (verify) {
          const std::string& rel = job.paths.empty() ? job.extents[i].key : job.rel[i];
          if (rel.empty() || !SameAsFile(content, opt.verify_root + "/" + rel, buf.get(), block)) {
            std::fprintf(stderr, "readfiles: wrong bytes for %s\n",
                         job.paths.empty() ? rel.c_str() : job.paths[i].c_str());
            t->Add(t->mismatches, 1);
          }
        }
        t->Add(t->files, 1);
        t->Add(t->bytes, static_cast<uint64_t>(got));
      }
      if ((opt.split > 0 || opt.timeline_ms > 0) &&
          finished.fetch_add(1, std::memory_order_relaxed) + 1 == opt.split) {
        split_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start)
                           .count());
      }
      if (opt.budget_s > 0 && Clock::now() > deadline) stop.store(true);
    }
    std::lock_guard<std::mutex> lock(done_mu);
    if (--running == 0) done_cv.notify_all();
  };
  std::vector<std::thread> threads;
  for (auto& t : tallies) threads.emplace_back(worker, &t);
  std::vector<size_t> timeline;
  bool abandoned = false;
  {
    std::unique_lock<std::mutex> lock(done_mu);
    // Sampled here until the readers are done or the budget is spent (not into the grace period).
    for (auto at = start; opt.timeline_ms > 0 && running > 0 && at < deadline;) {
      at += std::chrono::milliseconds(opt.timeline_ms);
      if (done_cv.wait_until(lock, at, [&] { return running == 0; })) break;
      timeline.push_back(finished.load(std::memory_order_relaxed));
    }
  }
  {
    // A FUSE contender can take seconds or minutes for one file (archivemount): past the
    // budget plus a grace period, report what finished rather than wait for the stuck read.
    std::unique_lock<std::mutex> lock(done_mu);
    if (opt.budget_s > 0) {
      const auto grace = std::chrono::duration<double>(std::max(1.0, opt.budget_s / 5));
      abandoned = !done_cv.wait_until(
          lock, deadline + std::chrono::duration_cast<Clock::duration>(grace),
          [&] { return running == 0; });
    } else {
      done_cv.wait(lock, [&] { return running == 0; });
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();

  uint64_t files = 0, bytes = 0, errors = 0, mismatches = 0;
  for (const Tally& t : tallies) {
    files += t.files.load(std::memory_order_relaxed);
    bytes += t.bytes.load(std::memory_order_relaxed);
    errors += t.errors.load(std::memory_order_relaxed);
    mismatches += t.mismatches.load(std::memory_order_relaxed);
  }
  const bool complete = files + errors == n;
  std::printf(
      "{\"mode\":\"%s\",\"threads\":%d,\"listed\":%zu,\"files\":%llu,\"bytes\":%llu,"
      "\"errors\":%llu,\"mismatches\":%llu,\"seconds\":%.6f,\"files_per_s\":%.1f,"
      "\"mib_per_s\":%.2f,\"complete\":%s,\"abandoned\":%s,\"scan_seconds\":%.6f,"
      "\"scan_entries\":%llu,\"split_files\":%zu,\"split_seconds\":%.6f",
      job.paths.empty() ? "pread" : "path", opt.threads, n, static_cast<unsigned long long>(files),
      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(errors),
      static_cast<unsigned long long>(mismatches), secs, secs > 0 ? files / secs : 0.0,
      secs > 0 ? bytes / secs / (1024.0 * 1024.0) : 0.0, complete ? "true" : "false",
      abandoned ? "true" : "false", scan_s, static_cast<unsigned long long>(scan_entries),
      opt.split, split_ns.load() < 0 ? -1.0 : split_ns.load() / 1e9);
  if (opt.timeline_ms > 0) {
    std::printf(",\"timeline_ms\":%d,\"timeline\":[", opt.timeline_ms);
    for (size_t i = 0; i < timeline.size(); ++i) std::printf("%s%zu", i ? "," : "", timeline[i]);
    std::printf("]");
  }
  std::printf("}\n");
  std::fflush(stdout);
  const int status = mismatches ? 3 : errors ? 1 : 0;
  if (abandoned) std::_Exit(status);  // joining would wait for the stuck read
  for (auto& t : threads) t.join();
  for (int fd : job.fds) ::close(fd);
  return status;
}
