// RemoteReader: whole small members, blocks with sequential read-ahead, memory and disk caches
// (see remote_reader.h).
#include "core/remote/remote_reader.h"

#include <algorithm>
#include <cstring>

#include "core/base/thread_name.h"

namespace packfs {
namespace {

// Separate key spaces: a whole member and a block may start at the same offset.
std::string MemberKey(const RangeFetcher& o) { return o.cache_key() + "\nmember"; }
std::string BlockKey(const RangeFetcher& o) { return o.cache_key() + "\nblock"; }

// The memory cache's share of the bound: all but a reserve for what else reading costs (FUSE
// workers' reply buffers, connections, allocator slack: about 5 MiB measured with 8 workers
// reading small members), so the daemon's memory past a local mount's stays within --cache-size.
uint64_t CacheCapacity(const RemoteReaderOptions& o) {
  const uint64_t reserve = std::min(o.memory_bytes / 8, uint64_t{8} << 20);
  return std::max(4 * o.block_size, o.memory_bytes - reserve);
}

}  // namespace

Result<std::shared_ptr<RemoteReader>> RemoteReader::Create(const RemoteReaderOptions& options) {
  if (options.block_size == 0 || options.block_size % 4096 != 0) {
    return Status::InvalidArgument("remote read block size must be a positive multiple of 4 KiB");
  }
  if (options.memory_bytes < 4 * options.block_size) {
    return Status::InvalidArgument("--cache-size must be at least " +
                                   std::to_string(4 * options.block_size / 1024) + " KiB");
  }
  std::shared_ptr<RemoteReader> reader(new RemoteReader(options));
  if (!options.disk_dir.empty()) {
    PACKFS_ASSIGN_OR_RETURN(reader->disk_, DiskCache::Open(options.disk_dir, options.disk_bytes));
  }
  const int threads = std::max(options.prefetch_threads, 1);
  for (int i = 0; i < threads; ++i) {
    reader->workers_.emplace_back([r = reader.get()] {
      NameThread("packfs-fetch");
      r->Worker();
    });
  }
  return reader;
}

RemoteReader::RemoteReader(const RemoteReaderOptions& options)
    : options_(options),
      // An eighth of the cache for reusable part mappings, at most 32 MiB (see BlockCache): a
      // sequential read's parts are an eighth of its window, so a few of them fit.
      memory_(CacheCapacity(options),
              std::min<uint64_t>(CacheCapacity(options) / 8, uint64_t{32} << 20)) {
  // Read-ahead claims at most half the memory cache, shared by the sequential readers of the
  // moment (see Window): with drop-behind (see Read) a reader holds about its window, and the
  // rest stays for other readers and the spares.
  options_.max_window = std::max(options_.block_size,
                                 std::min(options_.max_window, memory_.capacity() / 2));
  options_.min_window = std::min(options_.min_window, options_.max_window);
  options_.max_part = std::max(options_.block_size, std::min(options_.max_part,
                                                             options_.max_window));
  // A whole member is one extent: keep it well under the bound too.
  options_.whole_member_limit = std::min(options_.whole_member_limit, memory_.capacity() / 4);
}

RemoteReader::~RemoteReader() {
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    stopping_ = true;
    left.swap(jobs_);
  }
  jobs_cv_.notify_all();
  for (auto& t : workers_) t.join();
  for (Job& job : left) {
    for (Claim& c : job.claims) memory_.Fail(c.slot, Status::IOError("unmounting"));
  }
}

void RemoteReader::Enqueue(Job job) {
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    jobs_.push_back(std::move(job));
  }
  jobs_cv_.notify_one();
}

void RemoteReader::Worker() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(jobs_mu_);
      jobs_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    // Errors reach the readers waiting for these blocks; nobody else needs them.
    (void)FetchBlocks(*job.object, job.claims, true);
  }
}

