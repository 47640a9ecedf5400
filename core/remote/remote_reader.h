// RemoteReader: how reads of remote shards become requests. Small members are fetched whole on
// their first read (one request; read at random, those up to a quarter of a block come with the
// rest of their block, below); large members are read in aligned blocks, and a sequential
// reader gets a read-ahead window that doubles with each read that continues the last one, fetched
// in parallel parts by background threads; random reads fetch the blocks they touch. Fetched bytes
// go to a bounded in-memory LRU (BlockCache) and, optionally, a DiskCache that outlives the mount.
//
// Small members read in shard order (a directory walk, cp -r, a loader walking its shards) are
// read as blocks instead, with a read-ahead window that runs across members (walk_window): a
// member that starts where one of the object's last 16 members read ended (or ends where one
// began; within 4 KiB), when two others of those 16 were such neighbours too, is served from
// aligned blocks, and what follows it in the shard is fetched ahead in parts, so a walk costs one
// request per part, not one per file. The read-ahead starts at walk_window (4 MiB) and doubles
// each time the stretch the walk covered doubles past it, within the budget the sequential
// readers share (below): over 20 ms a walk's rate is what it has in flight (one reader walking
// 53 MB behind 20 ms read 1.55x as fast as with 4 MiB throughout, 8 readers 1.58x; behind 50 ms
// 1.5x and 1.6x; behind 5 ms the same). The read-ahead stops at the end of the directory the
// walk started in (its members' run in the shard, which the caller names: run_end) until the
// walk reads past it, so a reader of one directory fetches that directory and no more (one
// reader or 8 walking one 18 MB directory of a 56 MB shard: 19.2 MB fetched, 34 MB without the
// bound), while a walk through directory after directory (cp -r of a tree) waits once, at its
// first directory's end, and then reads ahead across them. A walk that stops leaves at most its
// window fetched for nothing, and the window is never more than the stretch it walked. Several
// reader threads hand members over out of order, hence any of the last 16 on either side, and a
// member inside the stretch the walk has covered or within 1 MiB past it (a reader that fell
// behind, or got ahead) is part of it too, until more than 16 members in a row were nobody's
// neighbour. Random reads are almost never neighbours three times in sixteen.
//
// Small members read at random (a loader's shuffled epoch; files of up to a quarter of a block)
// are fetched with the rest of their aligned fetch unit (512 KiB, two blocks) rather than
// exactly: one request of 512 KiB costs about the round trip one of 20 KiB does, and brings the
// neighbours that share the unit, which stay in the memory cache for their own reads (no request
// then). That pays while their reads come
// before the cache lets the blocks go: a set that fits in it, read whole. Over a set far larger
// than the cache, or a sparse sample of one, a block's neighbours are rarely read in time, and
// each read would fetch 512 KiB for its 20 (BlockJudge below): once fewer than one small read at
// random in 16 finds its block in memory per block so fetched, such reads fetch exactly their
// member again for a pause (1,024 of them, doubling while it keeps not paying, up to 65,536).
// Measured (nginx behind 5 ms, 3,000 files of 4-32 KiB in one shard, 8 readers by path, fresh
// mount and dropped caches, 2 interleaved rounds, 2026-12-07): an epoch in a shuffled order
// 10.5-13.4k files/s against 6.7k fetching each exactly (180 GETs instead of 522-539), a random
// third of the set 4.3-4.5k against 1.4-1.6k (205 GETs instead of 737-751; 56 MB fetched to read
// 18.5, where the directory walks of fuse/push.h fetched 69 MB before). Those with one block as
// the unit; with two (3 interleaved rounds): the epoch 15.9-17.3k files/s against 12.7-14.5k,
// the random third 6.7-6.8k against 4.7-5.2k, 101-105 GETs instead of 174-205, the same bytes.
// While such reads pay well (a hit for every two blocks fetched: the set is read whole), each
// unit fetch also queues the next unit for a prefetch thread, so more of the set is on its way
// than the readers alone ask for (AheadUnitPays). Behind 20 ms with 16 connections: the random
// third 3.5k files/s against 2.8k, the epoch 8.7-8.9k against 7.6k; behind 5 ms, where the
// machine's two CPUs are the limit, within noise.
//
// Why these numbers: FUSE hands reads over in 128 KiB pieces, so over a 20 ms round trip a
// member read one piece per request crawls at ~6 MiB/s; one request for a small member (most
// dataset files are a few KiB to a few MiB) costs the same round trip as one for 128 KiB. Large
// members: 256 KiB blocks keep a random read's overfetch small; the window grows 1 MiB, 2, 4 ...
// up to 64 MiB (or 1/8 of the memory cache), claimed in whole parts of an eighth of it (1 to
// 8 MiB), so about eight requests are in flight ahead of a sequential reader — mountpoint-s3's
// prefetcher does the same.
//
// Thread-safety: Read is safe for concurrent use. The reader owns its prefetch threads (started
// by Create, joined by the destructor, which fails what is still queued); jobs hold their
// RangeFetcher, so a shard source may go away while its prefetch runs. Memory: BlockCache bytes
// (held, in flight and claimed; a block is a slice of the part it came in, and the part counts
// until its last block goes) stay within memory_bytes less a reserve; claims for read-ahead stop
// at half of that.
#pragma once

