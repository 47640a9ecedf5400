// RunWorkers over std::jthread; ParallelFor's workers pull indices from one atomic counter.
#include "core/base/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace packfs {

void RunWorkers(int threads, size_t max_useful, const std::function<void()>& worker) {
  size_t k = threads > 0 ? static_cast<size_t>(threads) : std::thread::hardware_concurrency();
  k = std::clamp<size_t>(k, 1, std::max<size_t>(max_useful, 1));
  std::vector<std::jthread> pool;
  pool.reserve(k - 1);
  for (size_t t = 1; t < k; ++t) pool.emplace_back(worker);
  worker();
}  // the jthreads join here

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  RunWorkers(threads, n, [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  });
}

}  // namespace packfs
