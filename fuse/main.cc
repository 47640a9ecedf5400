// packfs: mounts pack sets as a read-only directory tree.
//
//   packfs [options] SOURCE... MOUNTPOINT
//
// A SOURCE is a pack directory, a .tar file, or the URL of a pack directory on an HTTP(S) server
// or in S3 (https://host/data/media, s3://bucket/data/media).
//
// Without -f the command returns only once the mount answers: it forks, the child opens the
// sources, mounts and reports over a pipe from the kernel's INIT (or sends its error); the parent
// waits for that one message, prints any error and exits with the child's verdict. Forking comes
// before anything opens SQLite or starts threads, so the child never inherits either.
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "git_rev.h"
#include "core/base/byte_size.h"
#include "core/base/json.h"
#include "core/base/unique_fd.h"
#include "core/lerobot/lerobot_view.h"
#include "core/open/open_source.h"
#include "core/read/filesystem.h"
#include "core/read/pack_set.h"
#include "core/remote/remote_pack_set.h"
#include "core/remote/url.h"
#include "fuse/logger.h"
#include "fuse/mount_options.h"
#include "fuse/read_ahead.h"
#include "fuse/session.h"

namespace packfs {
namespace {

struct Cli {
  std::vector<std::string> paths;  // sources then mountpoint
  std::vector<std::string> o;
  bool foreground = false;
  bool debug = false;
  int threads = 0;
  std::string catalog;
  std::string on_collision;
  bool lerobot = false;
  bool no_lerobot = false;
  std::string lerobot_view;  // "v2.1", "v3" or "" (v2.1)
  // Remote sources.
  std::string endpoint;
  std::string region;
  bool anonymous = false;
  size_t max_connections = 0;
  std::string cache_dir;
  std::string catalog_download_limit;
  std::string cache_size;
  std::string disk_cache;
  std::string disk_cache_size;
  std::string log;
};

Result<std::string> CheckMountpoint(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOTCONN) {
      return Status::IOError("mountpoint " + path + " is a dead FUSE mount; run `fusermount3 -u " +
                             path + "` first", err);
    }
    return Status::IOError("mountpoint " + path + ": " + ErrnoText(err), err);
  }
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument("mountpoint " + path +
                                                           " is not a directory");
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) return Status::IOError("mountpoint " + path + ": " +
                                                             ErrnoText(errno), errno);
  std::string real = buf;
  if (MountDevice(real).ok()) {
    return Status::AlreadyExists("mountpoint " + real +
                                 " is busy: something is already mounted there (unmount it "
                                 "with `fusermount3 -u " + real + "` or choose another directory)");
  }
  return real;
}

// True when directory `path` holds anything besides "." and ".." (false when it cannot be read:
// then there is nothing to warn about that we know of).
bool HasEntries(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return false;
  bool any = false;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") {
      any = true;
      break;
    }
  }
  ::closedir(dir);
  return any;
}

// `path` made absolute against the current directory, which the daemon leaves (chdir("/")) before
// it opens anything: every path option goes through here before the fork. "" stays "".
std::string AbsolutePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

// The malloc arenas' totals (glibc): bytes they took from the system, of those free (kept for
// reuse, not a leak), and bytes of large blocks mapped on their own.
std::string MallocJson() {
  const struct mallinfo2 mi = ::mallinfo2();
  return "\"malloc\": {\"arena_bytes\": " + std::to_string(mi.arena) +
         ", \"free_bytes\": " + std::to_string(mi.fordblks) +
         ", \"mmap_bytes\": " + std::to_string(mi.hblkhd) + "}";
}

bool AnyRemote(const std::vector<SourceLocation>& sources) {
  return std::any_of(sources.begin(), sources.end(),
                     [](const SourceLocation& s) { return IsRemoteLocation(s.location); });
}

// Everything resolved from the command line, before any fork.
struct Plan {
  std::vector<SourceLocation> sources;  // URLs, absolute directories (with tar files given)
  std::string mountpoint;               // absolute
  MountOptions mount;
  FilesystemOptions fs;
  PackSetOptions pack;
  RemoteOptions remote;  // for http(s):// and s3:// sources
  // --lerobot, --no-lerobot, --lerobot-view (see OpenSourceOptions).
  OpenSourceOptions::LeRobot lerobot = OpenSourceOptions::LeRobot::kAuto;
  LeRobotLayout lerobot_layout = LeRobotLayout::kV21;
  bool lerobot_layout_given = false;
  int threads = 8;
  bool foreground = false;
  bool debug = false;
  // For stderr before the mount starts (e.g. a non-empty mountpoint).
  std::vector<std::string> warnings;
  std::string log_file;          // --log / -o log= (absolute), or ""
  std::string default_log_file;  // where a daemon logs when syslog is unreachable
};

