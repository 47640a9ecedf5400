// PackSet: an opened pack directory — its catalog (from .packfs-catalog.sqlite or indexed at open)
// and its shards, opened lazily under an fd limit. This is the FUSE-free filesystem core that
// `packfs` and `mkpack` both serve from.
//
// Thread-safety: all const methods are safe for concurrent use. Shard files are opened on first
// use through a bounded pool (least recently used fds are closed and reopened later; a reader's
// lease keeps its fd open until the read ends). Before a shard's first use its size and mtime are
// compared with the catalog (a mismatch falls back to comparing the central-directory
// fingerprint); before a member's first read its local header is checked once. A mismatch fails
// that read with EIO and a message naming shard and member, never another member's bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/catalog/catalog.h"
#include "core/read/shard_pool.h"

namespace packfs {

struct PackSetOptions {
  enum class CatalogUse {
    kAuto,     // use the catalog file when present and fresh; otherwise index the shards in memory
               // (a stale or damaged catalog file is then reported in warnings())
    kRequire,  // fail when the catalog is missing or stale (message says how to refresh)
    kNone,     // ignore any catalog file; index the shards at open, in parallel
  };
  CatalogUse catalog_use = CatalogUse::kAuto;
  std::string catalog_path;  // default: <dir>/.packfs-catalog.sqlite
  // Prefix of shard paths in blob references ("media" gives zip://k::media/pack-0000.zip).
  // Default: the pack directory's base name (the dataset root is its parent).
  std::string ref_prefix;
  int index_threads = 0;      // 0: one per core
  size_t max_open_shards = 0; // 0: derived from RLIMIT_NOFILE
  // A set of at most this many shards is checked against its catalog at open: the directory is
  // listed (a shard added or removed makes the catalog stale) and every shard stat'ed (one rewritten
  // in place does too; under kAuto a stale catalog is replaced by indexing in memory). A larger set
  // is not listed when the directory has not changed since the catalog was written into it (its
  // mtime is not after the catalog's ctime, so no entry was added, removed or renamed since), and
  // each shard's size and mtime are checked when it is first opened (a changed one fails its reads
  // with EIO, saying how to refresh): a mount of 100,000 shards must not list and stat them all
  // before it answers, and could not index them in memory anyway.
  size_t check_shards_at_open = 4096;
};


class PackSet {
 public:
  // Opens the pack directory `dir`. Warnings (members refused while indexing, a stale catalog that
  // was replaced by in-memory indexing) are collected in warnings(); hard errors (no shards, a key
  // in two shards, a broken shard) fail the open with a message naming the file.
  static Result<std::unique_ptr<PackSet>> Open(const std::string& dir, const PackSetOptions& opts);
  // The same, serving only the listed shard files of `dir` (e.g. `packfs a.tar b.tar MNT`) rather
  // than every shard it holds; empty means all. A catalog file is used only when it lists exactly
  // these shards (otherwise they are indexed in memory).
  static Result<std::unique_ptr<PackSet>> Open(const std::string& dir, const PackSetOptions& opts,
                                               const std::vector<std::string>& shard_files);

  // A set over shards that are not zip/tar files of a directory: every file node of `data` is a
  // whole source (data_offset 0, no member header to check), shard i opened through `opener`
  // when first read and kept in the bounded pool. Used for a dataset's loose files and for
  // synthesized files (LeRobot episode videos). `label` names the set in messages;
  // `file_paths[i]` / `ref_paths[i]` are what xattrs and messages call shard i.
  static Result<std::unique_ptr<PackSet>> FromSources(std::string label, const CatalogData& data,
                                                      std::vector<std::string> file_paths,
                                                      std::vector<std::string> ref_paths,
                                                      ShardOpener opener);

