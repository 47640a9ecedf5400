// readfiles: the one reader every small-file contender of bench/ is measured with, so that the
// reading code (not Python, not a shell loop) is never what differs between contenders.
//
//   readfiles --root DIR --list FILE [--threads N] [--scan] [--budget SECONDS]
//       reads every path of FILE (one relative path a line, in that order) under DIR whole:
//       open, read to EOF, close. --scan first lists every directory under DIR (readdir only,
//       as image-folder datasets do) and times that apart from the reads.
//   readfiles --pread FILE [--threads N] [--budget SECONDS]
//       FILE lines are SHARD<TAB>OFFSET<TAB>SIZE: positioned reads of exactly those bytes from
//       shards opened once before the clock starts (the physical limit for a pack set).
//
// N threads take the next item from one shared counter, so the order of the list is the order
// the reads are issued in. After --budget seconds the threads stop and the pass is reported as
// incomplete (a contender that is too slow is recorded, not waited for). Prints one JSON object:
// files, bytes, errors, seconds, files_per_s, mib_per_s, complete, scan_seconds, scan_entries.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
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
};

// One positioned read of the raw-pread mode; `fd` indexes Job::fds.
struct Extent {
  size_t fd = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Everything one pass reads. Filled before the clock starts; read-only while threads run.
struct Job {
  std::vector<std::string> paths;  // path mode: absolute paths
  std::vector<Extent> extents;     // pread mode
  std::vector<int> fds;            // pread mode: one fd per shard, closed at exit
  size_t count() const { return paths.empty() ? extents.size() : paths.size(); }
};

// Per-thread tallies, merged after join (no shared counters on the hot path but the index).
struct Tally {
  uint64_t files = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "readfiles: %s\nusage: readfiles --root DIR --list FILE [--threads N] [--scan] "
               "[--budget S]\n       readfiles --pread FILE [--threads N] [--budget S]\n",
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
    else Usage(("unknown argument " + a).c_str());
  }
  if (o.threads < 1 || o.threads > 1024) Usage("--threads must be 1..1024");
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
    if (!line.empty()) job->paths.push_back(o.root + "/" + line);
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

// Reads one file whole; returns its size, or -1 (counted as an error) on failure.
int64_t ReadWhole(const std::string& path, char* buf, size_t cap) {
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
  }
  ::close(fd);
  return total;
}

int64_t PreadExtent(const Job& job, const Extent& e, char* buf, size_t cap) {
  uint64_t done = 0;
  while (done < e.size) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(cap, e.size - done));
    ssize_t n = ::pread(job.fds[e.fd], buf, want, static_cast<off_t>(e.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    done += static_cast<uint64_t>(n);
  }
  return static_cast<int64_t>(done);
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
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                  opt.budget_s > 0 ? opt.budget_s : 1e9));

  auto worker = [&](Tally* t) {
    constexpr size_t kBuf = 256 * 1024;
    std::unique_ptr<char[]> buf(new char[kBuf]);
    while (!stop.load(std::memory_order_relaxed)) {
      size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) break;
      int64_t got = job.paths.empty() ? PreadExtent(job, job.extents[i], buf.get(), kBuf)
                                      : ReadWhole(job.paths[i], buf.get(), kBuf);
      if (got < 0) {
        ++t->errors;
      } else {
        ++t->files;
        t->bytes += static_cast<uint64_t>(got);
      }
      if (opt.budget_s > 0 && Clock::now() > deadline) stop.store(true);
    }
  };
  std::vector<std::thread> threads;
  for (auto& t : tallies) threads.emplace_back(worker, &t);
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  for (int fd : job.fds) ::close(fd);

  Tally sum;
  for (const Tally& t : tallies) {
    sum.files += t.files;
    sum.bytes += t.bytes;
    sum.errors += t.errors;
  }
  const bool complete = sum.files + sum.errors == n;
  std::printf(
      "{\"mode\":\"%s\",\"threads\":%d,\"listed\":%zu,\"files\":%llu,\"bytes\":%llu,"
      "\"errors\":%llu,\"seconds\":%.6f,\"files_per_s\":%.1f,\"mib_per_s\":%.2f,"
      "\"complete\":%s,\"scan_seconds\":%.6f,\"scan_entries\":%llu}\n",
      job.paths.empty() ? "pread" : "path", opt.threads, n,
      static_cast<unsigned long long>(sum.files), static_cast<unsigned long long>(sum.bytes),
      static_cast<unsigned long long>(sum.errors), secs, secs > 0 ? sum.files / secs : 0.0,
      secs > 0 ? sum.bytes / secs / (1024.0 * 1024.0) : 0.0, complete ? "true" : "false",
      scan_s, static_cast<unsigned long long>(scan_entries));
  return sum.errors == 0 ? 0 : 1;
}
