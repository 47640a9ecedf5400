// PageCacheState: what the kernel's page cache holds of a byte range of a file (cachestat(2),
// Linux 6.5+): pages cached, and pages evicted by memory reclaim since they were last cached.
// packfs asks it to learn whether bytes it hinted into the cache ahead of their read were still
// there at the read (core/read/payoff.h), and MemoryRoom how much more it can take before reading
// ahead would only evict (core/read/dir_stream.h).
#pragma once

#include <cstdint>
#include <optional>

namespace packfs {

struct PageCacheState {
  uint64_t cached = 0;   // pages of the range in the page cache
  uint64_t evicted = 0;  // pages of the range evicted by reclaim (their shadow entries remain)
  uint64_t pages = 0;    // whole pages in the range (what was asked about)
};

// The state of the whole pages within [offset, offset + length) of `fd`; nullopt when the kernel
// has no cachestat (older than 6.5, or a seccomp filter refuses it) or the range holds no whole
// page.
std::optional<PageCacheState> CacheStateOf(int fd, uint64_t offset, uint64_t length);

// Bytes this process's page cache can grow by while the memory it needs stays available: the
// smaller of the machine's MemAvailable (/proc/meminfo) and, for each memory limit from this
// process's cgroup up to the root (cgroup v2's memory.max, or v1's memory.limit_in_bytes), the
// limit less the usage (the page cache counts there, so a full cgroup has no room even when
// its cache could be reclaimed). nullopt when /proc/meminfo cannot be read.
std::optional<uint64_t> MemoryRoom();

}  // namespace packfs
