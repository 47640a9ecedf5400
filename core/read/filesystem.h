// Filesystem: the FUSE-free answers of a packfs mount — one read-only directory tree over one or
// more PackSets, addressed by inode numbers: lookup, getattr, readdir, read, xattrs, statfs, and
// the stats counters. The FUSE layer (fuse/lowlevel_ops) only translates requests to these calls;
// tests drive this class directly.
//
// Thread-safety: every method is safe for concurrent use from any thread (the catalog pools its
// SQLite connections per thread, shard reads are positional). A Filesystem owns its PackSets;
// leases returned by PrepareRead keep a shard fd open independently of the Filesystem's pool.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/crc_tracker.h"
#include "core/base/recent_errors.h"
#include "core/base/stats.h"
#include "core/base/status.h"
#include "core/catalog/catalog.h"
#include "core/read/dir_names.h"
#include "core/read/dir_stream.h"
#include "core/read/follower_claims.h"
#include "core/read/pack_set.h"
#include "core/read/payoff.h"
#include "core/read/recent_nodes.h"

namespace packfs {

struct FilesystemOptions {
  // What to do when a key is present in two sources.
  enum class OnCollision { kError, kFirst, kLast };
  OnCollision on_collision = OnCollision::kError;
  uint32_t uid = 0;    // owner reported for every node
  uint32_t gid = 0;
  uint32_t umask = 0;  // removed from every mode (files 0444 / zip mode & 0555, directories 0555)
  // Check the CRC-32 of zip members from the bytes reads serve (see "CRC-32 checks" below).
  bool verify_crc = true;
  // More members for the stats JSON (e.g. a remote reader's "\"remote_cache\": {...}"), called
  // on every read of the stats attribute; must be thread-safe. Empty: none.
  std::function<std::string()> extra_stats;
  // Start a thread that reads the shard extents of directories asked for with StreamDir into
  // the page cache ahead of their reads (core/read/dir_stream.h).
  bool stream_dirs = false;
  // The page cache's room for that (core/read/page_cache.h's MemoryRoom when empty).
  std::function<std::optional<uint64_t>()> stream_room;
  // Files up to this size in shards on a network file system get a hint at their first READ
  // when no lookup gave them one (read after a listing; see ReadHint). 0: never.
  uint64_t read_hint_max = 0;
};

// Attributes of one node, the core's `struct stat`.
struct Attr {
  uint64_t ino = 0;
  uint32_t mode = 0;   // type and permission bits (S_IFREG / S_IFDIR)
  uint32_t nlink = 1;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t blocks = 0;  // 512-byte units
  int64_t mtime = 0;    // seconds since the epoch (also used for atime and ctime)
  bool is_dir() const { return (mode & S_IFMT) == S_IFDIR; }
};

struct DirEntry {
  std::string name;
  Attr attr;
  uint64_t next_offset = 0;  // the readdir offset that continues after this entry
};

// Where the bytes of a read are: `length` bytes at `shard_offset` of the leased shard file.
// length 0 means end of file. Hold the lease until the bytes have been sent.
// With `copy_to_check` there is no lease: the bytes must pass through memory to have their CRC-32
// checked, so the read is to be served by ReadCopy instead.
struct ReadExtent {
  ShardLease lease;
  uint64_t shard_offset = 0;
  size_t length = 0;
  bool copy_to_check = false;
};

// The answer to one READ: `window` (its lease set, with a file descriptor) when the bytes go out
// zero-copy from a shard file, `pieces` (in order) when they go out from memory the shard holds
// them in anyway (a remote shard's cache), else `bytes` (in the caller's scratch buffer).
// None: end of file.
struct ReadReply {
  ReadExtent window;
  std::vector<Extent> pieces;
  std::span<const uint8_t> bytes;
  bool zero_copy() const { return window.lease != nullptr; }
};

struct FsTotals {
  uint64_t files = 0;
  uint64_t directories = 0;
  uint64_t bytes = 0;
  uint64_t shards = 0;
};

// CRC-32 checks: a zip member's bytes are checked against the CRC-32 its zip records, from the
// bytes reads serve anyway (core/base/crc_tracker.h): a read of the whole member at once (every
// small
// file) is judged before its reply; a member read in pieces is judged by the read that completes
// it, whatever their order, and that read fails. A damaged member fails that read and every
// later read with EIO (Corruption naming shard and member). Until a member has been judged good
// its reads are copied, not zero-copy; afterwards they are never hashed again. Tar members and
// synthesized or loose files record no CRC and are not checked.
class Filesystem {
 public:
  static constexpr const char* kXattrRef = "user.packfs.ref";
  static constexpr const char* kXattrShard = "user.packfs.shard";
  static constexpr const char* kXattrOffset = "user.packfs.offset";
  static constexpr const char* kXattrSize = "user.packfs.size";
  static constexpr const char* kXattrCrc32 = "user.packfs.crc32";
  static constexpr const char* kXattrStats = "user.packfs.stats";
  static constexpr const char* kXattrErrors = "user.packfs.errors";

