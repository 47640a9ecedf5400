// Thread fan-out, one policy for all of packfs: RunWorkers starts the threads (the caller's among
// them, one per core unless told) and joins them; ParallelFor runs fn(0) … fn(n - 1) on them.
#pragma once

#include <cstddef>
#include <functional>

namespace packfs {

// Runs `worker` on min(threads, max_useful) threads at once (threads <= 0: one per core; at least
// one), the calling thread among them, and returns when every one has returned. The workers share
// their own queue (typically an atomic index), so one that needs per-thread state (a buffer, an
// open directory) keeps it in its own frame.
void RunWorkers(int threads, size_t max_useful, const std::function<void()>& worker);

// `fn` must be safe to call concurrently for different indices; each index runs exactly once.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace packfs
