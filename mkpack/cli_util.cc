// Shared mkpack helpers.
#include "mkpack/cli_util.h"

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

namespace packfs::mkpack {

void PrintError(const char* cmd, const Status& st) {
  std::fprintf(stderr, "mkpack %s: %s\n", cmd, st.message().c_str());
}

void PrintWarning(const char* cmd, const std::string& msg) {
  std::fprintf(stderr, "mkpack %s: warning: %s\n", cmd, msg.c_str());
}

Result<std::unique_ptr<PackSet>> OpenPackSetForCli(const char* cmd, const std::string& dir,
                                                   const PackSetOptions& opts) {
  auto ps = PackSet::Open(dir, opts);
  if (!ps.ok()) return ps.status();
  for (const auto& w : (*ps)->warnings()) PrintWarning(cmd, w);
  return ps;
}

std::string HumanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 5) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  }
  return buf;
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  size_t t = threads > 0 ? static_cast<size_t>(threads) : std::thread::hardware_concurrency();
  if (t == 0) t = 1;
  if (t > n) t = n;
  if (t <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  pool.reserve(t);
  for (size_t k = 0; k < t; ++k) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& th : pool) th.join();
}

}  // namespace packfs::mkpack
