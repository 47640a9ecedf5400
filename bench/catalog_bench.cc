// Catalog benchmark (not a test): builds a synthetic 1M-member pack set and times the catalog.
//   catalog_bench write DIR [members]   BuildNodes + WriteCatalog from in-memory ZipIndexes
//   catalog_bench shards DIR            writes 16 STORED zip shards of 65,534 members each
//   catalog_bench refresh DIR [threads] RefreshCatalog twice (fresh, then all shards reused)
//   catalog_bench open DIR              PackSet::Open with the catalog, first lookups, peak RSS
// Each step prints wall times; run `open` as its own process so its RSS is its own.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/base/byte_reader.h"
#include "core/base/crc32.h"
#include "core/base/key.h"
#include "core/catalog/catalog.h"
#include "core/read/pack_set.h"

using namespace packfs;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kShards = 16;
constexpr int kPerShard = 65534;  // 0xFFFF would mean "see the ZIP64 record"

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// CPU seconds (user + system) of this process: on a loaded machine wall time overstates cost.
double CpuSeconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

long PeakRssKb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// Key of member i: 2,000 episodes x 2 cameras x ~262 frames.
std::string KeyOf(uint64_t i) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "videos/episode_%06llu/cam_%llu/frame_%06llu.jpg",
                static_cast<unsigned long long>(i / 524), static_cast<unsigned long long>(i % 2),
                static_cast<unsigned long long>(i % 524 / 2));
  return buf;
}

int Write(const std::string& dir, uint64_t members) {
  auto t0 = Clock::now();
  std::vector<ShardContent> shards(kShards);
  for (int s = 0; s < kShards; ++s) {
    shards[s].info.name = ShardFileName(s);
    shards[s].info.size = 1 << 30;
    uint64_t lo = members * s / kShards, hi = members * (s + 1) / kShards;
    for (uint64_t i = lo; i < hi; ++i) {
      ShardMember m;
      m.name = KeyOf(i);
      m.local_header_offset = (i - lo) * 1000;
      m.data_offset = m.local_header_offset + 30 + m.name.size();
      m.size = 900;
      m.crc32 = static_cast<uint32_t>(i);
      m.mtime = 1700000000;
      shards[s].index.members.push_back(std::move(m));
    }
  }
  std::printf("generate %llu members: %.2f s\n", static_cast<unsigned long long>(members), Since(t0));
  auto t1 = Clock::now();
  double c1 = CpuSeconds();
  auto data = BuildNodes(std::move(shards));
  if (!data.ok()) return std::fprintf(stderr, "%s\n", data.status().ToString().c_str()), 1;
  std::printf("BuildNodes: %.2f s, cpu %.2f s (%zu nodes)\n", Since(t1), CpuSeconds() - c1,
              data->nodes.size());
  auto t2 = Clock::now();
  double c2 = CpuSeconds();
  Status st = WriteCatalog(dir + "/" + kCatalogFileName, *data);
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.ToString().c_str()), 1;
  std::printf("WriteCatalog: %.2f s, cpu %.2f s\n", Since(t2), CpuSeconds() - c2);
  std::printf("BuildNodes + WriteCatalog: %.2f s, cpu %.2f s\n", Since(t1), CpuSeconds() - c1);
  std::ifstream f(dir + "/" + kCatalogFileName, std::ios::ate | std::ios::binary);
  std::printf("catalog size: %.1f MB\n", static_cast<double>(f.tellg()) / 1e6);
  return 0;
}