// <cache dir>/mount-<last component of the mountpoint>-<8 hex digits of its hash>.log: one file
// per mountpoint, found by its name, kept apart from another mountpoint of the same name.
std::string DefaultLogFile(const std::string& cache_dir, const std::string& mountpoint) {
  std::string name = std::filesystem::path(mountpoint).filename().string();
  for (char& c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '/') c = '_';
  }
  if (name.size() > 64) name.resize(64);
  if (name.empty()) name = "root";
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x",
                static_cast<unsigned>(XXH3_64bits(mountpoint.data(), mountpoint.size())));
  return cache_dir + "/mount-" + name + "-" + hex + ".log";
}

// 512 MiB, but at most an eighth of the RAM (and at least 64 MiB): enough to hold the read-ahead
// of several sequential readers (64 MiB windows) plus a working set of small files, without
// crowding out the page cache, which holds the same bytes again once read.
uint64_t DefaultMemoryCacheBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  uint64_t bytes = uint64_t{512} << 20;
  if (pages > 0 && page > 0) {
    bytes = std::min(bytes, static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 8);
  }
  return std::max(bytes, uint64_t{64} << 20);
}

Result<Plan> MakePlan(const Cli& cli) {
  if (cli.paths.size() < 2) {
    return Status::InvalidArgument("need at least one SOURCE and a MOUNTPOINT (see --help)");
  }
  Plan plan;
  for (const auto& o : cli.o) PACKFS_RETURN_IF_ERROR(ParseMountOptions(o, &plan.mount));
  PACKFS_ASSIGN_OR_RETURN(plan.mountpoint, CheckMountpoint(cli.paths.back()));
  if (!plan.mount.nonempty && HasEntries(plan.mountpoint)) {
    // As mount(8) users expect: libfuse 3 mounts over a non-empty directory without a word.
    plan.warnings.push_back("warning: mountpoint " + plan.mountpoint + " is not empty; what it "
                            "holds is hidden while packfs is mounted there (-o nonempty "
                            "silences this warning)");
  }
  // URLs are checked for form now and reached after the fork; local paths are made absolute.
  PACKFS_ASSIGN_OR_RETURN(plan.sources, ResolveSources(std::vector<std::string>(
                                            cli.paths.begin(), cli.paths.end() - 1)));
  const bool any_remote = AnyRemote(plan.sources);
  plan.fs.uid = plan.mount.uid.value_or(::getuid());
  plan.fs.gid = plan.mount.gid.value_or(::getgid());
  plan.fs.umask = plan.mount.umask.value_or(0);
  plan.fs.verify_crc = plan.mount.crc;
  // Directory streaming is read-ahead too: -o noprefetch turns it off with the lookup hints.
  plan.fs.stream_dirs = plan.mount.stream && plan.mount.prefetch;
  // The lookup's hint, given at the first READ to files read without a lookup (after a listing)
  // on network file systems: the same bound, and off with it.
  plan.fs.read_hint_max = plan.mount.prefetch ? ServeConfig{}.prefetch_max : 0;
  std::string collision = !cli.on_collision.empty() ? cli.on_collision
                                                    : plan.mount.on_collision.value_or("error");
  if (collision == "first") {
    plan.fs.on_collision = FilesystemOptions::OnCollision::kFirst;
  } else if (collision == "last") {
    plan.fs.on_collision = FilesystemOptions::OnCollision::kLast;
  } else if (collision != "error") {
    return Status::InvalidArgument("--on-collision must be error, first or last, not '" +
                                   collision + "'");
  }
  std::string catalog = !cli.catalog.empty() ? cli.catalog : plan.mount.catalog.value_or("");
  if (any_remote && !catalog.empty()) {
    return Status::InvalidArgument("--catalog applies to local pack directories; a URL source "
                                   "uses the .packfs-catalog.sqlite beside its shards");
  }
  if (catalog == "none") {
    plan.pack.catalog_use = PackSetOptions::CatalogUse::kNone;
  } else if (!catalog.empty()) {
    if (plan.sources.size() != 1) {
      return Status::InvalidArgument("--catalog PATH names one catalog; it needs exactly one "
                                     "SOURCE");
    }
    plan.pack.catalog_use = PackSetOptions::CatalogUse::kRequire;
    plan.pack.catalog_path = AbsolutePath(catalog);
  }
  if (cli.lerobot && cli.no_lerobot) {
    return Status::InvalidArgument("--lerobot and --no-lerobot contradict each other");
  }
  plan.lerobot = cli.lerobot      ? OpenSourceOptions::LeRobot::kOn
                 : cli.no_lerobot ? OpenSourceOptions::LeRobot::kOff
                                  : OpenSourceOptions::LeRobot::kAuto;
  if (cli.no_lerobot && !cli.lerobot_view.empty()) {
    return Status::InvalidArgument("--lerobot-view and --no-lerobot contradict each other");
  }
  plan.lerobot_layout_given = !cli.lerobot_view.empty();
  if (cli.lerobot_view == "v3") {
    plan.lerobot_layout = LeRobotLayout::kV3;
  } else if (!cli.lerobot_view.empty() && cli.lerobot_view != "v2.1") {
    return Status::InvalidArgument("--lerobot-view " + cli.lerobot_view +
                                   ": expected v2.1 or v3");
  }
  plan.remote.s3 = S3Config::FromEnvironment();
  if (!cli.endpoint.empty()) plan.remote.s3.endpoint = cli.endpoint;
  if (!cli.region.empty()) plan.remote.s3.region = cli.region;
  if (cli.anonymous) plan.remote.s3.anonymous = true;
  // 16 by default: 8 readers' own requests and as many fetched ahead of them (next units of a
  // shuffled epoch, walks' parts) run at once. Behind 20 ms, a random third of 3,000 small
  // files over HTTP by 8 readers read 3.5k files/s against 2.9k with 8 (2026-12-07, by hand).
  plan.remote.http.max_connections = cli.max_connections > 0 ? cli.max_connections : 16;
  plan.remote.cache_dir = AbsolutePath(cli.cache_dir);
  plan.log_file = AbsolutePath(!cli.log.empty() ? cli.log : plan.mount.log.value_or(""));
  plan.default_log_file = DefaultLogFile(
      plan.remote.cache_dir.empty() ? DefaultRemoteCacheDir() : plan.remote.cache_dir,
      plan.mountpoint);
  if (cli.catalog_download_limit == "0") {
    plan.remote.catalog_download_limit = 0;
  } else if (!cli.catalog_download_limit.empty()) {
    Result<uint64_t> n = ParseByteSize(cli.catalog_download_limit);
    if (!n.ok()) return n.status().WithPrefix("--catalog-download-limit");
    plan.remote.catalog_download_limit = *n;
  }
  if (!cli.cache_size.empty()) {
    Result<uint64_t> n = ParseByteSize(cli.cache_size);
    if (!n.ok()) return n.status().WithPrefix("--cache-size");
    plan.remote.read.memory_bytes = *n;
  } else {
    plan.remote.read.memory_bytes = DefaultMemoryCacheBytes();
  }
  plan.remote.read.disk_dir = AbsolutePath(cli.disk_cache);
  if (!cli.disk_cache_size.empty()) {
    if (cli.disk_cache.empty()) {
      return Status::InvalidArgument("--disk-cache-size needs --disk-cache DIR");
    }
    Result<uint64_t> n = ParseByteSize(cli.disk_cache_size);
    if (!n.ok()) return n.status().WithPrefix("--disk-cache-size");
    plan.remote.read.disk_bytes = *n;
  }
  plan.remote.read.prefetch_threads = static_cast<int>(plan.remote.http.max_connections);
  if (!plan.mount.block_gets) plan.remote.read.block_member_limit = 0;
  plan.threads = cli.threads > 0 ? cli.threads : plan.mount.threads.value_or(8);
  plan.debug = cli.debug || plan.mount.debug;
  plan.foreground = cli.foreground || plan.debug;
  return plan;
}

