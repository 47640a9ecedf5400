// RunWorkerLoop: the workers, their turns on the CPUs, and waking them when the session ends.
#include "fuse/worker_loop.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <semaphore.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/base/wait_notice.h"

namespace packfs {
namespace {

// At most `max` workers hold a turn; the rest wait in Take.
class Turns {
 public:
  Turns(int max, WorkerCounters& counters) : max_(max), counters_(counters) {}
  // Waits for a turn; false once Close was called.
  bool Take() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!closed_ && held_ >= max_) counters_.parks.fetch_add(1, std::memory_order_relaxed);
    cv_.wait(lock, [this] { return closed_ || held_ < max_; });
    if (closed_) return false;
    ++held_;
    return true;
  }
  void Give() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --held_;
    }
    cv_.notify_one();
  }
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  const int max_;
  WorkerCounters& counters_;
  std::mutex mu_;
  std::condition_variable cv_;
  int held_ = 0;
  bool closed_ = false;
};

struct Worker final : WaitNotice {
  Worker(fuse_session* s, Turns& t, WorkerCounters& c, const std::atomic<bool>& stop)
      : se(s), turns(t), counters(c), stopping(stop) {}
  // A read of the request this worker serves is about to wait: its turn goes to a parked worker.
  void BeforeWait() noexcept override {
    waited = true;
    if (!holding) return;
    holding = false;
    counters.waits.fetch_add(1, std::memory_order_relaxed);
    turns.Give();
  }
  void Run();

  fuse_session* se;
  Turns& turns;
  WorkerCounters& counters;
  const std::atomic<bool>& stopping;
  bool holding = false;                // this worker's thread only
  bool waited = false;                 // the request it serves waited
  std::atomic<bool> receiving{false};  // in (or about to enter) a read of /dev/fuse
  std::atomic<bool> done{false};
  int error = 0;                       // -errno of a failed read of /dev/fuse
  std::thread thread;
};

void Worker::Run() {
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, SIGRTMIN);
  pthread_sigmask(SIG_UNBLOCK, &wake, nullptr);
  ScopedWaitNotice notice(this);
  fuse_buf buf{};
  // A worker whose request waited takes the next one without a turn: while reads keep waiting
  // (a cold pass) every worker is in a read of /dev/fuse, ready for the next request as with no
  // turns at all; once a request does not wait, the worker needs a turn again. Without it, a
  // pass whose every READ waits had at most `active` workers ready for the next request, each
  // hand-over a wake-up: a tenth of a set after a scan, 8 readers, 13.0k files/s against 14.5k
  // (libfuse's loop) and 14.5k with it (3 rounds each, 2026-12-05).
  bool free_pass = false;
  while (!stopping.load()) {
    if (!holding && !free_pass) {
      if (!turns.Take()) break;
      holding = true;
    }
    receiving.store(true);
    if (stopping.load()) break;  // checked after `receiving`: the wake-up cannot be lost
    const int got = fuse_session_receive_buf(se, &buf);
    receiving.store(false);
    if (got == -EINTR || got == -EAGAIN) continue;
    if (got <= 0) {
      // 0 or -ENODEV: unmounted (libfuse has ended the session). Either way the session is
      // over for every worker.
      if (got < 0 && got != -ENODEV) error = got;
      break;
    }
    waited = false;
    fuse_session_process_buf(se, &buf);
    free_pass = waited && !holding;
  }
  receiving.store(false);
  if (holding) turns.Give();
  holding = false;
  std::free(buf.mem);
}

void IgnoreWake(int) {}

// What the loop's signal handlers reach: the semaphore RunWorkerLoop waits on (one loop runs at a
// time in a process, as one session is mounted) and the signal that ended it.
std::atomic<sem_t*> loop_wakeup{nullptr};
volatile sig_atomic_t stop_signal = 0;

void OnStopSignal(int sig) {
  stop_signal = sig;
  if (sem_t* sem = loop_wakeup.load()) ::sem_post(sem);  // async-signal-safe
}

// The semaphore the loop waits on, reachable from the signal handlers while it lives.
class Wakeup {
 public:
  Wakeup() {
    ::sem_init(&sem_, 0, 0);
    stop_signal = 0;
    loop_wakeup.store(&sem_);
  }
  ~Wakeup() {
    loop_wakeup.store(nullptr);
    ::sem_destroy(&sem_);
  }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  void Post() { ::sem_post(&sem_); }
  void Wait() { ::sem_wait(&sem_); }  // returns early on a signal (EINTR)

