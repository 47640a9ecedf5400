// CacheStateOf: cachestat(2) of a file range (see page_cache.h). Debian 12's headers predate the
// system call, so its number and structures are spelled out here (they are the same on every
// architecture: the call came after the tables were unified). MemoryRoom: /proc/meminfo and the
// memory files of this process's cgroups (v2, and v1's memory hierarchy).
#include "core/read/page_cache.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <string>

namespace packfs {
namespace {

constexpr long kCachestat = 451;

struct CachestatRange {
  uint64_t off;
  uint64_t len;
};
struct Cachestat {
  uint64_t nr_cache;
  uint64_t nr_dirty;
  uint64_t nr_writeback;
  uint64_t nr_evicted;
  uint64_t nr_recently_evicted;
};

// The first number in file `path`, or nullopt (no such file, or "max").
std::optional<uint64_t> NumberIn(const std::string& path) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<PageCacheState> CacheStateOf(int fd, uint64_t offset, uint64_t length) {
  static std::atomic<bool> missing{false};  // no cachestat here: stop asking
  if (missing.load(std::memory_order_relaxed)) return std::nullopt;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t from = (offset + page - 1) / page * page;
  const uint64_t to = (offset + length) / page * page;
  if (to <= from) return std::nullopt;
  CachestatRange range{from, to - from};
  Cachestat cs{};
  if (::syscall(kCachestat, fd, &range, &cs, 0) != 0) {
    if (errno == ENOSYS || errno == EPERM) missing.store(true, std::memory_order_relaxed);
    return std::nullopt;
  }
  return PageCacheState{cs.nr_cache, cs.nr_evicted, (to - from) / page};
}

std::optional<uint64_t> MemoryRoom() {
  std::optional<uint64_t> room;
  {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    while (meminfo >> key >> kib) {
      if (key == "MemAvailable:") {
        room = kib << 10;
        break;
      }
      meminfo.ignore(64, '\n');
    }
  }
  if (!room) return std::nullopt;
  // Every memory limit from this process's cgroup up to the root, in cgroup v2 ("0::/path",
  // mounted at /sys/fs/cgroup, or at /sys/fs/cgroup/unified beside v1's hierarchies) and in v1's
  // memory hierarchy ("N:...memory...:/path").
  auto limit = [&](const std::string& root, std::string dir, const char* max_file,
                   const char* current_file) {
    while (true) {
      const std::string base = root + (dir == "/" ? "" : dir);
      std::optional<uint64_t> max = NumberIn(base + "/" + max_file);
      std::optional<uint64_t> current = NumberIn(base + "/" + current_file);
      if (max && current) *room = std::min(*room, *max > *current ? *max - *current : 0);
      if (dir.empty() || dir == "/") return;
      dir = dir.substr(0, dir.rfind('/'));
    }
  };
  std::ifstream self("/proc/self/cgroup");
  std::string line;
  while (std::getline(self, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    const std::string dir = line.substr(b + 1);
    if (controllers == ",,") {
      limit("/sys/fs/cgroup", dir, "memory.max", "memory.current");
      limit("/sys/fs/cgroup/unified", dir, "memory.max", "memory.current");
    } else if (controllers.find(",memory,") != std::string::npos) {
      limit("/sys/fs/cgroup/memory", dir, "memory.limit_in_bytes", "memory.usage_in_bytes");
    }
  }
  return room;
}

}  // namespace packfs