  // Serves `sources` (at least one) as one tree. With several sources the trees are merged; a key
  // in two sources fails with InvalidArgument listing the collisions unless options say which
  // copy wins. A key that is a file in one source and a directory in another always fails.
  static Result<std::unique_ptr<Filesystem>> Open(std::vector<std::unique_ptr<PackSet>> sources,
                                                  const FilesystemOptions& options);
  ~Filesystem();
  Filesystem(const Filesystem&) = delete;
  Filesystem& operator=(const Filesystem&) = delete;

  // The child `name` of directory `parent`; nullopt when there is none (a cacheable negative
  // answer). NotFound when `parent` is unknown; an ENOTDIR error when it is a file.
  // When the child is a file of at most `prefetch_max` bytes in a local shard, its bytes (local
  // header included, and what follows up to `prefetch_span` from it; at least kPrefetchSpan when
  // the shards are on a network file system) start coming into the page
  // cache in the background, so that the read that usually follows a lookup finds them there.
  // On a network file system a lookup within kPrefetchSpan of the one before in the same shard
  // (a walk in shard order) hints nothing: the kernel's own read-ahead of the shard, which the
  // reads then stream, asks for fewer and larger ranges than overlapping hints would.
  // The span is left out while memory is too short to keep what it brings until its read (the
  // files it brought were found evicted at their own lookup: core/read/payoff.h).
  // Best effort: errors surface at the read.
  Result<std::optional<Attr>> Lookup(uint64_t parent, std::string_view name,
                                     uint64_t prefetch_max = 0, uint64_t prefetch_span = 0) const;
  Result<Attr> GetAttr(uint64_t ino) const;

  // Entries of directory `ino` starting at `offset` (0 = start; "." and ".." come first), at most
  // `max_entries`. An empty result means the end. Offsets are stable positions in name order.
  Status ReadDir(uint64_t ino, uint64_t offset, size_t max_entries,
                 std::vector<DirEntry>* out) const;

  // Resolves a read of file `ino` to its place in a shard, for a zero-copy reply: checks the
  // shard against the catalog and the member's local header before its first read. Reads past
  // EOF give length 0. Errors name the shard and the member. A member whose CRC-32 is still to be
  // checked gives copy_to_check instead (see CRC-32 checks).
  Result<ReadExtent> PrepareRead(uint64_t ino, uint64_t offset, size_t size) const;
  // Copying read (small requests): the bytes of [offset, offset + size) clipped to the file,
  // read into `scratch` (grown as needed; reuse it across calls). A member's first read fetches
  // its local header in the same pread, so a cold small file costs one disk request.
  // Fails with Corruption when these bytes complete a member whose CRC-32 does not match, or when
  // the member failed that check before.
  Result<std::span<const uint8_t>> ReadCopy(uint64_t ino, uint64_t offset, size_t size,
                                            std::vector<uint8_t>* scratch) const;
  // ReadCopy into `buf`: returns the byte count.
  Result<size_t> Read(uint64_t ino, uint64_t offset, std::span<uint8_t> buf) const;
  // One READ of file `ino` with its node resolved once (what the mount calls): a read of at
  // least `zero_copy_min` bytes whose member was checked before, in a shard with a file
  // descriptor, gets a window (PrepareRead); any other read gets its bytes copied (ReadCopy), a
  // shard opened for the window reused. `into`: where copied bytes should land when they can
  // (a FUSE io_uring entry's reply buffer): they are read there, not into `scratch`, unless the
  // read needs the member's local header with it (a member's first read, near its start).
  Result<ReadReply> ServeRead(uint64_t ino, uint64_t offset, size_t size, size_t zero_copy_min,
                              std::vector<uint8_t>* scratch,
                              std::span<uint8_t> into = {}) const;