Result<RemoteReader::Bytes> RemoteReader::GetMember(
    const std::shared_ptr<const RangeFetcher>& object, uint64_t begin, uint64_t length) {
  const std::string key = MemberKey(*object);
  BlockCache::Lookup found = memory_.Acquire(key, begin, length);
  if (found.hit) {
    ++memory_hits_;
    return found.hit;
  }
  if (!found.owner) {
    ++memory_hits_;
    return memory_.Wait(found.slot);
  }
  ++misses_;
  Result<std::shared_ptr<BlockCache::Buffer>> buf = memory_.Allocate(length, {found.slot});
  if (!buf.ok()) {
    memory_.Fail(found.slot, buf.status());
    return buf.status();
  }
  ++requests_;
  Status st = object->Fetch(begin, std::span<uint8_t>((*buf)->data(), length));
  if (!st.ok()) {
    memory_.Fail(found.slot, st);
    return st;
  }
  bytes_fetched_ += length;
  Bytes shared = BlockCache::Slice(*buf, 0, length);
  if (disk_ && object->persistent()) disk_->Put(object->cache_key(), begin, *shared);
  memory_.Fulfill(found.slot, shared);
  return shared;
}

void RemoteReader::ClaimFree(const std::string& key, uint64_t size, uint64_t from, uint64_t to,
                             std::vector<Claim>* out) {
  const uint64_t bs = options_.block_size;
  for (uint64_t b = from; b < to && b * bs < size; ++b) {
    if (memory_.Contains(key, b * bs)) continue;
    BlockCache::Lookup l = memory_.Acquire(key, b * bs, std::min(bs, size - b * bs));
    if (l.owner) out->push_back(Claim{b, l.slot});
  }
}

Status RemoteReader::FetchBlocks(const RangeFetcher& object, const std::vector<Claim>& claims,
                                 bool prefetch) {
  const uint64_t bs = options_.block_size;
  const uint64_t size = object.size();
  auto block_len = [&](uint64_t b) { return std::min(bs, size - b * bs); };
  std::vector<Claim> missing;
  for (const Claim& c : claims) {
    if (disk_ && object.persistent()) {
      // Read-ahead claims (or a read the disk covered only in part): these copy into memory,
      // into a part of the cache's own, as fetched blocks are (not a malloc'd vector: freed into
      // an arena, those kept ~10 MiB resident past --cache-size on a first --disk-cache pass).
      std::shared_ptr<BlockCache::Buffer> part;
      const bool hit = disk_->Read(object.cache_key(), c.block * bs, block_len(c.block), [&] {
        Result<std::shared_ptr<BlockCache::Buffer>> buf =
            memory_.Allocate(block_len(c.block), {c.slot});
        if (buf.ok()) part = std::move(*buf);
        return part ? part->data() : nullptr;
      });
      if (hit) {
        ++disk_hits_;
        memory_.Fulfill(c.slot, BlockCache::Slice(part, 0, block_len(c.block)));
        continue;
      }
    }
    missing.push_back(c);
  }
  Status first_error;
  for (size_t i = 0; i < missing.size();) {
    size_t j = i + 1;
    while (j < missing.size() && missing[j].block == missing[j - 1].block + 1) ++j;
    const uint64_t start = missing[i].block * bs;
    const uint64_t end = std::min(size, missing[j - 1].block * bs + bs);
    // One buffer for the run; its blocks are slices of it (no copy), and it counts against
    // the memory bound from now until its last block leaves the cache.
    std::vector<std::shared_ptr<BlockCache::Slot>> slots;
    for (size_t k = i; k < j; ++k) slots.push_back(missing[k].slot);
    Result<std::shared_ptr<BlockCache::Buffer>> buf = memory_.Allocate(end - start, slots);
    Status st = buf.status();
    // Blocks are handed out as their bytes arrive, in order: a reader waiting at the front of a
    // run of read-ahead gets it a round trip plus one block after the request, not the whole run.
    size_t next = i;
    std::vector<Bytes> done;
    auto hand_out = [&](size_t ready) {
      for (; next < j; ++next) {
        const uint64_t off = missing[next].block * bs - start;
        const uint64_t len = block_len(missing[next].block);
        if (off + len > ready) break;
        Bytes bytes = BlockCache::Slice(*buf, off, len);
        done.push_back(bytes);
        memory_.Fulfill(missing[next].slot, std::move(bytes));
      }
    };
    if (st.ok()) {
      ++requests_;
      st = object.Fetch(start, std::span<uint8_t>((*buf)->data(), end - start), hand_out);
    }
    if (st.ok()) {
      bytes_fetched_ += end - start;
      if (prefetch) prefetched_bytes_ += end - start;
      hand_out(end - start);
    }
    for (; next < j; ++next) memory_.Fail(missing[next].slot, st);
    if (disk_ && object.persistent()) {
      for (const Bytes& bytes : done) {
        disk_->Put(object.cache_key(), start + static_cast<uint64_t>(bytes->data() - (*buf)->data()),
                   *bytes);
      }
    }
    if (!st.ok() && first_error.ok()) first_error = st;
    i = j;
  }
  return first_error;
}

