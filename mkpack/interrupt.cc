// SIGINT/SIGTERM as a polled flag (see interrupt.h).
#include "mkpack/interrupt.h"

#include <pthread.h>

namespace packfs::mkpack {

InterruptWatch::InterruptWatch() {
  sigemptyset(&watched_);
  for (int sig : {SIGINT, SIGTERM}) {
    // A signal the parent set to be ignored (`cmd &` in a script ignores SIGINT) stays ignored.
    struct sigaction sa;
    if (sigaction(sig, nullptr, &sa) == 0 && sa.sa_handler == SIG_IGN) continue;
    sigaddset(&watched_, sig);
    wake_ = sig;
  }
  if (wake_ == 0) return;
  pthread_sigmask(SIG_BLOCK, &watched_, &old_mask_);
  waiter_ = std::thread([this] {
    for (;;) {
      int sig = 0;
      if (sigwait(&watched_, &sig) != 0) continue;
      if (stopping_.load()) return;
      int none = 0;
      signal_.compare_exchange_strong(none, sig);
    }
  });
}

InterruptWatch::~InterruptWatch() {
  if (!waiter_.joinable()) return;
  stopping_.store(true);
  // Wakes the waiter: the signal is blocked in every thread, so only its sigwait takes it.
  pthread_kill(waiter_.native_handle(), wake_);
  waiter_.join();
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

const char* InterruptName(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace packfs::mkpack
