// Measures CRC-32 throughput of zlib and libdeflate on one core, warm buffers, to justify the
// choice behind core/base/crc32.cc. Usage: crc32_bench [MiB per pass] [passes]
#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

template <typename F>
double MedianGBps(const std::vector<uint8_t>& buf, size_t chunk, int passes, F&& crc_fn,
                  uint32_t* out) {
  std::vector<double> rates;
  for (int p = 0; p < passes; ++p) {
    auto t0 = std::chrono::steady_clock::now();
    uint32_t c = 0;
    for (size_t off = 0; off < buf.size(); off += chunk) {
      c = crc_fn(c, buf.data() + off, std::min(chunk, buf.size() - off));
    }
    auto t1 = std::chrono::steady_clock::now();
    *out = c;
    rates.push_back(buf.size() / std::chrono::duration<double>(t1 - t0).count() / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  int passes = argc > 2 ? std::atoi(argv[2]) : 7;
  std::vector<uint8_t> buf(mib << 20);
  uint64_t x = 88172645463325252ull;
  for (auto& b : buf) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  std::printf("{\"bytes\": %zu, \"passes\": %d, \"results\": [\n", buf.size(), passes);
  bool first = true;
  for (size_t chunk : {size_t{16} << 10, size_t{1} << 20}) {
    uint32_t a = 0, b = 0;
    double z = MedianGBps(buf, chunk, passes, [](uint32_t c, const uint8_t* p, size_t n) {
      return static_cast<uint32_t>(crc32(c, p, static_cast<uInt>(n)));
    }, &a);
    double d = MedianGBps(buf, chunk, passes, [](uint32_t c, const uint8_t* p, size_t n) {
      return libdeflate_crc32(c, p, n);
    }, &b);
    if (a != b) { std::fprintf(stderr, "CRC mismatch\n"); return 1; }
    std::printf("%s  {\"chunk\": %zu, \"zlib_GBps\": %.2f, \"libdeflate_GBps\": %.2f}", first ? "" : ",\n",
                chunk, z, d);
    first = false;
  }
  std::printf("\n]}\n");
  return 0;
}