Result<std::unique_ptr<Filesystem>> OpenFilesystem(const Plan& plan, const Logger& log) {
  OpenSourceOptions options;
  options.pack = plan.pack;
  options.remote = plan.remote;
  options.loose = OpenSourceOptions::Loose::kLeRobot;
  options.lerobot = plan.lerobot;
  options.lerobot_layout = plan.lerobot_layout;
  options.lerobot_layout_given = plan.lerobot_layout_given;
  options.warn = [&log](const std::string& w) { log.Warning(w); };
  PACKFS_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<PackSet>> sets,
                          OpenSources(plan.sources, options));
  PACKFS_ASSIGN_OR_RETURN(std::unique_ptr<Filesystem> fs,
                          Filesystem::Open(std::move(sets), plan.fs));
  for (const auto& w : fs->warnings()) log.Warning(w);
  return fs;
}

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Adds `part` (JSON members, without braces) to what the stats attribute shows beside the
// request counters.
void AddStats(std::function<std::string()>& extra, std::function<std::string()> part) {
  extra = [before = std::move(extra), part = std::move(part)] {
    return (before ? before() + ", " : std::string()) + part();
  };
}

// The mount itself (foreground, or the daemon child). `ready_fd` (or -1) receives "O" once the
// mount answers, or "E<message>" on failure.
int RunMount(const Plan& plan, int ready_fd) {
  Logger log("packfs");
  auto fail = [&](const Status& st) {
    if (ready_fd >= 0) {
      WriteAll(ready_fd, "E" + st.message());
    } else {
      log.Error(st.message());
    }
    return 1;
  };
  const bool daemon = ready_fd >= 0;
  // The mount point (the directory under the mount), held for the server's life: its command
  // line may name it relative to a directory the daemon left, and scripts/hang-report.sh finds a
  // mount's server by this descriptor in /proc/PID/fd.
  const UniqueFd mount_point(::open(plan.mountpoint.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!plan.log_file.empty()) {
    Status st = log.UseFile(plan.log_file, false);
    if (!st.ok()) return fail(st.WithPrefix("--log"));
  } else if (daemon && !Logger::SyslogReachable()) {
    // Nothing listens on /dev/log (a container, say): syslog(3) would drop every message.
    Status st = log.UseFile(plan.default_log_file, true);
    if (!st.ok()) {
      log.Warning(st.message() + "; once in the background this mount's messages are lost " +
                  "(choose a log file with --log)");
    }
  }
  Plan opened = plan;
  if (!log.file().empty()) {
    // Where the messages go, for whoever wonders (user.packfs.stats).
    opened.fs.extra_stats = [file = log.file()] { return "\"log_file\": " + JsonString(file); };
  }
  // What the allocator holds, so that memory it keeps freed is told from memory in use; and
  // which process serves the mount (fuse/dir_lister.h recognises its own mount by it).
  AddStats(opened.fs.extra_stats,
           [] { return "\"pid\": " + std::to_string(::getpid()) + ", " + MallocJson(); });
  if (AnyRemote(plan.sources)) {
    // One reader for every remote source: one memory bound, one set of read-ahead threads
    // (started here, after the fork).
    Result<std::shared_ptr<RemoteReader>> reader = RemoteReader::Create(plan.remote.read);
    if (!reader.ok()) return fail(reader.status());
    opened.remote.reader = *reader;
    // Its counters go into the user.packfs.stats attribute beside the request counters.
    AddStats(opened.fs.extra_stats, [r = *reader] { return r->StatsJson(); });
  }
  // The FUSE workers' reply buffers: what they keep joins the stats attribute.
  auto read_buffers = std::make_shared<ReadBuffers>();
  AddStats(opened.fs.extra_stats, [b = read_buffers] { return b->Json(); });
  // So do the listings' parts read ahead (fuse/listing_ahead.h).
  auto listing_ahead = std::make_shared<ListingAhead>();
  AddStats(opened.fs.extra_stats, [l = listing_ahead] { return l->Json(); });
  // So do the workers' turns (fuse/worker_loop.h).
  auto worker_counters = std::make_shared<WorkerCounters>();
  AddStats(opened.fs.extra_stats, [w = worker_counters] { return w->Json(); });
  std::shared_ptr<UringCounters> uring_counters;
  if (plan.mount.io_uring.value_or(true)) {
    // The ring's counters join the stats attribute too.
    uring_counters = std::make_shared<UringCounters>();
    AddStats(opened.fs.extra_stats, [c = uring_counters] { return c->Json(); });
  }
  Result<std::unique_ptr<Filesystem>> fs = OpenFilesystem(opened, log);
  if (!fs.ok()) return fail(fs.status());
  ServeConfig config;
  config.zero_copy = plan.mount.zero_copy;
  config.splice = plan.mount.splice;
  config.no_open = plan.mount.no_open;
  if (!plan.mount.prefetch) config.prefetch_max = 0;
  if (plan.mount.push_window) config.push_window = *plan.mount.push_window;
  config.walk_dirs = plan.mount.walk;
  config.list_dirs = plan.mount.list;
  config.max_read = plan.mount.max_read.value_or(config.max_read);
  // Replies larger than a pipe can hold are copied (libfuse would allocate one per reply), and
  // where a pipe cannot hold a 1 MiB reply (without CAP_SYS_RESOURCE, as in most containers)
  // READs default to what one can, so that a checked member's large reads are spliced (one copy)
  // rather than copied twice (fuse/read_ahead.h). Requests served through the ring are not
  // spliced: their bytes are read straight into the ring's buffer, whatever their size.
  std::string no_ring;
  const bool ring = plan.mount.io_uring.value_or(true) && UringTransport::KernelAllows(&no_ring);
  config.zero_copy_max = 0;
  if (config.zero_copy && config.splice && !ring) {
    const size_t fits = LargestSplicedRead(config.max_read);
    if (!plan.mount.max_read) config.max_read = SplicedMaxRead(config.max_read, fits);
    config.zero_copy_max = std::min<size_t>(fits, config.max_read);
  }
  config.read_ahead =
      plan.mount.read_ahead.value_or(std::min<uint32_t>(config.read_ahead, config.max_read));
  SessionParams params;
  params.mountpoint = plan.mountpoint;
  params.fuse_options = FuseOptionString(plan.mount, plan.sources.front().location,
                                           config.max_read);
  params.threads = plan.threads;
  params.debug = plan.debug;
  params.io_uring = plan.mount.io_uring.value_or(true);
  params.io_uring_asked = plan.mount.io_uring.value_or(false);
  params.uring_counters = uring_counters;
  params.read_buffers = read_buffers;
  params.listing_ahead = listing_ahead;
  params.active_threads = plan.mount.active_threads.value_or(-1);
  params.worker_counters = worker_counters;
  auto on_ready = [&log, &ready_fd, daemon] {
    if (!daemon) return;
    // From here on nobody reads our terminal: messages go to the log file or syslog, stdio to
    // /dev/null.
    log.Detach();
    WriteAll(ready_fd, "O");
    ::close(ready_fd);
    ready_fd = -1;
    int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) {
      ::dup2(devnull, STDIN_FILENO);
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
      ::close(devnull);
    }
  };
  Status st = ServeMount(**fs, config, params, log, on_ready);
  if (!st.ok()) return fail(st);
  if (plan.debug) {
    log.Info("unmounted " + plan.mountpoint + "; stats:\n" + (*fs)->StatsJson());
  }
  return 0;
}