bool RemoteReader::LendCachedMember(const RangeFetcher& object, uint64_t member_begin,
                                    uint64_t member_end, std::vector<Extent>* out) {
  const uint64_t size = object.size();
  if (member_end <= member_begin || member_end > size) return false;
  const uint64_t bs = options_.block_size;
  const std::string key = BlockKey(object);
  const size_t had = out->size();
  for (uint64_t b = member_begin / bs; b * bs < member_end; ++b) {
    Bytes bytes = memory_.Peek(key, b * bs);
    if (!bytes || bytes->size() != std::min(bs, size - b * bs)) {
      out->resize(had);
      return false;
    }
    const uint64_t from = std::max(member_begin, b * bs) - b * bs;
    const uint64_t to = std::min(member_end, b * bs + bytes->size()) - b * bs;
    out->push_back(bytes.Sub(from, to - from));
  }
  for (uint64_t b = member_begin / bs; (b + 1) * bs <= member_end; ++b) {
    memory_.Demote(key, b * bs);  // read to its end, as a walk's reader would have
  }
  NoteWalked(object.cache_key(), member_begin, member_end);
  ++walk_lent_;
  return true;
}

Result<size_t> RemoteReader::Read(const std::shared_ptr<const RangeFetcher>& object,
                                  uint64_t member_begin, uint64_t member_end, uint64_t offset,
                                  std::span<uint8_t> buf, uint64_t run_end) {
  const uint64_t size = object->size();
  if (offset >= size || buf.empty()) return size_t{0};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - offset));
  // Disk hits go straight into the caller's buffer (one pread; the page cache keeps them),
  // never through the memory cache.
  if (disk_ && object->persistent() && disk_->Read(object->cache_key(), offset, buf.first(n))) {
    ++disk_hits_;
    // A walk's reads served from disk are still its reads: whether a walk is under way, and how
    // many readers share it (WalkAlone), decide what a READ may bring beside it.
    if (SmallMember(size, member_begin, member_end, offset, n) && options_.walk_window > 0) {
      uint64_t reach = 0;
      Walking(object->cache_key(), member_begin, member_end, run_end, &reach);
    }
    return n;
  }
  std::vector<Extent> pieces;
  PACKFS_RETURN_IF_ERROR(
      LendFromMemory(object, member_begin, member_end, offset, n, run_end, &pieces));
  size_t done = 0;
  for (const Extent& e : pieces) {
    std::memcpy(buf.data() + done, e->data(), e->size());
    done += e->size();
  }
  return done;
}

Result<std::optional<size_t>> RemoteReader::Lend(
    const std::shared_ptr<const RangeFetcher>& object, uint64_t member_begin,
    uint64_t member_end, uint64_t offset, size_t length, std::vector<Extent>* out,
    uint64_t run_end) {
  // With a disk cache, bytes it holds are read from it (Read), not lent from memory.
  if (disk_ && object->persistent()) return std::optional<size_t>();
  const uint64_t size = object->size();
  if (offset >= size || length == 0) return std::optional<size_t>(0);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(length, size - offset));
  PACKFS_RETURN_IF_ERROR(LendFromMemory(object, member_begin, member_end, offset, n, run_end, out));
  return std::optional<size_t>(n);
}