#include <atomic>
#include <condition_variable>
#include <chrono>
#include <cstdint>
#include <functional>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/remote/block_cache.h"
#include "core/remote/disk_cache.h"

namespace packfs {

// One immutable version of a remote object, as the reader fetches it. Thread-safe.
class RangeFetcher {
 public:
  virtual ~RangeFetcher() = default;
  // Identifies this version (URL and ETag, or URL and a catalog's size and fingerprint of the
  // shard): equal keys mean equal bytes, also across mounts when persistent().
  virtual const std::string& cache_key() const = 0;
  // Whether the key is strong enough for the disk cache (an ETag or a catalog identity).
  virtual bool persistent() const = 0;
  virtual uint64_t size() const = 0;
  // Exactly buf.size() bytes at offset (offset + buf.size() <= size()), or an error naming the
  // URL and the HTTP status. `progress` (optional) hears how many leading bytes of buf are final
  // while the transfer goes on (see HttpClient::GetRange).
  virtual Status Fetch(uint64_t offset, std::span<uint8_t> buf,
                       const std::function<void(size_t)>& progress = nullptr) const = 0;
};

struct RemoteReaderOptions {
  // Memory bound (--cache-size); at least 4 blocks. Cached bytes and parts in flight get all of
  // it but a reserve of min(1/8, 8 MiB) for the rest of the read path (FUSE worker buffers,
  // connections), so the daemon as a whole stays within it.
  uint64_t memory_bytes = uint64_t{512} << 20;
  // Members up to this size (local header included) are fetched whole on first read.
  uint64_t whole_member_limit = uint64_t{4} << 20;
  uint64_t block_size = 256 << 10;
  uint64_t min_window = uint64_t{1} << 20;
  uint64_t max_window = uint64_t{64} << 20;
  uint64_t max_part = uint64_t{8} << 20;
  // Bytes a large member must have been read in order before read-ahead starts (0: from its
  // first read at the start). Lets a reader of scattered pages (a catalog read in place) read
  // ahead for a long scan only.
  uint64_t sequential_before_window = 0;
  // How far from where the last read of a member ended a read may start and still continue it
  // (0: max(1 MiB, 4 blocks), for FUSE workers that deliver a reader's pieces out of order). A
  // reader that reads in order itself (SQLite) sets it small, so that scattered reads near each
  // other (shard rows, a directory's pages) do not pass for a scan.
  uint64_t sequential_slack = 0;
  // Read-ahead of a walk over small members (see above) as it starts; 0: every small member is
  // one request. It doubles as the walk goes on (RemoteReader::WalkWindow).
  uint64_t walk_window = uint64_t{4} << 20;
  // Small members up to this size (local header included) read at random are fetched by their
  // aligned blocks while that pays (see above); 0: always exactly.
  uint64_t block_member_limit = uint64_t{64} << 10;
  // What such a read fetches: the aligned unit of this many bytes around it (whole blocks).
  uint64_t block_fetch_bytes = uint64_t{512} << 10;
  int prefetch_threads = 8;
  // On-disk cache (--disk-cache DIR, --disk-cache-size); empty: none.
  std::string disk_dir;
  uint64_t disk_bytes = uint64_t{10} << 30;
};

// Counters since Create (a snapshot).
struct RemoteReaderStats {
  uint64_t memory_hits = 0;       // extents found in memory (or being fetched by another read)
  uint64_t misses = 0;            // extents that were not
  uint64_t requests = 0;          // GETs issued
  uint64_t bytes_fetched = 0;     // bytes those GETs brought
  uint64_t prefetched_bytes = 0;  // of which read ahead in the background
  uint64_t fetching = 0;          // bytes claimed whose fetch is not done yet (now)
  uint64_t walk_reads = 0;        // small-member reads served as part of a walk (see above)
  uint64_t walk_lent = 0;         // members lent from memory beside a read (LendCachedMember)
  uint64_t walk_lend_shared = 0;  // reads of a walk of several readers: nothing lent beside
  uint64_t disk_hits = 0;         // reads (and read-ahead blocks) served by the disk cache
  uint64_t block_fetches = 0;     // blocks fetched for a small member read at random (see above)
  uint64_t block_hits = 0;        // small members read at random whose blocks memory held
  uint64_t block_pauses = 0;      // times such fetches paused, not paying
  uint64_t block_ahead = 0;       // of block_fetches, those of the next unit, fetched ahead
  uint64_t memory_bytes = 0;      // now in the memory cache (held plus claimed)
  uint64_t memory_peak = 0;       // the most memory_bytes ever was (in-flight parts included)
  uint64_t disk_bytes = 0;        // now in the disk cache
  uint64_t disk_damaged = 0;      // disk cache extents found damaged (dropped, refetched)
};

class RemoteReader {
 public:
  // Fails with InvalidArgument on a memory bound under 4 blocks, IOError when the disk cache
  // directory cannot be created.
  static Result<std::shared_ptr<RemoteReader>> Create(const RemoteReaderOptions& options);
  ~RemoteReader();
  RemoteReader(const RemoteReader&) = delete;
  RemoteReader& operator=(const RemoteReader&) = delete;