  // A read that reaches the end of file `ino`, together with whole files that follow it in its
  // shard: its next siblings (same directory, same shard, in offset order, no gap over 64 KiB)
  // that `claims` wants and lets this read take, up to `window` bytes from the start of the read
  // and no further than the first sibling another read has taken, all read with one pread.
  // `followers` gets each one's inode and bytes (checked: local header and CRC-32); they stay
  // taken for the caller, and every file taken but not among them was given back. A read that
  // does not qualify (does not reach the end, starts more than `window` before it, the file is
  // not a member of a zip/tar shard, or its shard is on a network file system) is served like
  // ServeRead with `zero_copy_min` and `into`, without followers. A remote shard brings only the
  // followers its cache holds already (a walk's read-ahead fetched them): no request is made
  // for them. `claims.Wanted` is asked for candidate inodes in increasing order, before any
  // catalog query, so that a read whose neighbours are all unwanted costs nothing more than
  // ReadCopy.
  struct Follower {
    uint64_t ino = 0;
    std::span<const uint8_t> data;
  };
  // `in_dir(dir)` is asked at most once, with the file's directory (also stored in `*dir`), and
  // only when the shard could bring followers now: false means no followers this time. `reader`
  // names who reads (a FUSE request's thread id; 0: none): a remote shard lends followers only
  // to a walk one reader makes (RemoteReader::WalkAlone). kDirWalker: the walk through a
  // directory being read through (fuse/push.h); a remote shard then fetches its followers too,
  // in shard order, so that its own read-ahead brings them a few large requests at a time.
  Result<ReadReply> ReadThrough(
      uint64_t ino, uint64_t offset, size_t size, uint64_t window, size_t zero_copy_min,
      const std::function<bool(uint64_t dir)>& in_dir, FollowerClaims& claims, uint64_t reader,
      std::vector<uint8_t>* scratch, std::vector<Follower>* followers, uint64_t* dir,
      std::span<uint8_t> into = {}) const;
  // The `reader` of ReadThrough for a walk through a directory (see above).
  static constexpr uint64_t kDirWalker = ~uint64_t{0};
  // Entries of directory `dir` (0 when it is not one).
  uint64_t ChildCount(uint64_t dir) const;
  // Its entries' inode numbers, [first, first + count) in name order, whether its first file is
  // a member of a zip/tar shard file on a local file system (ReadThrough gives followers there)
  // or of a remote shard (a directory walk's ReadThrough fetches them there: kDirWalker), and,
  // only when it is either, its files' bytes (the rows are not read further otherwise; not on a
  // network file system). All zero when not a directory.
  struct ChildSpan {
    uint64_t first = 0;
    uint64_t count = 0;
    uint64_t bytes = 0;
    bool local_members = false;
    bool remote_members = false;
  };
  ChildSpan Children(uint64_t dir) const;
  // The path of directory `dir` in the tree, relative to its root ("" for the root); nullopt
  // when it is not a directory.
  std::optional<std::string> DirPath(uint64_t dir) const;
  // Directory `dir` is being read through (most of its files will be read): its files' extents
  // in shard files (local, or on a network file system; not remote sources) are read into the
  // page cache from now on, once per mount, when memory has room (core/read/dir_stream.h).
  // No-op without options.stream_dirs. Returns at once.
  void StreamDir(uint64_t dir) const;
  // Waits until the directories asked for so far are streamed (tests).
  void DrainStreams() const;
  // Bytes of its shard a lookup's prefetch hints at least (see Lookup): the kernel's default
  // read-ahead of a block device.
  static constexpr uint64_t kPrefetchSpan = 128 * 1024;
  // Most siblings a ReadThrough looks at past the file read.
  static constexpr uint64_t kMaxFollowers = 256;
  // Largest inode number this filesystem hands out (for per-inode tables).
  uint64_t max_ino() const;

