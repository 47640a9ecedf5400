// DiskCache: one sparse data file and one extent log per object version, verified extents, an
// LRU size bound over whole objects (see disk_cache.h).
#include "core/remote/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <thread>

namespace packfs {
namespace {

constexpr char kLogMagic[8] = {'P', 'K', 'F', 'S', 'E', 'X', 'T', '1'};
constexpr size_t kVerifyChunk = 64 << 10;  // bytes hashed per pread when verifying
constexpr size_t kLogHeader = 16;  // magic, u64 XXH3-64 of the object key
constexpr size_t kRecord = 32;     // u64 start, u64 length, u64 XXH3-64 of data, u64 checksum
constexpr uint64_t kRecordSeed = 0x706b66736578746eULL;
constexpr const char* kSubdir = "objects-v2";
constexpr const char* kOldSubdir = "blocks-v1";  // the one-file-per-extent layout
constexpr const char* kLogSuffix = ".ext";

void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string NameOf(const std::string& object) {
  const XXH128_hash_t h = XXH3_128bits(object.data(), object.size());
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

bool PreadFull(int fd, uint8_t* p, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

bool PwriteFull(int fd, const uint8_t* p, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pwrite(fd, p + done, n - done, static_cast<off_t>(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

// One write(2): O_APPEND places the whole record atomically after other writers' records.
bool AppendRecord(int fd, const uint8_t* rec) {
  for (;;) {
    const ssize_t r = ::write(fd, rec, kRecord);
    if (r < 0 && errno == EINTR) continue;
    return r == static_cast<ssize_t>(kRecord);
  }
}

uint64_t Allocated(int fd) {
  struct stat st;
  return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
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
  fs::remove_all(dir + "/" + kOldSubdir, ec);  // unreadable by this version; frees its space
  std::unique_ptr<DiskCache> cache(new DiskCache(root, capacity));
  // Count what earlier mounts left; the data files' mtimes (set at each mount's first use)
  // order them, so eviction removes the objects used longest ago first.
  std::unordered_map<std::string, std::pair<int64_t, uint64_t>> found;  // name -> mtime, bytes
  for (auto it = fs::directory_iterator(root, ec); !ec && it != fs::end(it); it.increment(ec)) {
    const std::string file = it->path().filename().string();
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (file.find(".tmp") != std::string::npos) {
      fs::remove(it->path(), ec);  // a log creation a crash interrupted
      continue;
    }
    const bool log = file.size() > 4 && file.ends_with(kLogSuffix);
    auto& [mtime, bytes] = found[log ? file.substr(0, file.size() - 4) : file];
    bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    if (!log) mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [name, v] : found) order.emplace_back(v.first, name);
  std::sort(order.begin(), order.end());
  std::lock_guard<std::mutex> lock(cache->mu_);
  for (const auto& [mtime, name] : order) {
    Object& obj = cache->objects_[name];
    obj.allocated = found[name].second;
    obj.last_use = ++cache->clock_;
    cache->bytes_ += obj.allocated;
  }
  cache->EvictLocked();
  return cache;
}

std::string DiskCache::PathOf(const std::string& object) const {
  return dir_ + "/" + NameOf(object);
}
std::string DiskCache::LogPathOf(const std::string& object) const {
  return PathOf(object) + kLogSuffix;
}

DiskCache::Object* DiskCache::OpenLocked(const std::string& name, bool create) {
  auto it = objects_.find(name);
  if (it != objects_.end() && it->second.files) {
    it->second.last_use = ++clock_;
    return &it->second;
  }
  const std::string path = dir_ + "/" + name;
  const std::string log_path = path + kLogSuffix;
  auto files = std::make_shared<Files>();
  files->data.reset(::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600));
  if (!files->data.valid()) return nullptr;
  files->log.reset(::open(log_path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC));
  if (!files->log.valid() && errno == ENOENT && create) {
    // Created whole by link(2), so no reader or writer ever sees a log without its header.
    uint8_t header[kLogHeader];
    std::memcpy(header, kLogMagic, 8);
    PutU64(header + 8, XXH3_64bits(name.data(), name.size()));
    const std::string tmp = log_path + ".tmp-" + std::to_string(::getpid()) + "-" +
        std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
    UniqueFd t(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (t.valid() && PwriteFull(t.get(), header, kLogHeader, 0)) {
      (void)::link(tmp.c_str(), log_path.c_str());  // EEXIST: another writer was first
    }
    ::unlink(tmp.c_str());
    files->log.reset(::open(log_path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC));
  }
  if (!files->log.valid()) return nullptr;
  struct stat st;
  if (::fstat(files->data.get(), &st) != 0) return nullptr;
  files->data_ino = st.st_ino;
  // The mtime orders objects for the next Open's eviction: this one is in use.
  (void)::futimens(files->data.get(), nullptr);

  Object& obj = objects_[name];
  if (obj.data_ino != files->data_ino) {
    // Another mount evicted and recreated the files (or they are new): start over.
    obj.extents.clear();
    obj.max_length = 0;
    obj.log_read = 0;
    obj.foreign = false;
    obj.data_ino = files->data_ino;
  }
  obj.files = std::move(files);
  obj.last_use = ++clock_;
  ++open_;
  RefreshLocked(name, obj);
  RecountLocked(obj);
  CloseIdleLocked();
  return &obj;
}

void DiskCache::RefreshLocked(const std::string& name, Object& obj) {
  if (!obj.files || obj.foreign) return;
  const int fd = obj.files->log.get();
  struct stat st;
  if (::fstat(fd, &st) != 0) return;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t from = std::max<uint64_t>(obj.log_read, kLogHeader);
  if (size < from + kRecord && obj.log_read >= kLogHeader) return;
  std::vector<uint8_t> buf(size - std::min(size, obj.log_read));
  if (buf.empty() || !PreadFull(fd, buf.data(), buf.size(), obj.log_read)) return;
  size_t pos = 0;
  if (obj.log_read < kLogHeader) {
    if (buf.size() < kLogHeader) return;
    // A log of another object (a hand copy, another format): none of its records are used.
    if (std::memcmp(buf.data(), kLogMagic, 8) != 0 ||
        GetU64(buf.data() + 8) != XXH3_64bits(name.data(), name.size())) {
      obj.foreign = true;  // nor written to: it is not ours to extend
      return;
    }
    pos = kLogHeader;
  }
  // Records are found by their checksums: a torn record (a crash mid-append) is skipped byte by
  // byte until the next whole one, so later appends after it are still read.
  while (pos + kRecord <= buf.size()) {
    const uint8_t* r = buf.data() + pos;
    if (XXH3_64bits_withSeed(r, 24, kRecordSeed) != GetU64(r + 24)) {
      ++pos;
      continue;
    }
    const uint64_t start = GetU64(r);
    const uint64_t length = GetU64(r + 8);
    // Put never writes more than a quarter of the capacity: a longer record is not believed
    // (verifying it would allocate its length).
    if (length > 0 && length <= capacity_ / 4 &&
        start <= std::numeric_limits<uint64_t>::max() - length) {
      obj.extents.try_emplace({start, length}, Extent{GetU64(r + 16), false});
      obj.max_length = std::max(obj.max_length, length);
    }
    pos += kRecord;
  }
  obj.log_read += pos;
}

std::optional<std::vector<DiskCache::Piece>> DiskCache::Cover(const Object& obj, uint64_t begin,
                                                              uint64_t end) {
  std::vector<Piece> out;
  uint64_t pos = begin;
  while (pos < end) {
    // The extent starting at or before pos that reaches furthest past it.
    auto best = obj.extents.end();
    uint64_t best_end = pos;
    auto it = obj.extents.upper_bound({pos, std::numeric_limits<uint64_t>::max()});
    while (it != obj.extents.begin()) {
      --it;
      const uint64_t start = it->first.first;
      if (start + obj.max_length <= pos) break;
      if (start + it->first.second > best_end) {
        best = it;
        best_end = start + it->first.second;
      }
    }
    if (best == obj.extents.end()) return std::nullopt;
    out.push_back(Piece{best->first.first, best->first.second, best->second.hash,
                        best->second.verified});
    pos = best_end;
  }
  return out;
}

bool DiskCache::Read(const std::string& object, uint64_t offset, std::span<uint8_t> buf) {
  return Read(object, offset, buf.size(), [&] { return buf.data(); });
}

bool DiskCache::Read(const std::string& object, uint64_t offset, size_t length,
                     const std::function<uint8_t*()>& place) {
  if (length == 0) return true;
  const std::string name = NameOf(object);
  const uint64_t end = offset + length;
  std::shared_ptr<const Files> files;
  std::vector<Piece> pieces;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Not on disk at Open may still be there now: another mount sharing the directory may
    // have written it (a failed open(2) costs little next to the fetch a miss leads to).
    Object* obj = OpenLocked(name, false);
    if (!obj) return false;
    std::optional<std::vector<Piece>> cover = Cover(*obj, offset, end);
    if (!cover) {
      RefreshLocked(name, *obj);  // another mount may have fetched it meanwhile
      cover = Cover(*obj, offset, end);
      if (!cover) return false;
    }
    files = obj->files;
    pieces = std::move(*cover);
  }
  const std::span<uint8_t> buf(place(), length);
  if (buf.data() == nullptr) return false;
  // First reads verify whole extents, and copy their part of the request from what they read;
  // when every piece was read so, the request is complete without another pread. The extent is
  // hashed in chunks through one buffer on the stack: a whole-extent buffer (up to a member of
  // several MiB, for a header check of a few bytes) cost a zero fill and page faults per extent,
  // a fifth of the daemon's time on a second pass.
  bool all_copied = true;
  alignas(64) uint8_t chunk[kVerifyChunk];
  for (const Piece& p : pieces) {
    if (p.verified) {
      all_copied = false;
      continue;
    }
    XXH3_state_t* state = XXH3_createState();
    bool ok = state != nullptr && XXH3_64bits_reset(state) == XXH_OK;
    for (uint64_t pos = p.start; ok && pos < p.start + p.length;) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(kVerifyChunk, p.start + p.length - pos));
      ok = PreadFull(files->data.get(), chunk, n, pos) &&
           XXH3_64bits_update(state, chunk, n) == XXH_OK;
      // The part of this chunk the caller asked for.
      const uint64_t from = std::max(offset, pos);
      const uint64_t to = std::min(end, pos + n);
      if (ok && from < to) {
        std::memcpy(buf.data() + (from - offset), chunk + (from - pos), to - from);
      }
      pos += n;
    }
    ok = ok && XXH3_64bits_digest(state) == p.hash;
    XXH3_freeState(state);
    if (!ok) {
      DropExtent(name, p);
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = objects_.find(name);
      if (it != objects_.end()) {
        auto e = it->second.extents.find({p.start, p.length});
        if (e != it->second.extents.end()) e->second.verified = true;
      }
    }
  }
  if (all_copied) return true;
  if (!PreadFull(files->data.get(), buf.data(), buf.size(), offset)) {
    // Verified bytes gone (the file truncated under us): never serve, refetch.
    for (const Piece& p : pieces) DropExtent(name, p);
    return false;
  }
  return true;
}

std::shared_ptr<const UniqueFd> DiskCache::MapVerified(const std::string& object,
                                                       uint64_t offset, uint64_t length) {
  return Map(object, offset, length, true);
}

std::shared_ptr<const UniqueFd> DiskCache::MapCovered(const std::string& object,
                                                      uint64_t offset, uint64_t length) {
  return Map(object, offset, length, false);
}

std::shared_ptr<const UniqueFd> DiskCache::Map(const std::string& object, uint64_t offset,
                                               uint64_t length, bool verified) {
  if (length == 0) return nullptr;
  const std::string name = NameOf(object);
  std::lock_guard<std::mutex> lock(mu_);
  Object* obj = OpenLocked(name, false);
  if (!obj || !obj->files) return nullptr;
  std::optional<std::vector<Piece>> cover = Cover(*obj, offset, offset + length);
  if (!cover) return nullptr;
  for (const Piece& p : *cover) {
    if (verified && !p.verified) return nullptr;
  }
  // Aliases the shared Files: the data fd lives as long as any handle does.
  return std::shared_ptr<const UniqueFd>(obj->files, &obj->files->data);
}

void DiskCache::DropExtent(const std::string& name, const Piece& p) {
  std::lock_guard<std::mutex> lock(mu_);
  ++damaged_;
  auto it = objects_.find(name);
  if (it != objects_.end()) it->second.extents.erase({p.start, p.length});
}

void DiskCache::Put(const std::string& object, uint64_t start, std::span<const uint8_t> data) {
  if (data.empty() || data.size() > capacity_ / 4) return;
  const std::string name = NameOf(object);
  std::shared_ptr<const Files> files;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Object* obj = OpenLocked(name, true);
    if (!obj) {
      ++write_errors_;
      return;
    }
    if (obj->foreign || Cover(*obj, start, start + data.size())) return;  // or already there
    files = obj->files;
  }
  const uint64_t hash = XXH3_64bits(data.data(), data.size());
  uint8_t rec[kRecord];
  PutU64(rec, start);
  PutU64(rec + 8, data.size());
  PutU64(rec + 16, hash);
  PutU64(rec + 24, XXH3_64bits_withSeed(rec, 24, kRecordSeed));
  // Data first, then its record; no fsync: after a crash a record may name bytes that never
  // reached the disk, which the checksum on first read rejects — a refetch, never wrong bytes.
  const bool ok = PwriteFull(files->data.get(), data.data(), data.size(), start) &&
                  AppendRecord(files->log.get(), rec);
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok) {
    ++write_errors_;
    return;
  }
  auto it = objects_.find(name);
  // Evicted, or reopened onto other files meanwhile: the log still has it for a later refresh.
  if (it == objects_.end() || it->second.data_ino != files->data_ino) return;
  Object& obj = it->second;
  // Written by this process from bytes it fetched: trusted like a verified extent.
  obj.extents.try_emplace({start, data.size()}, Extent{hash, true});
  obj.max_length = std::max<uint64_t>(obj.max_length, data.size());
  obj.last_use = ++clock_;
  RecountLocked(obj);
  EvictLocked();
}

void DiskCache::RecountLocked(Object& obj) {
  if (!obj.files) return;
  const uint64_t now = Allocated(obj.files->data.get()) + Allocated(obj.files->log.get());
  bytes_ = bytes_ - obj.allocated + now;
  obj.allocated = now;
}

void DiskCache::CloseIdleLocked() {
  while (open_ > kMaxOpenObjects) {
    Object* oldest = nullptr;
    for (auto& [name, obj] : objects_) {
      if (obj.files && (!oldest || obj.last_use < oldest->last_use)) oldest = &obj;
    }
    if (!oldest) return;
    oldest->files.reset();  // readers holding it keep their fds until they finish
    --open_;
  }
}

void DiskCache::EvictLocked() {
  if (bytes_ <= capacity_) return;
  // Evicting in one batch down to 7/8 keeps this O(n log n) sort rare.
  std::vector<std::pair<uint64_t, std::string>> order;
  order.reserve(objects_.size());
  for (const auto& [name, obj] : objects_) {
    if (obj.allocated > 0) order.emplace_back(obj.last_use, name);
  }
  std::sort(order.begin(), order.end());
  const uint64_t target = capacity_ - capacity_ / 8;
  for (const auto& [use, name] : order) {
    if (bytes_ <= target) break;
    const std::string path = dir_ + "/" + name;
    ::unlink(path.c_str());
    ::unlink((path + kLogSuffix).c_str());
    auto it = objects_.find(name);
    bytes_ -= it->second.allocated;
    if (it->second.files) --open_;
    objects_.erase(it);
  }
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

}  // namespace packfs