  // A zip/tar set whose shards are not files of a local directory (remote objects): `catalog`
  // describes them, shard i is opened through `opener` (which validates what it opens) and named
  // `file_of(name)` (e.g. its URL) / `ref_prefix + "/" + name` ("media/pack-0000.zip"), made
  // when needed. Unlike FromSources, members keep their once-per-member local header check.
  // `label` names the set in messages; `refresh_hint` ends messages about a changed shard;
  // `local_copies`: the shards opened may keep local copies (local_copies()).
  static Result<std::unique_ptr<PackSet>> FromCatalog(
      std::string label, std::unique_ptr<Catalog> catalog,
      std::function<std::string(const std::string& name)> file_of, std::string ref_prefix,
      ShardOpener opener, std::string refresh_hint, bool local_copies);

  // The bytes of file `file` as a source of their own (offset 0 = its first data byte; name =
  // `key`). Reads go through this set's pool and once-per-member header check; the set must
  // outlive the returned source.
  std::shared_ptr<const ShardSource> MemberSource(const std::string& key, const Node& file) const;

  const std::string& dir() const { return dir_; }
  // True for FromSources sets: files are whole sources, with no blob reference or CRC of their own.
  bool raw_members() const { return raw_members_; }
  // Whether the shards live on a network file system (see OnNetworkFilesystem).
  bool on_network_fs() const { return on_network_fs_; }
  // Whether the shards are files of a directory (Open), local or on a network file system, as
  // opposed to remote objects (FromCatalog) or whole files (FromSources).
  bool shard_files() const { return shard_files_; }
  // Whether shards that are not files may have local copies (a remote set's disk cache) that
  // ShardSource::HintFile gives.
  bool local_copies() const { return local_copies_; }
  const Catalog& catalog() const { return *catalog_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  bool using_catalog_file() const { return using_catalog_file_; }

  // "media/pack-0003.zip": the shard path relative to the dataset root, as used in references.
  std::string ShardRefPath(uint32_t shard) const;
  // Absolute-or-relative filesystem path of the shard file (dir + "/" + name).
  std::string ShardFilePath(uint32_t shard) const;
  // Blob reference of a file node.
  std::string Ref(const std::string& key, const Node& file) const;

  // Shard files open right now (bounded by the fd limit).
  size_t open_shard_count() const;

  // Opens (or reuses) the shard, validating it against the catalog on first use.
  Result<ShardLease> OpenShard(uint32_t shard) const;

  // Reads file bytes [offset, offset + buf.size()) clipped to the member's size; returns the count.
  // Checks the member's local header before its first read.
  Result<size_t> Read(const Node& file, uint64_t offset, std::span<uint8_t> buf) const;

  // The copying read of the mount: file bytes [offset, offset + size) clipped to the member's
  // size, read into `scratch` (grown as needed, reusable across calls); returns where in it they
  // are. A member's first read that starts within kHeadedReadGap of its local header fetches the
  // header and the data with one pread and checks the header from those bytes. `open`: the
  // file's shard, when the caller has it open already (else it is opened here). `into`: where
  // to read them instead of `scratch` when it holds them, no header is read with them and the
  // kernel's copy there is not the slow case (see PageMatched in pack_set.cc).
  Result<std::span<const uint8_t>> ReadCopy(const Node& file, uint64_t offset, size_t size,
                                            std::vector<uint8_t>* scratch,
                                            const ShardLease* open = nullptr,
                                            std::span<uint8_t> into = {}) const;
  static constexpr uint64_t kHeadedReadGap = 64 * 1024;
  // ReadCopy without the copy, where the shard holds its bytes in memory anyway (a remote shard
  // read through its cache: ShardSource::LendMemberAt): appends extents covering file bytes
  // [offset, offset + size) clipped to the member to `out` and returns their count. nullopt when
  // the shard cannot lend them, or the member's local header is not checked yet (its first read
  // checks it: ReadCopy). `open`: the file's shard, opened here when empty (and left open for
  // the ReadCopy that follows a nullopt).
  Result<std::optional<size_t>> Lend(const Node& file, uint64_t offset, size_t size,
                                     ShardLease* open, std::vector<Extent>* out) const;

  // A read that reaches the end of `file` ([offset, file.size)) together with whole members that
  // follow it in the same shard (`followers`, ascending offsets, each starting at or after the end
  // of the one before): one pread from the file's local header (or from `offset` when the header
  // was checked before) to the end of the last follower. Returns the file's bytes; `out[i]` is the
  // data of followers[i], or empty when it cannot be served from these bytes (its local header does
  // not match the catalog, or its CRC-32 does not: that member's own read reports why). Fails
  // like ReadCopy for the file itself. Zip/tar shards: local fd-backed ones, and, with followers,
  // others (remote), which bring only the followers they hold already (in a disk cache or in
  // memory) and leave the rest empty (ReadThroughCached), or, with `fetch` (a directory walk),
  // read them too, in order, each as its own read would. InvalidArgument otherwise: callers
  // use ReadCopy.
  Result<std::span<const uint8_t>> ReadThrough(const Node& file, uint64_t offset,
                                               std::span<const Node> followers,
                                               std::vector<uint8_t>* scratch,
                                               std::vector<std::span<const uint8_t>>* out,
                                               bool fetch = false) const;

  // Whether ReadThrough may bring followers of `file` to `reader` now: a local shard file, or a
  // shard held elsewhere that lends them (ShardSource::MayLendFollowers). Cheap: no catalog query.
  bool MayBringFollowers(const Node& file, uint64_t reader) const;

  // Checks the local header of `file` once (cached per node id). Returns OK when valid.
  Status CheckMember(const Node& file) const;

  ~PackSet();

 private:
  PackSet() = default;
  // ReadThrough of a shard held elsewhere (a remote one): the file read as ReadCopy would, and
  // the followers whose bytes `src` holds now, in its disk cache (ReadCachedRange) or in memory
  // (LendCachedMember), in order up to the first it does not: no request beyond the file's own.
  // With `fetch`, each follower is read as the file is (ReadMemberAt), in order up to the first
  // that fails. `buf` holds the shard from `begin`.
  Result<std::span<const uint8_t>> ReadThroughCached(
      const Node& file, uint64_t offset, std::span<const Node> followers, const ShardSource& src,
      uint64_t begin, std::span<uint8_t> buf, std::vector<std::span<const uint8_t>>* out,
      bool fetch) const;
  // Where the run of members of `file`'s directory ends in its shard: the end of the bytes of the
  // directory's last entry when that is a file in the same shard (at or past `file`'s end), else
  // 0 (unknown). Read once per directory from the catalog, then remembered. Lets a remote walk
  // read ahead to its directory's end and no further (ShardSource::ReadMemberAt).
  uint64_t RunEnd(const Node& file) const;
  // Stale: a short read of `file`'s member data at shard offset `at` (the shard shrank?).
  Status ShortRead(const Node& file, uint64_t at) const;
  // Whether members of `shard` carry a CRC-32 (zip: yes; tar: no).
  bool HasCrc(uint32_t shard) const;
  // Whether a follower whose bytes are `data` (as `seen` holds them, local header included) may
  // be pushed: its local header matches the catalog (checked once) and, with `has_crc`, its
  // CRC-32 does. Followers are checked here as they may never be asked for again.
  bool FollowerIntact(const Node& follower, const ShardSource& seen,
                      std::span<const uint8_t> data, bool has_crc) const;
  // Checks the local header of `file` as `src` (the shard, or bytes already read from it) shows
  // it, and remembers success.
  Status CheckMemberAgainst(const Node& file, const ShardSource& src) const;
  struct Impl;
  std::string dir_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<Impl> impl_;  // after catalog_: its shard pool refers to the catalog's shards
  std::vector<std::string> warnings_;
  bool using_catalog_file_ = false;
  bool raw_members_ = false;  // FromSources: no member headers
  bool on_network_fs_ = false;
  bool shard_files_ = false;
  bool local_copies_ = false;
};

// Whether `path` lies on a file system where every request crosses a network or a user-space
// server (NFS, SMB/CIFS, Ceph, 9p, AFS, Lustre, GlusterFS, FUSE such as sshfs), so that a request
// costs a round trip and reading ahead is cheap by comparison. False when unknown.
bool OnNetworkFilesystem(const std::string& path);

// Lists the shard files of a pack directory in index order ("pack-0000.zip", ...); a directory
// without zip shards lists its tar shards ("*.tar", name order) instead. Other files are ignored.
// Fails when `dir` is not a readable directory.
Result<std::vector<std::string>> ListShardFiles(const std::string& dir);
// The base name of directory `dir` made absolute ("media" for "./media/"; "/" for "/"): how a pack
// directory names its shards in messages and blob references ("media/pack-0003.zip").
std::string PackDirBaseName(const std::string& dir);
// Whether `dir` holds any shard file ListShardFiles would list; stops at the first one, so that
// telling a pack directory from a loose one does not list 100,000 shards (PackSet::Open does).
Result<bool> HoldsShardFiles(const std::string& dir);

// Indexes every shard of `dir` (in parallel) into CatalogData. Shards whose name, size and mtime
// match `reuse` (a previous catalog, may be null) are taken from it without reading them.
struct IndexReport {
  uint64_t shards_indexed = 0;
  uint64_t shards_reused = 0;
};
Result<CatalogData> IndexPackDir(const std::string& dir, const Catalog* reuse, int threads,
                                 IndexReport* report);
// The same for the listed shard files of `dir` only (file names inside it).
Result<CatalogData> IndexShardFiles(const std::string& dir, const std::vector<std::string>& names,
                                    const Catalog* reuse, int threads, IndexReport* report);

}  // namespace packfs

namespace packfs {

// A shard a catalog lists that its pack directory no longer holds.
struct MissingShard {
  std::string name;      // file name, "pack-0003.zip"
  uint64_t members = 0;  // members the catalog lists in it
};
// The shards a catalog lists (`shards`, Catalog::Shards()) that are not among `names` (the
// directory's shard files), in catalog order.
std::vector<MissingShard> FindMissingShards(std::span<const ShardInfo> shards,
                                            const std::vector<std::string>& names);
// "media/pack-0001.zip (12 members)", or "2 shards: media/pack-0001.zip (12 members), ..." for
// messages; `prefix` is the pack directory's name in messages ("media").
std::string DescribeMissingShards(const std::vector<MissingShard>& missing,
                                  const std::string& prefix);

// `mkpack catalog DIR`: builds or refreshes <dir>/.packfs-catalog.sqlite. Shards unchanged since
// the existing catalog (same name, size and mtime) are reused without reading them; new or changed
// shards are indexed. Written atomically (temp file + rename).
// A shard the existing catalog lists but the directory no longer holds would take its members out
// of the catalog without a word, so the refresh refuses (Stale, naming each such shard and how
// many members it held; nothing is written) unless `forget_missing`, when they are dropped and
// listed in `forgotten`. A catalog that cannot be read is rebuilt from the shards.
struct CatalogBuildResult {
  IndexReport report;
  CatalogTotals totals;
  uint64_t shard_count = 0;
  std::vector<std::string> problems;  // members refused while indexing
  std::vector<MissingShard> forgotten;  // with forget_missing: the shards dropped
};
Result<CatalogBuildResult> RefreshCatalog(const std::string& dir, int threads,
                                          bool forget_missing = false);

// `mkpack catalog --check DIR`: compares the catalog with the shards (names, sizes, and every
// shard's central-directory fingerprint) and writes nothing. Each difference is one message
// naming the shard; an empty list means the catalog is current.
Result<std::vector<std::string>> CheckCatalog(const std::string& dir);

}  // namespace packfs
