// Catalog: the SQLite index of a pack set (.packfs-catalog.sqlite), written once, read lazily.
//
// Schema (version in table meta, key 'schema_version'):
//   meta(key TEXT PRIMARY KEY, value TEXT)
//   shards(id INTEGER PRIMARY KEY, name TEXT, size, mtime_ns, fingerprint, member_count)
//   nodes(id INTEGER PRIMARY KEY, parent, name, type, first_child, child_count,
//         shard, local_header_offset, data_offset, size, crc32, mode, mtime)
//   fences(parent, name, id) WITHOUT ROWID  -- every 16th child of each directory, for lookups
//   problems(shard, message)       -- members refused while indexing, reported at open
// Numbers are stored compactly (data_offset relative to the local header, mode and mtime relative
// to meta 'file_mode' and 'mtime_base'; see catalog_schema.h): about 45 bytes per member.
// Version 1 (no fences, a full (parent, name) index, numbers as is) is still read.
// Node ids are assigned breadth-first with the children of each directory in byte order of their
// names, so a directory's children hold the consecutive ids [first_child, first_child+child_count):
// listing is a primary-key range scan and a readdir offset is an index into that range. The root is
// id 1 (FUSE_ROOT_ID). Ids are stable for a given catalog file.
// Shard names are file names inside the pack directory (no absolute paths), so a copied folder keeps
// a valid catalog.
//
// Thread-safety: a Catalog is safe for concurrent use. Each calling thread borrows a read-only
// connection with its prepared statements from an internal pool (grown on demand, never shrunk).
// When no new connection can be opened (the catalog file was deleted or replaced under a live
// mount), a borrower waits up to kBorrowWait for one of the open ones instead of failing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/format/zip_reader.h"

namespace packfs {

inline constexpr int kCatalogSchemaVersion = 2;  // written; 1 and 2 are read
inline constexpr const char* kCatalogFileName = ".packfs-catalog.sqlite";
inline constexpr uint64_t kRootId = 1;

struct ShardInfo {
  uint32_t id = 0;        // index in the catalog's shard list (0-based, name order)
  std::string name;       // file name inside the pack directory, e.g. "pack-0003.zip"
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t fingerprint = 0;
  uint64_t member_count = 0;
};

enum class NodeType : uint8_t { kDirectory = 0, kFile = 1 };

struct Node {
  uint64_t id = 0;
  uint64_t parent = 0;     // the root's parent is itself
  std::string name;        // last path component; "" for the root
  NodeType type = NodeType::kDirectory;
  // Directories.
  uint64_t first_child = 0;
  uint64_t child_count = 0;
  // Files.
  uint32_t shard = 0;
  uint64_t local_header_offset = 0;
  uint64_t data_offset = 0;
  uint64_t size = 0;
  uint32_t crc32 = 0;
  uint32_t mode = 0;       // st_mode from the zip (0: none recorded)
  int64_t mtime = 0;       // seconds since the epoch