  // Reads min(buf.size(), size - offset) bytes of `object` at offset. When the read belongs to a
  // member [member_begin, member_end) (member_end > member_begin), the member's size chooses
  // whole-member or block reads; otherwise (member_end == 0) blocks, without read-ahead.
  // `run_end`: where the run of members of the member's directory ends in the object (0:
  // unknown); a walk that starts in that run reads ahead no further until it goes past it.
  Result<size_t> Read(const std::shared_ptr<const RangeFetcher>& object, uint64_t member_begin,
                      uint64_t member_end, uint64_t offset, std::span<uint8_t> buf,
                      uint64_t run_end = 0);

  // Read without the copy: appends the bytes as extents (slices of cached blocks and parts, or
  // of a member fetched whole) to `out`, in order, and returns their count. The extents keep
  // their memory (and its count toward the cache) until dropped: hold them only for a reply.
  // nullopt (nothing done) for a persistent object with a disk cache: Read it.
  Result<std::optional<size_t>> Lend(const std::shared_ptr<const RangeFetcher>& object,
                                     uint64_t member_begin, uint64_t member_end, uint64_t offset,
                                     size_t length, std::vector<Extent>* out,
                                     uint64_t run_end = 0);

  // The bytes of member [member_begin, member_end) of `object` when every block holding them is
  // in memory now (a walk's read-ahead fetched them): appended to `out` as extents (no copy),
  // true. False, nothing appended, when any is not: nothing is fetched or waited for. A member
  // lent counts as read by the object's walk (see Walking): the read after it is the walk's
  // next, not a stray. Ask WalkAlone first.
  bool LendCachedMember(const RangeFetcher& object, uint64_t member_begin, uint64_t member_end,
                        std::vector<Extent>* out);
  // Whether members from `begin` on of the object whose cache_key() is `key` are worth lending
  // beside a read of `reader` (a thread id): a walk is under way there (`begin` lies in or just
  // past its stretch) and the last kAlone reads that asked came from `reader`. Several readers
  // walking one shard read the members after a read themselves before these could be handed on
  // (fuse/push.h): false then, counted in walk_lend_shared, and `*shared` (when given) set.
  bool WalkAlone(const std::string& key, uint64_t begin, uint64_t reader,
                 bool* shared = nullptr);

  // Fills `buf` with `object`'s bytes at `offset` when the disk cache holds them all (checked,
  // counted as a disk hit): true. False when there is no disk cache, the object is not one it
  // keeps, or any byte is missing; nothing is fetched.
  bool ReadDiskCached(const RangeFetcher& object, uint64_t offset, std::span<uint8_t> buf);