Status RemoteReader::LendFromMemory(const std::shared_ptr<const RangeFetcher>& object,
                                    uint64_t member_begin, uint64_t member_end, uint64_t offset,
                                    size_t n, uint64_t run_end, std::vector<Extent>* out) {
  const uint64_t size = object->size();
  const bool member = IsMember(size, member_begin, member_end, offset, n);
  const bool small = SmallMember(size, member_begin, member_end, offset, n);
  uint64_t reach = 0;
  const bool walk = small && options_.walk_window > 0 &&
                    Walking(object->cache_key(), member_begin, member_end, run_end, &reach);
  const std::string key = BlockKey(*object);
  const bool by_block = small && !walk && ByBlock(key, member_begin, member_end);
  if (small && !walk && !by_block) {
    PACKFS_ASSIGN_OR_RETURN(Bytes bytes,
                            GetMember(object, member_begin, member_end - member_begin));
    if (bytes->size() != member_end - member_begin) {
      return Status::Corruption("remote cache holds a member extent of the wrong size");
    }
    out->push_back(bytes.Sub(offset - member_begin, n));
    return Status::OK();
  }

  const uint64_t bs = options_.block_size;
  // A walk reads ahead across members, up to its reach (see Walking) or the object's end; a
  // large member within itself.
  if (walk) ++walk_reads_;
  const uint64_t window = walk     ? WalkWindow(object->cache_key())
                          : member ? Window(object->cache_key(), member_begin, offset, n)
                                   : 0;
  const uint64_t limit = !walk ? member_end : reach > 0 ? std::min(reach, size) : size;
  const uint64_t b0 = offset / bs;
  const uint64_t b1 = (offset + n - 1) / bs;
  std::vector<BlockCache::Lookup> found;
  std::vector<Claim> mine;
  for (uint64_t b = b0; b <= b1; ++b) {
    found.push_back(memory_.Acquire(key, b * bs, std::min(bs, size - b * bs)));
    if (found.back().owner) {
      ++misses_;
      mine.push_back(Claim{b, found.back().slot});
    } else {
      ++memory_hits_;
    }
  }
  // A small member read at random that fetches brings the rest of its aligned fetch unit along,
  // in the same request (its blocks not held or claimed already).
  uint64_t ahead = 0;
  if (by_block && !mine.empty()) {
    const uint64_t unit = std::max<uint64_t>(1, options_.block_fetch_bytes / bs);
    const uint64_t unit_end = (b1 / unit + 1) * unit;
    ClaimFree(key, size, b0 / unit * unit, b0, &mine);
    ClaimFree(key, size, b1 + 1, unit_end, &mine);
    std::sort(mine.begin(), mine.end(),
              [](const Claim& x, const Claim& y) { return x.block < y.block; });
    // While such fetches pay well, the next unit comes too, from a prefetch thread: the set is
    // being read whole (an epoch), so twice as many of its GETs run at a time.
    if (AheadUnitPays()) {
      Job job{object, {}};
      ClaimFree(key, size, unit_end, unit_end + unit, &job.claims);
      ahead = job.claims.size();
      if (!job.claims.empty()) Enqueue(std::move(job));
    }
  }
  // Read-ahead first, so its requests run while this read waits for its own. The window is
  // claimed in whole parts of an eighth of it (about eight requests in flight): FUSE hands a
  // sequential reader's bytes over 128 KiB at a time, and claiming the one block each read
  // uncovers would make every request one block long — a 20 ms round trip per 256 KiB.
  if (window > 0) {
    const uint64_t ahead_end = std::min(limit, offset + n + window);
    const uint64_t max_pending = memory_.capacity() / 2;
    const uint64_t part = std::max(std::min(options_.max_part, window / 8),
                                   std::min(options_.min_window, window / 2));
    const uint64_t part_blocks = std::max<uint64_t>(1, part / bs);
    const uint64_t frontier = memory_.CachedUntil(key, (b1 + 1) * bs, ahead_end, bs) / bs;
    // Less than a part uncovered: wait for more, unless the member ends there.
    const bool claim = frontier * bs < ahead_end &&
                       (ahead_end == limit || ahead_end - frontier * bs >= part);
    Job job{object, {}};
    for (uint64_t b = frontier; claim && b * bs < ahead_end; ++b) {
      if (memory_.Contains(key, b * bs)) continue;
      if (memory_.pending_bytes() + bs > max_pending) break;
      BlockCache::Lookup l = memory_.Acquire(key, b * bs, std::min(bs, size - b * bs));
      if (!l.owner) continue;
      if (!job.claims.empty() && (job.claims.back().block + 1 != b ||
                                  job.claims.size() >= part_blocks)) {
        Enqueue(std::move(job));
        job = Job{object, {}};
      }
      job.claims.push_back(Claim{b, l.slot});
    }
    if (!job.claims.empty()) Enqueue(std::move(job));
  }
  if (by_block) {
    if (mine.empty()) {
      block_judge_.Hit();
      ++block_hits_;
    } else {
      block_fetches_ += mine.size() + ahead;
      block_ahead_ += ahead;
      if (block_judge_.Fetched(mine.size() + ahead)) ++block_pauses_;
    }
  }
  Status fetched = FetchBlocks(*object, mine, false);
  if (!fetched.ok()) return fetched;
  size_t done = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    Bytes bytes = found[i].hit;
    if (!bytes) {
      PACKFS_ASSIGN_OR_RETURN(bytes, memory_.Wait(found[i].slot));
    }
    const uint64_t block_start = (b0 + i) * bs;
    const uint64_t from = std::max(offset, block_start) - block_start;
    const uint64_t len = std::min<uint64_t>(n - done, bytes->size() - from);
    if (from > bytes->size() || bytes->size() != std::min(bs, size - block_start)) {
      return Status::Corruption("remote cache holds a block of the wrong size");
    }
    out->push_back(bytes.Sub(from, len));
    done += len;
    // A sequential reader is done with a block whose end it read (but for reads arriving out
    // of order): it goes first when room is needed, before read-ahead not yet read.
    if (window > 0 && from + len == bytes->size()) memory_.Demote(key, block_start);
  }
  // Drop-behind: a sequential reader does not come back for blocks it has passed by more than
  // DropDistance() (re-reads come from the kernel's page cache). Dropping them returns their
  // parts to the spares at once, so read-ahead reuses warm memory instead of mapping new pages
  // (dear here, see BlockCache). The blocks dropped are the ones this read's advance (up to its
  // own length, and a little more for reads out of order) left behind that distance.
  // (Not behind a walk: its readers run out of order by whole members, and what they passed
  // is demoted above, so it goes first anyway. Dropping it 2 MiB behind, or 16 members, held a
  // walk over a 56 MB shard to 21-22 MB of memory instead of 56, but 8 readers under ASan beside
  // a loaded ctest fell further behind than that and fetched 2.4 MB of an 8.4 MB object again.)
  if (window > 0 && !walk) {
    const uint64_t behind = DropDistance() / bs;
    const uint64_t span = behind + (b1 - b0 + 1);
    const uint64_t hi = b0 > behind ? b0 - behind : 0;
    const uint64_t lo = std::max(member_begin / bs, hi > span ? hi - span : 0);
    for (uint64_t b = lo; b < hi; ++b) memory_.Drop(key, b * bs);
  }
  return Status::OK();
}

