// Session: libfuse session setup, mount, the workers, unmount.
#include "fuse/session.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/read/page_cache.h"
#include "fuse/dir_lister.h"
#include "fuse/read_ahead.h"

namespace packfs {
namespace {

struct SessionDeleter {
  void operator()(fuse_session* se) const { fuse_session_destroy(se); }
};

// Undoes the steps of a session that succeeded, in reverse order, on every path out.
class MountedSession {
 public:
  explicit MountedSession(fuse_session* se) : se_(se) {}
  ~MountedSession() {
    if (mounted_) fuse_session_unmount(se_);
    if (signals_) fuse_remove_signal_handlers(se_);
  }
  Status InstallSignals() {
    if (fuse_set_signal_handlers(se_) != 0) {
      return Status::IOError("could not install signal handlers");
    }
    signals_ = true;
    return Status::OK();
  }
  Status Mount(const std::string& mountpoint) {
    if (fuse_session_mount(se_, mountpoint.c_str()) != 0) {
      return Status::IOError("could not mount at " + mountpoint +
                             " (the reason is printed above by libfuse)");
    }
    mounted_ = true;
    return Status::OK();
  }

 private:
  fuse_session* se_;
  bool signals_ = false;
  bool mounted_ = false;
};

// Stops the push threads. One may be inside fuse_lowlevel_notify_store, which waits for the lock
// of a page that a queued READ holds until it is answered: the loop's workers have stopped
// answering, so requests are served here until the pushers have stopped (io_uring's threads still
// serve until the unmount). Without this a SIGTERM with readers running could hang the daemon.
// libfuse's loop dropped a request a worker read after the session began to end, and a push
// waiting for the pages of such a READ waited for good (seen: 1 SIGTERM in 30 with 4 readers by
// path); the workers here process every request they read (fuse/worker_loop.h), and the abort
// stays as the bound on a push that still waits. After kAbortAfter the connection is aborted
// through `abort_path` (/sys/fs/fuse/connections/N/abort; empty: unknown): every request left
// then fails, the readers' with ENOTCONN, as the unmount would make them. libfuse does not
// unmount an aborted connection, so the mount at `mountpoint` is detached here (umount2, or
// fusermount3 -u -z without root).
constexpr auto kAbortAfter = std::chrono::seconds(2);

void DetachMount(const std::string& mountpoint) {
  if (::umount2(mountpoint.c_str(), MNT_DETACH) == 0) return;
  const char* argv[] = {"fusermount3", "-u", "-z", "-q", mountpoint.c_str(), nullptr};
  pid_t pid = -1;
  if (::posix_spawnp(&pid, "fusermount3", nullptr, nullptr, const_cast<char* const*>(argv),
                     environ) == 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
}

void StopServing(fuse_session* se, Pusher& pusher, bool ring_serves, const std::string& abort_path,
                 const std::string& mountpoint, const Logger& log) {
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    pusher.Stop();
    stopped.store(true);
  });
  const auto start = std::chrono::steady_clock::now();
  bool aborted = false;
  fuse_buf buf{};
  while (!stopped.load()) {
    if (!aborted && !abort_path.empty() && std::chrono::steady_clock::now() - start > kAbortAfter) {
      aborted = true;
      const int fd = ::open(abort_path.c_str(), O_WRONLY | O_CLOEXEC);
      const bool ok = fd >= 0 && ::write(fd, "1", 1) == 1;
      if (fd >= 0) ::close(fd);
      log.Warning(std::string(ok ? "aborted" : "could not abort") + " the connection (" +
                  abort_path + "): a push still waited for a request after " +
                  std::to_string(kAbortAfter.count()) + " s");
      if (ok && !mountpoint.empty()) DetachMount(mountpoint);
    }
    if (ring_serves) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    pollfd p{fuse_session_fd(se), POLLIN, 0};
    if (::poll(&p, 1, 10) <= 0 || (p.revents & POLLIN) == 0) {
      if (p.revents & (POLLERR | POLLHUP)) break;  // the connection is gone: nothing blocks
      continue;
    }
    const int got = fuse_session_receive_buf(se, &buf);
    if (got > 0) {
      fuse_session_process_buf(se, &buf);
    } else if (got != -EINTR && got != -EAGAIN) {
      break;  // ENODEV: unmounted; a notify_store fails then instead of waiting
    }
  }
  stopper.join();
  std::free(buf.mem);
}

// Pusher::ReadRun: file `ino` whole (copied, never spliced) with the wanted files that follow it.
bool ReadRun(const Filesystem& fs, ReadBuffers& buffers, Pusher& pusher, uint64_t ino,
             Pusher::Job* job) {
  Result<Attr> attr = fs.GetAttr(ino);
  if (!attr.ok() || attr->is_dir() || attr->size == 0 || attr->size > pusher.window()) {
    return false;
  }
  if (pusher.TakeFollower(ino) != FollowerClaims::Take::kTaken) return false;
  job->buf = buffers.Take();
  Result<ReadReply> got =
      fs.ReadThrough(ino, 0, attr->size, pusher.window(), SIZE_MAX,
                     [](uint64_t) { return true; }, pusher, Filesystem::kDirWalker, &job->buf,
                     &job->followers, &job->dir);
  if (!got.ok() || got->zero_copy() || got->bytes.size() != attr->size) {
    pusher.GiveBack(ino);
    for (const Filesystem::Follower& f : job->followers) pusher.GiveBack(f.ino);
    job->followers.clear();
    return false;
  }
  job->followers.insert(job->followers.begin(), Filesystem::Follower{ino, got->bytes});
  return true;
}

}  // namespace