  bool is_dir() const { return type == NodeType::kDirectory; }
};

struct CatalogTotals {
  uint64_t files = 0;
  uint64_t directories = 0;  // including the root
  uint64_t bytes = 0;        // sum of file sizes
};

// One shard's indexed content, the input of a catalog.
struct ShardContent {
  ShardInfo info;   // id is assigned by BuildNodes from the order of the vector
  ShardIndex index;
};

// The flattened tree of a pack set, ready to be written or served from memory.
struct CatalogData {
  std::vector<ShardInfo> shards;
  std::vector<Node> nodes;            // nodes[i].id == i + 1; nodes[0] is the root
  std::vector<std::string> problems;  // carried from the shard indexes
  // Shard file name of each problem (parallel to `problems`; may be shorter when unknown). Lets a
  // refresh carry a reused shard's problems without re-reading it.
  std::vector<std::string> problem_shards;
  CatalogTotals totals;
};

// The zip member a file node was indexed from (for re-indexing from a catalog without reading
// the shard).
ShardMember MemberFromNode(const std::string& key, const Node& file);

// Builds the tree of all members of `shards` (ids assigned as described above).
// Fails with InvalidArgument/Corruption naming both places when a key is in two shards or when a
// key is both a file and a directory prefix of another key ("a" and "a/b").
Result<CatalogData> BuildNodes(std::vector<ShardContent> shards);

// Writes `data` to `path` atomically: a temporary file beside it, fsync, then rename.
Status WriteCatalog(const std::string& path, const CatalogData& data);

namespace sql {
class Db;
class Stmt;
}  // namespace sql

namespace catalog_internal {
// Internal to the catalog (see catalog_schema.h). How a node's numbers are stored. Schema 2 keeps the common values small: data_offset less
// local_header_offset (a few bytes past it), a file's mode XOR the set's most common file mode
// (0 for most files: no bytes), mtime less the set's median mtime, crc32 as a signed 32-bit
// value (at most 4 bytes). Schema 1 stored every number as is (the zero codec).
struct NodeCodec {
  bool data_offset_relative = false;
  uint32_t file_mode = 0;  // meta 'file_mode'
  int64_t mtime_base = 0;  // meta 'mtime_base'
};
}  // namespace catalog_internal

class Catalog {
 public:
  // Opens an existing catalog file read-only. Checks the schema version; a damaged or foreign
  // file fails with Corruption naming the path and suggesting `mkpack catalog DIR`.
  // With `lazy_shards`, shard rows are read on first use as for OpenUri (see Shard()).
  static Result<std::unique_ptr<Catalog>> Open(const std::string& path, bool lazy_shards = false);
  // Opens a catalog that SQLite reaches through `uri` (a VFS of its own, e.g. RemoteDb's) and
  // whose file is `size` bytes; `label` names it in messages. The same checks as Open. The
  // catalog keeps `keep_alive` (what the VFS reads from) until its connections are closed, and
  // adds what `explain` says (e.g. the failed request) to the message of a failed query.
  static Result<std::unique_ptr<Catalog>> OpenUri(std::string uri, std::string label,
                                                  uint64_t size,
                                                  std::shared_ptr<const void> keep_alive = nullptr,
                                                  std::function<std::string()> explain = nullptr);
  // A catalog served from an in-memory SQLite database (no file), e.g. for --catalog none.
  static Result<std::unique_ptr<Catalog>> FromData(const CatalogData& data);

  ~Catalog();
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  // Shards are ids 0..shard_count()-1, in name order.
  uint32_t shard_count() const { return shard_count_; }
  // Shard `id`'s row; the pointer stays valid while the catalog lives. A catalog read in place
  // (OpenUri) loads its shard rows in blocks of kShardBlock on first use, so opening it costs the
  // same for 10 or 100,000 shards; Open loads every row at open unless asked not to. Fails with Corruption for
  // an id out of range or a block whose ids are not consecutive, or with the read's error.
  Result<const ShardInfo*> Shard(uint32_t id) const;
  // Every shard row in id order (loading the blocks not yet loaded).
  Result<std::span<const ShardInfo>> Shards() const;
  // The newest shard mtime in seconds (what directories report): meta 'newest_shard_mtime_ns'
  // where the writer stored it, else the maximum over the rows.
  Result<int64_t> NewestShardMtime() const;
  static constexpr uint32_t kShardBlock = 256;
  // Most shards a catalog may list (ids 0 .. kMaxShards - 1).
  static constexpr uint32_t kMaxShards = uint32_t{1} << 22;
  const CatalogTotals& totals() const { return totals_; }
  const std::vector<std::string>& problems() const { return problems_; }
  // Shard file name of each problem, parallel to problems() ("" when unknown).
  const std::vector<std::string>& problem_shards() const { return problem_shards_; }
  const std::string& path() const { return path_; }