bool RemoteReader::IsMember(uint64_t size, uint64_t member_begin, uint64_t member_end,
                            uint64_t offset, size_t n) {
  return member_end > member_begin && member_end <= size && offset >= member_begin &&
         offset + n <= member_end;
}

bool RemoteReader::SmallMember(uint64_t size, uint64_t member_begin, uint64_t member_end,
                               uint64_t offset, size_t n) const {
  return IsMember(size, member_begin, member_end, offset, n) &&
         member_end - member_begin <= options_.whole_member_limit;
}

bool RemoteReader::DiskMayHold(const RangeFetcher& object, uint64_t offset,
                               uint64_t length) const {
  return disk_ && object.persistent() && length > 0 && offset + length <= object.size();
}

bool RemoteReader::ReadDiskCached(const RangeFetcher& object, uint64_t offset,
                                  std::span<uint8_t> buf) {
  if (!DiskMayHold(object, offset, buf.size())) return false;
  if (!disk_->Read(object.cache_key(), offset, buf)) return false;
  ++disk_hits_;
  return true;
}

std::shared_ptr<const UniqueFd> RemoteReader::MapCached(const RangeFetcher& object,
                                                        uint64_t offset, uint64_t length) {
  if (!DiskMayHold(object, offset, length)) return nullptr;
  std::shared_ptr<const UniqueFd> fd = disk_->MapVerified(object.cache_key(), offset, length);
  if (fd) ++disk_hits_;
  return fd;
}