 private:
  sem_t sem_;
};

// Installs `handler` for `sig` (no SA_RESTART: a blocked read returns EINTR) and puts the handler
// before back on the way out.
class SignalHandler {
 public:
  SignalHandler(int sig, void (*handler)(int)) : sig_(sig) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    installed_ = ::sigaction(sig, &sa, &old_) == 0;
  }
  ~SignalHandler() {
    if (installed_) ::sigaction(sig_, &old_, nullptr);
  }
  SignalHandler(const SignalHandler&) = delete;
  SignalHandler& operator=(const SignalHandler&) = delete;

 private:
  int sig_;
  struct sigaction old_ {};
  bool installed_ = false;
};

}  // namespace

std::string WorkerCounters::Json() const {
  return "\"workers\": {\"threads\": " + std::to_string(threads.load()) +
         ", \"active\": " + std::to_string(active.load()) +
         ", \"waits\": " + std::to_string(waits.load()) +
         ", \"parks\": " + std::to_string(parks.load()) + "}";
}

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
    return CPU_COUNT(&set);
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

int RunWorkerLoop(fuse_session* se, int threads, int active, WorkerCounters& counters) {
  threads = std::max(1, threads);
  if (active <= 0 || active > threads) active = threads;
  counters.threads.store(static_cast<uint32_t>(threads));
  counters.active.store(static_cast<uint32_t>(active));
  Turns turns(active, counters);
  std::atomic<bool> stopping{false};
  Wakeup wakeup;  // posted by a worker that leaves its loop, and by the stop signals
  // For the loop's lifetime SIGINT, SIGTERM and SIGHUP are the loop's own, not libfuse's: its
  // handlers end the session (fuse_session_exit), and a worker whose read of /dev/fuse returns
  // after that drops the request it read, which a reader (or a push waiting for that READ's
  // pages) would then wait for until the unmount. The workers stop taking requests instead.
  SignalHandler wake_handler(SIGRTMIN, IgnoreWake);
  SignalHandler on_int(SIGINT, OnStopSignal);
  SignalHandler on_term(SIGTERM, OnStopSignal);
  SignalHandler on_hup(SIGHUP, OnStopSignal);
  std::vector<std::unique_ptr<Worker>> workers;
  {
    // The workers start with every signal blocked (they unblock the wake-up alone), so that
    // SIGTERM and friends reach the other threads, whose handler wakes this one.
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before);
    for (int i = 0; i < threads; ++i) {
      auto w = std::make_unique<Worker>(se, turns, counters, stopping);
      Worker* raw = w.get();
      try {
        raw->thread = std::thread([raw, &wakeup] {
          raw->Run();
          raw->done.store(true);
          wakeup.Post();
        });
      } catch (const std::system_error&) {
        break;  // out of threads (RLIMIT_NPROC, memory): serve with those that started
      }
      workers.push_back(std::move(w));
    }
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  if (workers.empty()) return -EAGAIN;
  counters.threads.store(static_cast<uint32_t>(workers.size()));
  // Until a worker left its loop (unmounted, or an error), a stop signal came, or the session
  // was ended before the loop began (libfuse's handlers, during the mount).
  auto any_done = [&] {
    for (auto& w : workers) {
      if (w->done.load()) return true;
    }
    return false;
  };
  while (stop_signal == 0 && !fuse_session_exited(se) && !any_done()) wakeup.Wait();
  stopping.store(true);
  turns.Close();
  // Wake the workers blocked in a read of /dev/fuse until every one has left its loop: a signal
  // that lands just before a worker enters the read is lost, so it is sent again.
  for (;;) {
    bool all_done = true;
    for (auto& w : workers) {
      if (w->done.load()) continue;
      all_done = false;
      if (w->receiving.load()) ::pthread_kill(w->thread.native_handle(), SIGRTMIN);
    }
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  int error = 0;
  for (auto& w : workers) {
    w->thread.join();
    if (error == 0) error = w->error;
  }
  // Requests are still served after the loop (session.cc StopServing): libfuse drops what it
  // reads once its session is marked ended (by an unmount seen here, or a signal before the
  // loop), so the mark goes.
  fuse_session_reset(se);
  return error;
}

}  // namespace packfs