  // The node with this id, or nullopt.
  Result<std::optional<Node>> Get(uint64_t id) const;
  // The child `name` of directory `parent`, or nullopt.
  Result<std::optional<Node>> Lookup(uint64_t parent, std::string_view name) const;
  // Children of directory `dir` at positions [offset, offset + limit) in name order.
  Status List(const Node& dir, uint64_t offset, size_t limit, std::vector<Node>* out) const;
  // The nodes with ids in [first, end), in id order (appended to `out`). A directory's children
  // have consecutive ids in name order, so the nodes after a file are its next siblings.
  Status Range(uint64_t first, uint64_t end, std::vector<Node>* out) const;
  // The same, one node at a time, until `fn` returns false (no further rows are read).
  Status ForRange(uint64_t first, uint64_t end, const std::function<bool(Node&&)>& fn) const;
  // The node of a key ("a/b/c.jpg"; "" is the root), or nullopt.
  Result<std::optional<Node>> Find(std::string_view key) const;
  // Full key of a node (walks parents; directories' keys are remembered, so a file's key
  // usually costs no query).
  Result<std::string> KeyOf(const Node& node) const;
  // Calls fn(key, node) for every file, in id order. Stops early and returns fn's error if any.
  Status ForEachFile(const std::function<Status(const std::string& key, const Node&)>& fn) const;

 private:
  class Connection;
  class Lease;
  Catalog() = default;
  static constexpr std::chrono::seconds kBorrowWait{5};
  Result<Lease> Borrow() const;
  Result<std::unique_ptr<Connection>> Connect() const;
  // Prepares a connection's statements for version_.
  Status Prepare(Connection& conn) const;
  // Reads meta, the shard count and problems; every shard row unless `lazy_shards`.
  Status LoadHeader(bool lazy_shards);

  std::string path_;  // for messages ("<memory>" for FromData)
  std::string uri_;   // what each pooled connection opens
  bool uri_is_memdb_ = false;
  std::optional<uint64_t> uri_size_;  // OpenUri: the file's size, for the truncation check
  std::string catalog_id_;  // meta 'catalog_id': detects a file replaced while open
  int version_ = 0;         // schema version (0 until LoadHeader has read it)
  catalog_internal::NodeCodec codec_;
  uint64_t fence_stride_ = 0;  // schema 2: children per fence
  // shard_count_ rows; block b (ids [b*kShardBlock, (b+1)*kShardBlock)) is valid once
  // shard_loaded_[b] is set (release, after the rows are written under shard_mu_).
  uint32_t shard_count_ = 0;
  mutable std::vector<ShardInfo> shards_;
  std::unique_ptr<std::atomic<bool>[]> shard_loaded_;
  mutable std::mutex shard_mu_;
  bool lazy_shards_ = false;
  std::optional<int64_t> newest_shard_mtime_ns_;  // meta, when written
  // Loads the blocks not loaded yet in [first_block, end_block), through `db` when given (else
  // a borrowed connection).
  Status LoadShardBlocks(uint32_t first_block, uint32_t end_block, sql::Db* db = nullptr) const;
  CatalogTotals totals_;
  std::vector<std::string> problems_;
  std::vector<std::string> problem_shards_;
  // Keeps an in-memory database alive while the catalog exists (FromData only).
  std::unique_ptr<Connection> keeper_;
  // OpenUri: what its VFS reads from, and what explains a failed read (may be null).
  std::shared_ptr<const void> keep_alive_;
  std::function<std::string()> explain_;
  // `st` with explain_'s detail when it is an I/O error.
  Status Explained(Status st) const;
  // s.Step(), its error Explained.
  Result<bool> Step(sql::Stmt& s) const;
  mutable std::mutex pool_mu_;
  mutable std::condition_variable pool_cv_;  // a connection came back to pool_
  mutable std::vector<std::unique_ptr<Connection>> pool_;
  mutable size_t connections_ = 0;  // opened by Borrow, pooled or lent (guarded by pool_mu_)
  // Keys of the directories of nodes KeyOf named, by id; emptied when it reaches kDirKeysMax
  // (a first read checks its member's key, so an epoch asks for every file's key once).
  static constexpr size_t kDirKeysMax = 4096;
  mutable std::mutex dir_keys_mu_;
  mutable std::unordered_map<uint64_t, std::string> dir_keys_;
};

}  // namespace packfs