std::shared_ptr<const UniqueFd> RemoteReader::HintCached(const RangeFetcher& object,
                                                         uint64_t offset, uint64_t length) {
  if (!DiskMayHold(object, offset, length)) return nullptr;
  return disk_->MapCovered(object.cache_key(), offset, length);
}

RemoteReaderStats RemoteReader::stats() const {
  RemoteReaderStats s;
  s.memory_hits = memory_hits_.load();
  s.misses = misses_.load();
  s.requests = requests_.load();
  s.bytes_fetched = bytes_fetched_.load();
  s.prefetched_bytes = prefetched_bytes_.load();
  s.fetching = memory_.pending_bytes();
  s.walk_reads = walk_reads_.load();
  s.walk_lent = walk_lent_.load();
  s.walk_lend_shared = walk_lend_shared_.load();
  s.disk_hits = disk_hits_.load();
  s.block_fetches = block_fetches_.load();
  s.block_hits = block_hits_.load();
  s.block_pauses = block_pauses_.load();
  s.block_ahead = block_ahead_.load();
  s.memory_bytes = memory_.bytes();
  s.memory_peak = memory_.peak_bytes();
  if (disk_) {
    s.disk_bytes = disk_->bytes();
    s.disk_damaged = disk_->damaged();
  }
  return s;
}

std::string RemoteReader::StatsJson() const {
  const RemoteReaderStats s = stats();
  return "\"remote_cache\": {\"memory_hits\": " + std::to_string(s.memory_hits) +
         ", \"misses\": " + std::to_string(s.misses) +
         ", \"requests\": " + std::to_string(s.requests) +
         ", \"bytes_fetched\": " + std::to_string(s.bytes_fetched) +
         ", \"prefetched_bytes\": " + std::to_string(s.prefetched_bytes) +
         ", \"walk_reads\": " + std::to_string(s.walk_reads) +
         ", \"walk_lent\": " + std::to_string(s.walk_lent) +
         ", \"walk_lend_shared\": " + std::to_string(s.walk_lend_shared) +
         ", \"disk_hits\": " + std::to_string(s.disk_hits) +
         ", \"block_fetches\": " + std::to_string(s.block_fetches) +
         ", \"block_hits\": " + std::to_string(s.block_hits) +
         ", \"block_pauses\": " + std::to_string(s.block_pauses) +
         ", \"block_ahead\": " + std::to_string(s.block_ahead) +
         ", \"memory_bytes\": " + std::to_string(s.memory_bytes) +
         ", \"memory_peak\": " + std::to_string(s.memory_peak) +
         ", \"memory_limit\": " + std::to_string(options_.memory_bytes) +
         ", \"disk_bytes\": " + std::to_string(s.disk_bytes) +
         ", \"disk_damaged\": " + std::to_string(s.disk_damaged) + "}";
}

}  // namespace packfs
