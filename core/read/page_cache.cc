// CacheStateOf: cachestat(2) of a file range (see page_cache.h). Debian 12's headers predate the
// system call, so its number and structures are spelled out here (they are the same on every
// architecture: the call came after the tables were unified).
#include "core/read/page_cache.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

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
  return PageCacheState{cs.nr_cache, cs.nr_evicted};
}

}  // namespace packfs