// Push threads: two measured ahead of one with 8 readers on 2 vCPUs (5.3-5.8k READs left of 30k
// in an epoch after a scan, against 7.9-10.3k: one thread falls behind the readers).
constexpr int kPushThreads = 2;

Status ServeMount(const Filesystem& fs, const ServeConfig& config, const SessionParams& params,
                  const Logger& log, std::function<void()> on_ready) {
  // Before `state`: the pusher's list thread, joined when `state` goes, uses it.
  std::unique_ptr<DirLister> lister;
  SessionState state;
  state.fs = &fs;
  if (params.read_buffers) state.read_buffers = params.read_buffers;
  if (params.listing_ahead) state.listing_ahead = params.listing_ahead;
  state.log = &log;
  state.config = config;
  state.on_ready = std::move(on_ready);
  std::string no_uring;
  const bool uring = params.io_uring && UringTransport::KernelAllows(&no_uring);
  if (params.io_uring && !uring && params.io_uring_asked) {
    log.Warning("-o io_uring: " + no_uring + "; serving through /dev/fuse");
    if (params.uring_counters) params.uring_counters->failed.store(true);
  }

  std::vector<std::string> args_s = {"packfs", "-o", params.fuse_options};
  if (params.debug) args_s.push_back("-d");
  std::vector<char*> argv;
  for (auto& a : args_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  fuse_args args{static_cast<int>(args_s.size()), argv.data(), 0};

  fuse_lowlevel_ops ops = MakeLowlevelOps();
  std::unique_ptr<fuse_session, SessionDeleter> se(
      fuse_session_new(&args, &ops, sizeof ops, &state));
  fuse_opt_free_args(&args);
  if (!se) {
    return Status::InvalidArgument("libfuse rejected the mount options '" +
                                   params.fuse_options + "'");
  }
  state.se = se.get();
  // The kernel's read-ahead for the mount goes up to config.read_ahead once INIT is through.
  if (char* real = ::realpath(params.mountpoint.c_str(), nullptr)) {
    state.mountpoint = real;
    std::free(real);
    state.read_ahead_pending.store(config.read_ahead > (128u << 10));
  }
  if (config.push_window > 0) {
    // Queue bound: enough for every worker's read to be waiting at once, 8 MiB at least.
    const size_t queue = std::max<size_t>(8u << 20, 2 * params.threads * config.push_window);
    // Pushed reads hand their buffers to the push thread, so many are out at once; releasing
    // and refaulting their pages each time (madvise, TLB shootdowns) cost more than the push.
    state.read_buffers->SetResidentMax(state.read_buffers->resident_max() + queue);
    // A buffer that served small reads and then meets a window would grow to it by steps, each
    // a new allocation whose pages fault in (11 us a page on these VMs) and the old ones freed:
    // 7-11k page faults a cold epoch, every epoch (bench/FINDINGS.md, "Buffers that grow").
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    state.read_buffers->SetBufferBytes(std::max<size_t>(config.push_window, config.max_read) +
                                       2 * page);
    state.pusher = std::make_unique<Pusher>(
        se.get(), fs.max_ino(), config.push_window, queue, fs.stats(),
        [&state](std::vector<uint8_t> buf) { state.read_buffers->Give(std::move(buf)); },
        [&fs](uint64_t dir) { return fs.ChildCount(dir); },
        [&fs](uint64_t dir) { fs.StreamDir(dir); }, kPushThreads);
    if (config.walk_dirs) {
      Pusher& pusher = *state.pusher;
      pusher.StartWalks([&fs](uint64_t dir) { return fs.Children(dir); },
                        [&fs, &state, &pusher](uint64_t ino, Pusher::Job* job) {
                          return ReadRun(fs, *state.read_buffers, pusher, ino, job);
                        },
                        [] { return MemoryRoom(); });
    }
    if (config.list_dirs && !state.mountpoint.empty()) {
      // Used by the pusher's list thread only; the first failure is logged (the mount not
      // reachable at its mountpoint fails every listing).
      lister = std::make_unique<DirLister>(
          state.mountpoint, [&fs](uint64_t dir) { return fs.DirPath(dir); });
      state.pusher->StartLists(
          [&lister, &log, warned = false](uint64_t dir) mutable {
            Result<uint64_t> listed = lister->List(dir);
            if (!listed.ok() && !warned) {
              warned = true;
              log.Warning("directories read through are not listed ahead: " +
                          listed.status().message());
            }
            return listed.ok();
          },
          [] { return MemoryRoom(); });
    }
  }
  {
    // Declared before `mounted`: its threads are woken and joined after the unmount, and its
    // rings closed before the session (and its /dev/fuse fd) is destroyed.
    std::unique_ptr<UringTransport> ring;
    bool ring_serves = false;
    MountedSession mounted(se.get());
    PACKFS_RETURN_IF_ERROR(mounted.InstallSignals());
    PACKFS_RETURN_IF_ERROR(mounted.Mount(params.mountpoint));
    // The mount's device number (the last mount at the mountpoint is this one now), once, before
    // any request: the read-ahead is raised through it (RaiseReadAheadOnce), and the connection's
    // control directory (fusectl) is named after it.
    if (Result<std::string> dev = MountDevice(state.mountpoint); dev.ok()) state.device = *dev;
    std::string abort_path;
    if (const size_t colon = state.device.find(':');
        colon != std::string::npos && state.device.substr(0, colon) == "0") {
      abort_path = "/sys/fs/fuse/connections/" + state.device.substr(colon + 1) + "/abort";
    }
    if (uring) {
      UringTransport::Options opts;
      const int queues = std::max(1, UringTransport::QueueCount());
      opts.threads_per_queue = std::max(1, (std::max(1, params.threads) + queues - 1) / queues);
      opts.payload_bytes = std::max<size_t>(size_t{1} << 20, config.max_read);
      auto counters = params.uring_counters ? params.uring_counters
                                            : std::make_shared<UringCounters>();
      ring = std::make_unique<UringTransport>(se.get(), log, counters, opts);
      state.uring = ring.get();
      Status hooked = ring->InstallIo();
      if (hooked.ok()) {
        ring->Start();
        ring_serves = true;
      } else {
        log.Warning(hooked.message() + "; serving through /dev/fuse");
        counters->failed.store(true);
      }
    }
    // The workers, until the unmount or a SIGINT, SIGTERM or SIGHUP (fuse/worker_loop.h).
    auto counters = params.worker_counters ? params.worker_counters
                                           : std::make_shared<WorkerCounters>();
    const int active = params.active_threads < 0 ? UsableCpus() : params.active_threads;
    const int rc = RunWorkerLoop(se.get(), params.threads, active, *counters);
    if (rc < 0) log.Error("serving requests stopped: " + ErrnoText(-rc));
    // Before the session it pushes to goes away, and while requests are still answered.
    if (state.pusher) StopServing(se.get(), *state.pusher, ring_serves, abort_path,
                                   state.mountpoint, log);
  }
  return Status::OK();
}

}  // namespace packfs
