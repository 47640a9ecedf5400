// ParallelFor over std::jthread workers pulling indices from one atomic counter.
#include "core/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace packfs {

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  const size_t k = std::clamp<size_t>(static_cast<size_t>(std::max(threads, 1)), 1,
                                      std::max<size_t>(n, 1));
  std::vector<std::jthread> pool;
  for (size_t t = 1; t < k; ++t) pool.emplace_back(worker);
  worker();
}  // the jthreads join here

}  // namespace packfs