  // The disk cache's open file holding `object`'s bytes [offset, offset + length) at their own
  // offsets, when that range is cached and already verified (counted as a disk hit); else null.
  // Lets a reply splice cached bytes instead of copying them through this reader.
  std::shared_ptr<const UniqueFd> MapCached(const RangeFetcher& object, uint64_t offset,
                                            uint64_t length);
  // The same file when the range is cached, verified or not (not counted): for read-ahead hints
  // only (ShardSource::HintFile).
  std::shared_ptr<const UniqueFd> HintCached(const RangeFetcher& object, uint64_t offset,
                                             uint64_t length);

  // Whether fetching small members read at random by their blocks pays (see the top): judged
  // every kJudge blocks so fetched from the reads that found their blocks in memory meanwhile.
  class BlockJudge {
   public:
    static constexpr uint64_t kJudge = 128;
    static constexpr uint64_t kFirstPause = 1024;
    static constexpr uint64_t kMaxPause = 64 * 1024;
    // A small member read at random that might fetch by the block: false while paused (counts
    // one read of the pause).
    bool Take();
    // `n` blocks fetched for such reads; true when this judged and started a pause.
    bool Fetched(uint64_t n);
    // Such a read found its blocks in memory.
    void Hit();
    // Whether they pay well enough to fetch the next unit ahead too: until the first verdict,
    // and while the last found a hit for every two blocks fetched.
    bool PaysWell();

   private:
    std::mutex mu_;
    uint64_t fetched_ = 0, hits_ = 0, pause_left_ = 0, next_pause_ = kFirstPause;
    bool pays_well_ = true;
  };

  RemoteReaderStats stats() const;
  const RemoteReaderOptions& options() const { return options_; }
  // The disk cache, or null (tests damage its files).
  DiskCache* disk() const { return disk_.get(); }
  // The "stats" JSON members of this reader: "\"remote_cache\": {...}".
  std::string StatsJson() const;

 private:
  explicit RemoteReader(const RemoteReaderOptions& options);
  using Bytes = BlockCache::Bytes;
  struct Claim {
    uint64_t block;
    std::shared_ptr<BlockCache::Slot> slot;
  };
  // Whether [offset, offset + n) lies within the member [member_begin, member_end) of an object
  // of `size` bytes; and whether that member is small enough to be fetched whole (a walk's).
  static bool IsMember(uint64_t size, uint64_t member_begin, uint64_t member_end,
                       uint64_t offset, size_t n);
  bool SmallMember(uint64_t size, uint64_t member_begin, uint64_t member_end, uint64_t offset,
                   size_t n) const;
  // Read and Lend past the disk cache: n bytes (within the object) from memory, fetched as
  // needed, as extents appended to `out`.
  Status LendFromMemory(const std::shared_ptr<const RangeFetcher>& object, uint64_t member_begin,
                        uint64_t member_end, uint64_t offset, size_t n, uint64_t run_end,
                        std::vector<Extent>* out);
  Result<Bytes> GetMember(const std::shared_ptr<const RangeFetcher>& object, uint64_t begin,
                          uint64_t length);
  // Whether the disk cache may hold bytes [offset, offset + length) of `object`: there is one,
  // the object is kept there (persistent) and the range is non-empty and within it.
  bool DiskMayHold(const RangeFetcher& object, uint64_t offset, uint64_t length) const;
  // Appends to `out` a claim for each block in [from, to) of block key `key` (an object of
  // `size` bytes) that memory neither holds nor has coming.
  void ClaimFree(const std::string& key, uint64_t size, uint64_t from, uint64_t to,
                 std::vector<Claim>* out);
  // Fetches claimed blocks (ascending; disk first, then one GET per contiguous run of misses);
  // every claim is fulfilled or failed.
  Status FetchBlocks(const RangeFetcher& object, const std::vector<Claim>& claims,
                     bool prefetch);
  // How far out of order a sequential reader's reads may arrive (see Window).
  uint64_t Slack() const;
  // How far behind a sequential reader its blocks are dropped (see Read).
  uint64_t DropDistance() const;
  // The largest window of one of `streams` sequential readers (streams_mu_ held).
  uint64_t WindowCapLocked(uint64_t streams) const;
  // The read-ahead window for a read of member `begin` at [offset, offset + n), updating the
  // member's sequential state; 0 for a random read.
  uint64_t Window(const std::string& key, uint64_t begin, uint64_t offset, size_t n);
  // Whether the small member [begin, end) of object `key` is read as part of a walk over the
  // object's members in order (see the top), updating the object's walk state. A member's later
  // reads (FUSE hands one over in several pieces) get the answer its first read got. `*reach`
  // gets where the walk's read-ahead stops (0: the object's end): the end of the run (run_end)
  // the walk started in, until a member past it is read.
  bool Walking(const std::string& key, uint64_t begin, uint64_t end, uint64_t run_end,
               uint64_t* reach);
  // The read-ahead of the walk over object `key`: walk_window at first, doubled each time the
  // stretch it has covered doubles past it, within the read-ahead budget that the sequential
  // streams and the walks of the last second share (see Window).
  uint64_t WalkWindow(const std::string& key);
  // Records the member [begin, end) of object `key` as read by its walk (LendCachedMember).
  void NoteWalked(const std::string& key, uint64_t begin, uint64_t end);
  // Whether small member [begin, end) of block key `key`, read at random, is read by its blocks:
  // small enough and memory holds them all (or they are coming) already, or block fetches pay.
  bool ByBlock(const std::string& key, uint64_t begin, uint64_t end);
  // Whether a small member's unit fetch brings the next unit too: block fetches pay well, the
  // memory cache holds at least 16 units and fetches in flight leave room for one more.
  bool AheadUnitPays();
  struct Job {
    std::shared_ptr<const RangeFetcher> object;
    std::vector<Claim> claims;
  };
  void Enqueue(Job job);
  void Worker();