int Daemonize(const Plan& plan) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    std::cerr << "packfs: pipe: " << ErrnoText(errno) << "\n";
    return 1;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    std::cerr << "packfs: fork: " << ErrnoText(errno) << "\n";
    return 1;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::setsid();
    if (::chdir("/") != 0) {
      // Paths are absolute already; a failed chdir only keeps the old cwd busy.
    }
    ::_exit(RunMount(plan, fds[1]));
  }
  ::close(fds[1]);
  std::string msg;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (!msg.empty() && msg[0] == 'O') return 0;
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  if (!msg.empty() && msg[0] == 'E') {
    std::cerr << "packfs: " << msg.substr(1) << "\n";
  } else {
    std::cerr << "packfs: the mount process exited before the mount was ready\n";
  }
  return 1;
}

}  // namespace
}  // namespace packfs

int main(int argc, char** argv) {
  using namespace packfs;
  // Two malloc arenas: remote reads allocated 256 KiB-8 MiB buffers from many threads, and
  // glibc's dynamic mmap threshold soon served them from per-thread arenas, each keeping the
  // memory freed into it: peak RSS grew ~15 MiB further past --cache-size with the default 8
  // arenas per core (bench_remote). Request parts are their own mappings now (BlockCache::
  // Allocate), the disk cache's hits too. A fixed low mmap threshold halved throughput when
  // parts were malloc'd (a page-faulted mapping per block).
  mallopt(M_ARENA_MAX, 2);
  Cli cli;
  CLI::App app{"packfs: mount pack sets (directories of STORED zip shards, or tar shards: .tar "
               "files or directories of them) read-only, local or at an http(s):// or s3:// URL.\n"
               "Several SOURCEs merge into one tree.",
               "packfs"};
  app.set_version_flag("--version", std::string("packfs ") + PACKFS_VERSION + " (git " +
                                        PACKFS_GIT_REV + ")");
  app.add_option("paths", cli.paths, "SOURCE... MOUNTPOINT")->required();
  app.add_flag("-f,--foreground", cli.foreground, "stay in the foreground");
  app.add_flag("-d,--debug", cli.debug,
               "foreground, trace every FUSE request, print the stats at unmount");
  app.add_option("-o", cli.o,
                 "mount options: allow_other, uid=N, gid=N, umask=OCTAL, max_read=N, "
                 "read_ahead=SIZE, catalog=PATH|none, threads=N, active_threads=N, "
                 "on_collision=first|last, "
                 "log=FILE, nonempty, nocrc, push=SIZE, nopush, nostream, nowalk, nolist, "
                 "exact_gets, nozerocopy, open, io_uring, noio_uring, ...")
      ->allow_extra_args(false);
  app.add_option("--threads", cli.threads, "FUSE worker threads (default 8)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--catalog", cli.catalog,
                 "catalog file to use, or 'none' to index the shards at mount "
                 "(default: <SOURCE>/.packfs-catalog.sqlite when present and fresh)");
  app.add_option("--on-collision", cli.on_collision,
                 "a key in two sources: error (default), first or last wins");
  app.add_flag("--lerobot", cli.lerobot,
               "serve the SOURCE as a LeRobot v3 dataset (one MP4 per episode at the v2.1 "
               "paths, meta/episodes.jsonl) even if meta/info.json does not say v3.x");
  app.add_flag("--no-lerobot", cli.no_lerobot,
               "serve a LeRobot v3 dataset's files only, without the per-episode view");
  app.add_option("--lerobot-view", cli.lerobot_view,
                 "how a LeRobot v3 dataset is shown: v2.1 (default: the mount is a v2.1 dataset, "
                 "its v2.1 meta/ files and episode MP4s at the root, the v3 files under v3/) or "
                 "v3 (the v3 files at their paths, plus the episode MP4s and "
                 "meta/episodes.jsonl)")
      ->check(CLI::IsMember({"v2.1", "v3"}));
  app.add_option("--endpoint", cli.endpoint,
                 "S3-compatible endpoint for s3:// sources, e.g. http://127.0.0.1:9000 "
                 "(default: $AWS_ENDPOINT_URL_S3 or $AWS_ENDPOINT_URL, else AWS)");
  app.add_option("--region", cli.region,
                 "S3 region (default: $AWS_REGION or $AWS_DEFAULT_REGION, else us-east-1)");
  app.add_flag("--anonymous", cli.anonymous,
               "unsigned S3 requests (public buckets), even when AWS_ACCESS_KEY_ID is set");
  app.add_option("--max-connections", cli.max_connections,
                 "concurrent HTTP requests to remote sources (default 16)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--cache-dir", cli.cache_dir,
                 "where catalogs of remote sources are cached, and the default log file "
                 "(default: $XDG_CACHE_HOME/packfs or ~/.cache/packfs)");
  app.add_option("--catalog-download-limit", cli.catalog_download_limit,
                 "a remote set's catalog up to SIZE comes whole with the mount's first request "
                 "(kept in --cache-dir); a larger one is read in place, page by page, through "
                 "the caches (default 1M; 0: always whole)");
  app.add_option("--cache-size", cli.cache_size,
                 "memory for blocks of remote sources, e.g. 512M or 2G (default 512M, at most "
                 "1/8 of the RAM)");
  app.add_option("--disk-cache", cli.disk_cache,
                 "keep bytes fetched from remote sources in DIR too (one sparse file per "
                 "object), so a later mount reads them locally (default: none)");
  app.add_option("--disk-cache-size", cli.disk_cache_size,
                 "bound of the --disk-cache directory, e.g. 10G (default 10G; least "
                 "recently used objects deleted beyond it)");
  app.add_option("--log", cli.log,
                 "append the mount's messages (errors of reads, warnings) to FILE; once in the "
                 "background they go there instead of syslog. Default: syslog, or where nothing "
                 "listens on /dev/log (containers) the file mount-NAME-HASH.log in the cache "
                 "directory (NAME: the mountpoint's last component). The root's "
                 "user.packfs.errors attribute also holds the last 100 errors");
  CLI11_PARSE(app, argc, argv);

  Result<Plan> plan = MakePlan(cli);
  if (!plan.ok()) {
    std::cerr << "packfs: " << plan.status().message() << "\n";
    return 1;
  }
  for (const auto& w : plan->warnings) std::cerr << "packfs: " << w << "\n";
  if (plan->foreground) return RunMount(*plan, -1);
  return Daemonize(*plan);
}