  // Extended attributes. nullopt: no such attribute on this node (ENODATA).
  Result<std::optional<std::string>> GetXattr(uint64_t ino, std::string_view name) const;
  Result<std::vector<std::string>> ListXattr(uint64_t ino) const;

  // Full key of a node ("" for the root), for messages.
  std::string DescribeNode(uint64_t ino) const;

  const FsTotals& totals() const { return totals_; }
  Stats& stats() const { return stats_; }
  std::string StatsJson() const;
  size_t source_count() const { return sources_.size(); }
  // Warnings collected while opening the sources (refused members, stale catalogs replaced).
  const std::vector<std::string>& warnings() const { return warnings_; }

  // The last errors of this filesystem (the root's user.packfs.errors attribute): the warnings
  // of Open, then what NoteError records.
  const RecentErrors& errors() const { return errors_; }
  // Records a failure that concerned node `ino` (0: none in particular), naming its key and, for
  // a file, its shard. Whoever reports errors to the user calls this once per error.
  void NoteError(uint64_t ino, const std::string& message) const;

 private:
  void NoteShardUsed(uint32_t shard) const;
  // A file node as its own PackSet knows it.
  struct SourceNode {
    const PackSet* set = nullptr;
    Node node;
  };
  struct Origin {  // merged mode: the source node of merged file id i
    uint64_t id = 0;
    uint64_t parent = 0;
  };

  Filesystem() = default;
  Status BuildMerged(const FilesystemOptions& options);
  Attr MakeAttr(const Node& node) const;
  Result<Node> GetNode(uint64_t ino) const;
  Result<Node> GetFile(uint64_t ino) const;
  // GetFile, and whether the node came from a recent lookup (looked_up_).
  Result<Node> GetFileForRead(uint64_t ino, bool* looked_up) const;
  void Prefetch(const Node& file, uint64_t max_bytes, uint64_t span) const;  // see Lookup
  void HoldDirNames(uint64_t dir_id, uint32_t lookups) const;  // into dir_names_ if due
  // Whether a lookup's hint may take the span past the file, and what became of earlier ones
  // (hint_payoff_).
  bool JudgeHint(const Node& file, int fd, const SourceNode& src) const;
  // Whether ReadThrough may read followers in [from, to) of src's shard now, and what became of
  // the window read kWindowsAgo before (window_payoff_).
  bool WindowPays(const SourceNode& src, uint64_t from, uint64_t to) const;
  // True when reads of `file` are CRC-checked (a zip member, checks on).
  bool ChecksCrc(const Node& file) const;
  // PrepareRead, ServeRead and ReadCopy of a resolved node; CopyChecked's bytes are checked
  // against the member's CRC-32 (see above), through the shard `open` when given.
  Result<ReadExtent> PrepareResolved(const Node& file, const SourceNode& src, uint64_t offset,
                                     size_t size) const;
  Result<ReadReply> ServeResolved(const Node& file, const SourceNode& src, uint64_t offset,
                                  size_t size, size_t zero_copy_min,
                                  std::vector<uint8_t>* scratch,
                                  std::span<uint8_t> into = {}) const;
  Result<std::span<const uint8_t>> CopyChecked(const Node& file, const SourceNode& src,
                                               uint64_t offset, size_t size,
                                               std::vector<uint8_t>* scratch,
                                               const ShardLease* open = nullptr,
                                               std::span<uint8_t> into = {}) const;
  // Fails when the member was found damaged before.
  Status CrcNotBad(const Node& file, const SourceNode& src) const;
  // ServeResolved's read of bytes a shard lends (PackSet::Lend) into `out`: false when it lends
  // none (read them with CopyChecked, through `open`). Checked like CopyChecked's.
  Result<bool> LendChecked(const Node& file, const SourceNode& src, uint64_t offset, size_t size,
                           ShardLease* open, std::vector<Extent>* out) const;
  // Hands bytes a read serves to the CRC tracker; fails when they complete a damaged member.
  Status ObserveCrc(const Node& file, const SourceNode& src, uint64_t offset,
                    std::span<const uint8_t> bytes) const;
  // "reading 'KEY' from SHARD": what every read error of `file` is prefixed with.
  std::string Reading(const Node& file, const SourceNode& src) const;
  Status CrcFailure(const Node& file, const SourceNode& src, const std::string& why) const;
  SourceNode ToSource(const Node& merged) const;
  std::string KeyOrId(const Node& node) const;