  RemoteReaderOptions options_;
  BlockCache memory_;
  std::unique_ptr<DiskCache> disk_;

  struct Stream {
    uint64_t next = 0;
    uint64_t window = 0;
    uint64_t run = 0;  // bytes read in order so far
    uint64_t last_use = 0;
    std::chrono::steady_clock::time_point last_time;
  };
  std::mutex streams_mu_;
  std::unordered_map<std::string, Stream> streams_;
  uint64_t stream_clock_ = 0;
  // Sequential streams read within the last second, recounted every 100 ms: they share the
  // read-ahead budget (half the memory cache).
  uint64_t active_streams_ = 1;
  std::chrono::steady_clock::time_point counted_at_;

  // Per object: the last small members read, whether each was a neighbour of one read before it
  // and the answer each got (guarded by streams_mu_).
  struct Walk {
    static constexpr size_t kRecent = 16;
    static constexpr uint64_t kAlone = 8;
    struct Member {
      uint64_t begin = 0, end = 0;
      bool neighbour = false;
      bool walked = false;
    };
    uint64_t last_use = 0;
    std::chrono::steady_clock::time_point last_time;
    uint64_t walk_begin = 0, walk_end = 0;  // the stretch of the object the current walk read
    uint64_t reach = 0;  // where its read-ahead stops (0: the object's end; see Walking)
    size_t strays = 0;  // members in a row that were no recent member's neighbour
    // Several readers? The reads that asked WalkAlone so far, the reader of the last one, and
    // how many had asked when the reader last changed.
    uint64_t asked = 0;
    uint64_t last_reader = 0;
    uint64_t reader_since = 0;
    Member recent[kRecent];
    size_t recent_at = 0;
    size_t recent_n = 0;
  };
  std::unordered_map<std::string, Walk> walks_;
  // Walks read within the last second, recounted every 100 ms (with streams_mu_).
  uint64_t active_walks_ = 1;
  std::chrono::steady_clock::time_point walks_counted_at_;

  std::mutex jobs_mu_;
  std::condition_variable jobs_cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;

  std::atomic<uint64_t> memory_hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> bytes_fetched_{0};
  std::atomic<uint64_t> prefetched_bytes_{0};
  std::atomic<uint64_t> walk_reads_{0};
  std::atomic<uint64_t> walk_lent_{0};
  std::atomic<uint64_t> walk_lend_shared_{0};
  std::atomic<uint64_t> disk_hits_{0};
  BlockJudge block_judge_;
  std::atomic<uint64_t> block_fetches_{0};
  std::atomic<uint64_t> block_hits_{0};
  std::atomic<uint64_t> block_pauses_{0};
  std::atomic<uint64_t> block_ahead_{0};
};

}  // namespace packfs
