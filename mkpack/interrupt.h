// InterruptWatch: turns SIGINT and SIGTERM into a flag that a long-running command polls at its
// safe points (between members of `mkpack pack`), so it can stop cleanly and say what is done
// instead of dying half way through a shard.
//
// No signal handler and no global: the constructor blocks both signals in the calling thread
// (threads started later inherit the mask) and starts one thread that takes them with
// sigwait(2) and stores the first one in an atomic the object owns. The destructor stops and
// joins that thread and restores the previous mask. A signal the process inherited as ignored
// stays ignored. Create it on the thread that runs the command, before it starts worker
// threads; one at a time per process.
#pragma once

#include <signal.h>

#include <atomic>
#include <thread>

namespace packfs::mkpack {

class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // 0 until SIGINT or SIGTERM arrives, then that signal's number (later ones are ignored).
  // Safe to read from any thread.
  const std::atomic<int>& signal() const { return signal_; }

 private:
  std::atomic<int> signal_{0};
  std::atomic<bool> stopping_{false};
  sigset_t watched_;    // SIGINT and SIGTERM, less those inherited as ignored
  int wake_ = 0;        // a watched signal, sent to the waiter to stop it; 0: none watched
  sigset_t old_mask_;
  std::thread waiter_;  // runs while the object lives (none when nothing is watched)
};

// "SIGINT", "SIGTERM", or "a signal".
const char* InterruptName(int sig);

}  // namespace packfs::mkpack
