// ParallelFor: runs fn(0) … fn(n - 1) on up to `threads` threads (the caller's among them) and
// returns when all are done. For I/O-bound fan-out (HEADs, ranged reads) at open time.
#pragma once

#include <cstddef>
#include <functional>

namespace packfs {

// `fn` must be safe to call concurrently for different indices; each index runs exactly once.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace packfs
