// DiskCache: verified extent files under a directory with an LRU size bound (see disk_cache.h).
#include "core/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "core/unique_fd.h"

namespace packfs {
namespace {

constexpr char kMagic[8] = {'P', 'K', 'F', 'S', 'B', 'L', 'K', '1'};
constexpr size_t kHeaderSize = 32;  // magic, u64 length, u64 xxh3 of data, u64 reserved
constexpr const char* kSubdir = "blocks-v1";

void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// "ab/<32 hex digits>": 256 subdirectories keep directories small.
std::string NameOf(const std::string& object, uint64_t start, size_t length) {
  std::string key = object;
  key.push_back('\0');
  key += std::to_string(start) + ":" + std::to_string(length);
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return std::string(hex, 2) + "/" + hex;
}

bool ReadFull(int fd, uint8_t* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::read(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

bool WriteFull(int fd, const uint8_t* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::write(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<DiskCache>> DiskCache::Open(const std::string& dir, uint64_t capacity) {
  namespace fs = std::filesystem;
  const std::string root = dir + "/" + kSubdir;
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) {
    return Status::IOError("cannot create the disk cache directory " + root + ": " +
                               ec.message() + " (choose another with --disk-cache)",
                           ec.value());
  }
  std::unique_ptr<DiskCache> cache(new DiskCache(root, capacity));
  // Index what an earlier mount left, oldest first, so eviction removes old extents first.
  std::vector<std::pair<int64_t, std::pair<std::string, uint64_t>>> found;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string rel = fs::relative(it->path(), root, ec).string();
    if (rel.find(".tmp") != std::string::npos) {
      fs::remove(it->path(), ec);  // a write a crash interrupted
      continue;
    }
    struct stat st;
    if (::stat(it->path().c_str(), &st) != 0) continue;
    found.push_back({static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                     {rel, static_cast<uint64_t>(st.st_size)}});
  }
  std::sort(found.begin(), found.end());
  std::lock_guard<std::mutex> lock(cache->mu_);
  for (const auto& [mtime, entry] : found) cache->TouchLocked(entry.first, entry.second);
  cache->EvictLocked();
  return cache;
}

std::string DiskCache::PathOf(const std::string& object, uint64_t start, size_t length) const {
  return dir_ + "/" + NameOf(object, start, length);
}

std::optional<std::vector<uint8_t>> DiskCache::Get(const std::string& object, uint64_t start,
                                                   size_t length) {
  const std::string name = NameOf(object, start, length);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!index_.count(name)) return std::nullopt;
  }
  const std::string path = dir_ + "/" + name;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  bool good = false;
  std::vector<uint8_t> data;
  if (fd.valid()) {
    struct stat st;
    uint8_t header[kHeaderSize];
    if (::fstat(fd.get(), &st) == 0 && static_cast<uint64_t>(st.st_size) == kHeaderSize + length &&
        ReadFull(fd.get(), header, kHeaderSize) && std::memcmp(header, kMagic, 8) == 0 &&
        GetU64(header + 8) == length) {
      data.resize(length);
      good = ReadFull(fd.get(), data.data(), length) &&
             XXH3_64bits(data.data(), length) == GetU64(header + 16);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!good) {
    if (fd.valid()) {
      ::unlink(path.c_str());
      ++damaged_;
    }
    ForgetLocked(name);
    return std::nullopt;
  }
  TouchLocked(name, kHeaderSize + length);
  return data;
}

void DiskCache::Put(const std::string& object, uint64_t start, std::span<const uint8_t> data) {
  if (kHeaderSize + data.size() > capacity_ / 4) return;
  const std::string name = NameOf(object, start, data.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.count(name)) return;
  }
  const std::string path = dir_ + "/" + name;
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  ::mkdir((dir_ + "/" + name.substr(0, 2)).c_str(), 0700);
  uint8_t header[kHeaderSize] = {};
  std::memcpy(header, kMagic, 8);
  PutU64(header + 8, data.size());
  PutU64(header + 16, XXH3_64bits(data.data(), data.size()));
  bool ok = false;
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    ok = fd.valid() && WriteFull(fd.get(), header, kHeaderSize) &&
         WriteFull(fd.get(), data.data(), data.size());
  }
  // No fsync: after a crash a file may be short or hold zeros, which Get's size and checksum
  // checks reject; the cost is a refetch, never wrong bytes.
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok) {
    ::unlink(tmp.c_str());
    ++write_errors_;
    return;
  }
  TouchLocked(name, kHeaderSize + data.size());
  EvictLocked();
}

uint64_t DiskCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}
uint64_t DiskCache::damaged() const {
  std::lock_guard<std::mutex> lock(mu_);
  return damaged_;
}
uint64_t DiskCache::write_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return write_errors_;
}

void DiskCache::TouchLocked(const std::string& name, uint64_t size) {
  auto [it, inserted] = index_.try_emplace(name);
  if (inserted) {
    it->second.size = size;
    bytes_ += size;
  }
  it->second.last_use = ++clock_;
}

void DiskCache::ForgetLocked(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) return;
  bytes_ -= it->second.size;
  index_.erase(it);
}

void DiskCache::EvictLocked() {
  if (bytes_ <= capacity_) return;
  // Evicting in one batch down to 7/8 keeps this O(n log n) sort rare.
  std::vector<std::pair<uint64_t, std::string>> order;
  order.reserve(index_.size());
  for (const auto& [name, e] : index_) order.emplace_back(e.last_use, name);
  std::sort(order.begin(), order.end());
  const uint64_t target = capacity_ - capacity_ / 8;
  for (const auto& [use, name] : order) {
    if (bytes_ <= target) break;
    ::unlink((dir_ + "/" + name).c_str());
    ForgetLocked(name);
  }
}

}  // namespace packfs
