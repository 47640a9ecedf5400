// The calling thread's WaitNotice.
#include "core/base/wait_notice.h"

namespace packfs {
namespace {
thread_local WaitNotice* current_notice = nullptr;
}  // namespace

WaitNotice* CurrentWaitNotice() { return current_notice; }

ScopedWaitNotice::ScopedWaitNotice(WaitNotice* notice) : previous_(current_notice) {
  current_notice = notice;
}

ScopedWaitNotice::~ScopedWaitNotice() { current_notice = previous_; }

}  // namespace packfs