  std::vector<std::unique_ptr<PackSet>> sources_;
  // The catalog served: the single source's own, or the in-memory merged one.
  const Catalog* catalog_ = nullptr;
  std::unique_ptr<Catalog> merged_;
  std::vector<uint32_t> shard_base_;   // merged mode: first global shard id of each source
  std::vector<Origin> origins_;        // merged mode: indexed by merged node id
  std::unique_ptr<std::atomic<bool>[]> shard_seen_;  // per global shard, for stats
  std::unique_ptr<CrcTracker> crc_;                  // null with verify_crc off
  size_t shard_count_ = 0;
  FilesystemOptions options_;
  int64_t dir_mtime_ = 0;  // newest shard mtime: what directories report
  FsTotals totals_;
  std::vector<std::string> warnings_;
  mutable Stats stats_;
  mutable RecentErrors errors_;
  // Files just looked up: the READ that follows finds its node here (GetFile).
  mutable RecentNodes looked_up_;
  mutable DirNames dir_names_;  // directories held in memory for lookups
  // Whether the lookup's span pays: paused while the files it brings are evicted first.
  mutable Payoff hint_payoff_;
  // Whether reading followers to push pays: paused while the shard bytes of the windows read
  // for them are evicted within kWindowsAgo windows (see WindowPays).
  static constexpr size_t kWindowsAgo = 128;
  struct PushedWindow {
    const PackSet* set;
    uint32_t shard;
    uint64_t from, to;
  };
  mutable Payoff window_payoff_;
  mutable std::mutex windows_mu_;
  mutable std::deque<PushedWindow> windows_;
  // Where the last lookup's member started, on network file systems (see Lookup).
  struct LastLookup {
    const PackSet* set = nullptr;
    uint32_t shard = 0;
    uint64_t from = 0;
  };
  // The first READ (offset 0) of a file of up to kPrefetchSpan / 2 in a shard on a network file
  // system, when its node did not come from a recent lookup (which hinted it): hints
  // kPrefetchSpan of the shard from it, as a lookup would, unless it lies within kPrefetchSpan of
  // the last READ so hinted in the same shard (a walk: the kernel's read-ahead streams it).
  // After a listing, 8 readers of a random third of a set of 18 KiB files on sshfs: 1.4-1.5k
  // instead of 1.0k files/s at 5 ms, 2.3-3.0k instead of 2.0-2.3k at 1 ms.
  void ReadHint(const Node& file, const SourceNode& src, uint64_t offset, bool looked_up) const;
  // True when `from` in src's shard is within kPrefetchSpan of *last (the last lookup's, or the
  // last READ hint's), which becomes it.
  bool NearLast(LastLookup* last, const SourceNode& src, uint64_t from) const;
  // Where a member's bytes in its shard start (its local header, for a zip member).
  static uint64_t MemberStart(const SourceNode& src);
  // POSIX_FADV_WILLNEED on the member from MemberStart, at least `span` bytes.
  void HintMember(int fd, const SourceNode& src, uint64_t span) const;
  mutable std::mutex last_lookup_mu_;
  mutable LastLookup last_lookup_;     // Prefetch's (under last_lookup_mu_)
  mutable LastLookup last_read_hint_;  // ReadHint's (under last_lookup_mu_)
  // The ranges of shard files holding `dir`'s files (DirStream's callback).
  std::vector<DirStream::Extent> StreamExtents(uint64_t dir) const;
  // Last: its thread calls StreamExtents, so it stops before anything else goes.
  std::unique_ptr<DirStream> stream_;
};

}  // namespace packfs