int Shards(const std::string& dir) {
  auto t0 = Clock::now();
  const std::string payload(64, 'x');
  const uint32_t crc = Crc32(0, payload.data(), payload.size());
  for (int s = 0; s < kShards; ++s) {
    std::vector<uint8_t> out, cd;
    ByteWriter w(&out), c(&cd);
    for (int j = 0; j < kPerShard; ++j) {
      std::string name = KeyOf(static_cast<uint64_t>(s) * kPerShard + j);
      uint32_t offset = static_cast<uint32_t>(out.size());
      w.U32(0x04034b50); w.U16(20); w.U16(0x800); w.U16(0); w.U16(0); w.U16(0x21);
      w.U32(crc); w.U32(64); w.U32(64); w.U16(static_cast<uint16_t>(name.size())); w.U16(0);
      w.Bytes(name); w.Bytes(payload);
      c.U32(0x02014b50); c.U16(0x031e); c.U16(20); c.U16(0x800); c.U16(0); c.U16(0); c.U16(0x21);
      c.U32(crc); c.U32(64); c.U32(64); c.U16(static_cast<uint16_t>(name.size())); c.U16(0);
      c.U16(0); c.U16(0); c.U16(0); c.U32(0100644u << 16); c.U32(offset); c.Bytes(name);
    }
    uint32_t cd_offset = static_cast<uint32_t>(out.size());
    out.insert(out.end(), cd.begin(), cd.end());
    w.U32(0x06054b50); w.U16(0); w.U16(0); w.U16(kPerShard); w.U16(kPerShard);
    w.U32(static_cast<uint32_t>(cd.size())); w.U32(cd_offset); w.U16(0);
    std::ofstream f(dir + "/" + ShardFileName(s), std::ios::binary);
    f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  }
  std::printf("wrote %d shards x %d members: %.2f s\n", kShards, kPerShard, Since(t0));
  return 0;
}

int Refresh(const std::string& dir, int threads) {
  for (int pass = 0; pass < 2; ++pass) {
    auto t0 = Clock::now();
    double c0 = CpuSeconds();
    auto r = RefreshCatalog(dir, threads);
    if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().ToString().c_str()), 1;
    std::printf("RefreshCatalog (%s): %.2f s (cpu %.2f s on %d threads), %llu files, "
                "indexed %llu, reused %llu shards\n",
                pass == 0 ? "fresh" : "unchanged", Since(t0), CpuSeconds() - c0, threads,
                static_cast<unsigned long long>(r->totals.files),
                static_cast<unsigned long long>(r->report.shards_indexed),
                static_cast<unsigned long long>(r->report.shards_reused));
  }
  std::printf("peak RSS: %ld MB\n", PeakRssKb() / 1024);
  return 0;
}

int Open(const std::string& dir) {
  auto t0 = Clock::now();
  PackSetOptions opts;
  opts.catalog_use = PackSetOptions::CatalogUse::kRequire;
  auto ps = PackSet::Open(dir, opts);
  if (!ps.ok()) return std::fprintf(stderr, "%s\n", ps.status().ToString().c_str()), 1;
  double open_s = Since(t0);
  auto n = (*ps)->catalog().Find(KeyOf(777777));
  double first_s = Since(t0);
  std::printf("PackSet::Open: %.3f s; open + first Find: %.3f s (found: %d); peak RSS %ld MB\n",
              open_s, first_s, n.ok() && n->has_value() ? 1 : 0, PeakRssKb() / 1024);
  std::mt19937_64 rng(1);
  auto t1 = Clock::now();
  const int kFinds = 200000;
  int found = 0;
  for (int i = 0; i < kFinds; ++i) {
    auto f = (*ps)->catalog().Find(KeyOf(rng() % (kShards * kPerShard)));
    found += f.ok() && f->has_value();
  }
  double s = Since(t1);
  std::printf("%d random Finds (5 lookups each): %.2f s, %.1f us per lookup, found %d\n", kFinds,
              s, s / kFinds / 5 * 1e6, found);
  std::printf("peak RSS after lookups: %ld MB\n", PeakRssKb() / 1024);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: catalog_bench write|shards|refresh|open DIR [arg]\n");
    return 2;
  }
  std::string mode = argv[1], dir = argv[2];
  if (mode == "write") return Write(dir, argc > 3 ? std::stoull(argv[3]) : 1000000);
  if (mode == "shards") return Shards(dir);
  if (mode == "refresh") return Refresh(dir, argc > 3 ? std::stoi(argv[3]) : 2);
  if (mode == "open") return Open(dir);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
