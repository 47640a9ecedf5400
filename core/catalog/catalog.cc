// Catalog reading: a pool of read-only SQLite connections over one catalog file (or one shared
// in-memory database for FromData), each with its prepared statements.
//
// Opening loads only meta, shards and problems, so it costs the same for 10 or 10M members; the
// node table is read on demand, one primary-key or fence probe per request. A catalog read in
// place (OpenUri) does not load the shard rows either: only their count (the id b-tree's last
// row), then each block of kShardBlock rows on its first use.
// Connections open the file with immutable=1: catalogs are never modified in place (writers
// publish a new file by rename), so SQLite may skip its per-query file locks and hot-journal
// checks. A connection opened after the file was replaced by a rename would see another catalog
// whose ids mean different nodes; each new connection therefore compares meta 'catalog_id' with
// the one loaded at open and refuses to serve a different file.
#include "core/catalog/catalog.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <random>
#include <unordered_map>

#include "core/catalog/catalog_schema.h"
#include "core/catalog/sqlite_util.h"

namespace packfs {

using catalog_internal::kNodeColumns;
using catalog_internal::ReadNode;

class Catalog::Connection {
 public:
  explicit Connection(sql::Db db) : db(std::move(db)) {}
  // Statements are declared after db so they are finalized before it closes.
  sql::Db db;
  sql::Stmt get;
  sql::Stmt lookup;  // schema 1: by the (parent, name) index; 2: the scan after a fence
  sql::Stmt fence;   // schema 2: the last fence at or before a name
  sql::Stmt list;
};

class Catalog::Lease {
 public:
  Lease(const Catalog* owner, std::unique_ptr<Connection> conn)
      : owner_(owner), conn_(std::move(conn)) {}
  Lease(Lease&& o) noexcept = default;
  Lease& operator=(Lease&&) = delete;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() {
    if (!conn_) return;
    {
      std::lock_guard<std::mutex> lock(owner_->pool_mu_);
      owner_->pool_.push_back(std::move(conn_));
    }
    owner_->pool_cv_.notify_one();
  }
  Connection* operator->() const { return conn_.get(); }
  Connection& operator*() const { return *conn_; }

 private:
  const Catalog* owner_;
  std::unique_ptr<Connection> conn_;
};

namespace {

// Per-connection page cache. Lookups touch a handful of index pages near the root, which stay
// cached; a few MB per connection keeps a mount with 10+ worker threads well under 64 MB of
// private memory. Pages are read through mmap: in a 1M-member benchmark this cut a random
// lookup from ~11 to ~4 us (no pread copy per page miss), and mapped pages are shared,
// reclaimable page cache (RssFile), growing only with the part of the catalog actually used.
constexpr const char* kReaderPragmas =
    "PRAGMA cache_size=-4096; PRAGMA query_only=1; PRAGMA mmap_size=268435456;";

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status NotACatalog(const std::string& path, const std::string& detail) {
  return Status::Corruption(path + ": not a usable packfs catalog (" + detail +
                            "); run `mkpack catalog " + DirOf(path) + "` to rebuild it");
}

}  // namespace

Catalog::~Catalog() {
  // Pooled connections first, the keeper (which holds a memdb alive) last.
  pool_.clear();
  keeper_.reset();
  keep_alive_.reset();
}

Status Catalog::Explained(Status st) const {
  if (st.ok() || !explain_ || st.code() != Code::kIOError) return st;
  const std::string detail = explain_();
  if (detail.empty()) return st;
  return Status::IOError(st.message() + " (" + detail + ")", st.err());
}

Result<std::unique_ptr<Catalog::Connection>> Catalog::Connect() const {
  int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
  PACKFS_ASSIGN_OR_RETURN(sql::Db db, sql::Db::Open(uri_, flags, path_));
  auto conn = std::make_unique<Connection>(std::move(db));
  PACKFS_RETURN_IF_ERROR(conn->db.Exec(kReaderPragmas));
  if (version_ != 0) PACKFS_RETURN_IF_ERROR(Prepare(*conn));
  if (!catalog_id_.empty()) {
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt s,
                            conn->db.Prepare("SELECT value FROM meta WHERE key='catalog_id'"));
    PACKFS_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row || s.Text(0) != catalog_id_) {
      return Status::Stale(path_ +
                           " was replaced by another catalog while in use; restart (remount) to "
                           "use the new one");
    }
  }
  return conn;
}

Status Catalog::Prepare(Connection& conn) const {
  const std::string cols = kNodeColumns;
  PACKFS_ASSIGN_OR_RETURN(conn.get, conn.db.Prepare("SELECT " + cols + " FROM nodes WHERE id=?"));
  if (version_ == 1) {
    PACKFS_ASSIGN_OR_RETURN(conn.lookup, conn.db.Prepare("SELECT " + cols +
                                                         " FROM nodes WHERE parent=? AND name=?"));
  } else {
    PACKFS_ASSIGN_OR_RETURN(conn.fence,
                            conn.db.Prepare("SELECT id FROM fences WHERE parent=?1 AND name<=?2 "
                                            "ORDER BY name DESC LIMIT 1"));
    PACKFS_ASSIGN_OR_RETURN(conn.lookup, conn.db.Prepare("SELECT " + cols +
                                                         " FROM nodes WHERE id>=?1 AND id<?2 AND "
                                                         "parent=?3 AND name=?4 LIMIT 1"));
  }
  PACKFS_ASSIGN_OR_RETURN(conn.list, conn.db.Prepare("SELECT " + cols +
                                                     " FROM nodes WHERE id>=? AND id<? ORDER BY id"));
  return Status::OK();
}

Result<Catalog::Lease> Catalog::Borrow() const {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      std::unique_ptr<Connection> c = std::move(pool_.back());
      pool_.pop_back();
      return Lease(this, std::move(c));
    }
  }
  Result<std::unique_ptr<Connection>> c = Connect();
  std::unique_lock<std::mutex> lock(pool_mu_);
  if (c.ok()) {
    ++connections_;
    return Lease(this, std::move(c).value());
  }
  // The file may be gone while the mount's connections still read it: wait for one of them.
  if (connections_ > 0 &&
      pool_cv_.wait_for(lock, kBorrowWait, [this] { return !pool_.empty(); })) {
    std::unique_ptr<Connection> pooled = std::move(pool_.back());
    pool_.pop_back();
    return Lease(this, std::move(pooled));
  }
  lock.unlock();
  return Explained(c.status());
}

Result<bool> Catalog::Step(sql::Stmt& s) const {
  Result<bool> row = s.Step();
  if (!row.ok()) return Explained(row.status());
  return row;
}

Status Catalog::LoadHeader(bool lazy_shards) {
  PACKFS_ASSIGN_OR_RETURN(Lease lease, Borrow());
  sql::Db& db = lease->db;
  std::map<std::string, std::string, std::less<>> meta;
  {
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt s, db.Prepare("SELECT key, value FROM meta"));
    while (true) {
      PACKFS_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      meta.emplace(std::string(s.Text(0)), std::string(s.Text(1)));
    }
  }
  auto get = [&](const char* k) -> std::string {
    auto it = meta.find(k);
    return it == meta.end() ? std::string() : it->second;
  };
  if (get("format") != "packfs-catalog") return Status::Corruption("meta has no packfs format");
  const std::string version = get("schema_version");
  if (version != "1" && version != "2") {
    return Status::Corruption("schema version '" + version + "', this packfs reads versions 1 " +
                              "and " + std::to_string(kCatalogSchemaVersion));
  }
  const int schema = version == "1" ? 1 : 2;
  uint64_t nodes = 0;
  try {
    totals_.files = std::stoull(get("files"));
    totals_.directories = std::stoull(get("directories"));
    totals_.bytes = std::stoull(get("bytes"));
    nodes = std::stoull(get("nodes"));
    if (schema == 2) {
      codec_.data_offset_relative = true;
      codec_.file_mode = static_cast<uint32_t>(std::stoul(get("file_mode")));
      codec_.mtime_base = std::stoll(get("mtime_base"));
      fence_stride_ = std::stoull(get("fence_stride"));
    }
  } catch (const std::exception&) {
    return Status::Corruption("meta totals or codec are missing or not numbers");
  }
  if (schema == 2 && (fence_stride_ == 0 || fence_stride_ > 4096)) {
    return Status::Corruption("meta fence_stride " + std::to_string(fence_stride_) +
                              " is out of range");
  }
  version_ = schema;
  PACKFS_RETURN_IF_ERROR(Prepare(*lease));
  if (nodes != totals_.files + totals_.directories || nodes == 0) {
    return Status::Corruption("meta node count disagrees with its totals");
  }
  {
    // An INTEGER PRIMARY KEY's max is the b-tree's rightmost path: a few pages, however many rows.
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt n, db.Prepare("SELECT max(id) FROM shards"));
    PACKFS_ASSIGN_OR_RETURN(bool any, n.Step());
    if (any && !n.IsNull(0)) {
      // The shard list is a vector indexed by id: a hostile id must not size it (4 billion ids
      // were a 12 GB allocation). 2^22 shards is 1 PB in shards of 256 MiB.
      if (n.Int(0) < 0 || n.Int(0) >= int64_t{kMaxShards}) {
        return Status::Corruption("shard id " + std::to_string(n.Int(0)) +
                                  " is out of range (a catalog lists at most " +
                                  std::to_string(kMaxShards) + " shards)");
      }
      shard_count_ = static_cast<uint32_t>(n.Int(0)) + 1;
    }
  }
  shards_.resize(shard_count_);
  const uint32_t blocks = (shard_count_ + kShardBlock - 1) / kShardBlock;
  shard_loaded_ = std::make_unique<std::atomic<bool>[]>(blocks);
  for (uint32_t b = 0; b < blocks; ++b) shard_loaded_[b].store(false, std::memory_order_relaxed);
  if (!get("newest_shard_mtime_ns").empty()) {
    try {
      newest_shard_mtime_ns_ = std::stoll(get("newest_shard_mtime_ns"));
    } catch (const std::exception&) {
      return Status::Corruption("meta newest_shard_mtime_ns is not a number");
    }
  }
  lazy_shards_ = lazy_shards;
  if (!lazy_shards) PACKFS_RETURN_IF_ERROR(LoadShardBlocks(0, blocks, &db));
  {
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt s,
                            db.Prepare("SELECT shard, message FROM problems ORDER BY rowid"));
    while (true) {
      PACKFS_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      problem_shards_.emplace_back(s.Text(0));
      problems_.emplace_back(s.Text(1));
    }
  }
  // Cheap consistency probes (a few pages each): the last node row is where the totals say, and
  // the file holds every page its header declares (a truncated copy fails here, not mid-mount).
  {
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt s, db.Prepare("SELECT max(id) FROM nodes"));
    PACKFS_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row || static_cast<uint64_t>(s.Int(0)) != nodes) {
      return Status::Corruption("the node table does not end at node " + std::to_string(nodes));
    }
  }
  if (!uri_is_memdb_) {
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt pc, db.Prepare("PRAGMA page_count"));
    PACKFS_ASSIGN_OR_RETURN(bool r1, pc.Step());
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt ps, db.Prepare("PRAGMA page_size"));
    PACKFS_ASSIGN_OR_RETURN(bool r2, ps.Step());
    struct stat st;
    uint64_t size = 0;
    if (uri_size_) {
      size = *uri_size_;
    } else if (::stat(path_.c_str(), &st) == 0) {
      size = static_cast<uint64_t>(st.st_size);
    }
    if (!r1 || !r2 ||
        size < static_cast<uint64_t>(pc.Int(0)) * static_cast<uint64_t>(ps.Int(0))) {
      return Status::Corruption("the file is shorter than its header says (truncated copy?)");
    }
  }
  catalog_id_ = get("catalog_id");
  return Status::OK();
}

Status Catalog::LoadShardBlocks(uint32_t first_block, uint32_t end_block, sql::Db* db) const {
  std::lock_guard<std::mutex> lock(shard_mu_);
  while (first_block < end_block && shard_loaded_[first_block].load(std::memory_order_acquire)) {
    ++first_block;
  }
  while (end_block > first_block && shard_loaded_[end_block - 1].load(std::memory_order_acquire)) {
    --end_block;
  }
  if (first_block >= end_block) return Status::OK();
  const uint64_t first = uint64_t{first_block} * kShardBlock;
  const uint64_t end = std::min<uint64_t>(uint64_t{end_block} * kShardBlock, shard_count_);
  std::optional<Lease> lease;
  if (db == nullptr) {
    PACKFS_ASSIGN_OR_RETURN(Lease borrowed, Borrow());
    lease.emplace(std::move(borrowed));
    db = &(*lease)->db;
  }
  PACKFS_ASSIGN_OR_RETURN(
      sql::Stmt s,
      db->Prepare("SELECT id, name, size, mtime_ns, fingerprint, member_count FROM shards "
                  "WHERE id>=? AND id<? ORDER BY id"));
  s.BindInt(1, static_cast<int64_t>(first));
  s.BindInt(2, static_cast<int64_t>(end));
  uint64_t next = first;
  while (true) {
    PACKFS_ASSIGN_OR_RETURN(bool row, Step(s));
    if (!row) break;
    if (s.Int(0) != static_cast<int64_t>(next)) break;
    // A block loaded before (inside the range) may be in use: its rows are never written again.
    if (shard_loaded_[next / kShardBlock].load(std::memory_order_acquire)) {
      ++next;
      continue;
    }
    ShardInfo& info = shards_[next++];
    info.id = static_cast<uint32_t>(s.Int(0));
    info.name = std::string(s.Text(1));
    info.size = static_cast<uint64_t>(s.Int(2));
    info.mtime_ns = s.Int(3);
    info.fingerprint = static_cast<uint64_t>(s.Int(4));
    info.member_count = static_cast<uint64_t>(s.Int(5));
  }
  if (next != end) {
    return Status::Corruption(path_ + ": shard ids are not 0.." + std::to_string(shard_count_ - 1) +
                              " (no shard " + std::to_string(next) +
                              "); rebuild it with `mkpack catalog`");
  }
  for (uint32_t b = first_block; b < end_block; ++b) {
    shard_loaded_[b].store(true, std::memory_order_release);
  }
  return Status::OK();
}

Result<const ShardInfo*> Catalog::Shard(uint32_t id) const {
  if (id >= shard_count_) {
    return Status::Corruption(path_ + ": no shard " + std::to_string(id) + " (the catalog lists " +
                              std::to_string(shard_count_) + ")");
  }
  const uint32_t block = id / kShardBlock;
  if (!shard_loaded_[block].load(std::memory_order_acquire)) {
    PACKFS_RETURN_IF_ERROR(LoadShardBlocks(block, block + 1));
  }
  return &shards_[id];
}

Result<std::span<const ShardInfo>> Catalog::Shards() const {
  PACKFS_RETURN_IF_ERROR(LoadShardBlocks(0, (shard_count_ + kShardBlock - 1) / kShardBlock));
  return std::span<const ShardInfo>(shards_);
}

Result<int64_t> Catalog::NewestShardMtime() const {
  if (newest_shard_mtime_ns_) return *newest_shard_mtime_ns_ / 1000000000;
  int64_t newest = 0;
  if (!lazy_shards_) {
    for (const ShardInfo& s : shards_) newest = std::max(newest, s.mtime_ns);
    return newest / 1000000000;
  }
  // Rows loaded on demand (read in place) and a catalog written before the meta key: one
  // aggregate query rather than every row.
  PACKFS_ASSIGN_OR_RETURN(Lease lease, Borrow());
  PACKFS_ASSIGN_OR_RETURN(sql::Stmt s, lease->db.Prepare("SELECT max(mtime_ns) FROM shards"));
  PACKFS_ASSIGN_OR_RETURN(bool row, Step(s));
  if (row && !s.IsNull(0)) newest = s.Int(0);
  return newest / 1000000000;
}

Result<std::unique_ptr<Catalog>> Catalog::Open(const std::string& path, bool lazy_shards) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT) {
      return Status::NotFound("no catalog at " + path + "; run `mkpack catalog " + DirOf(path) +
                              "` to build it");
    }
    return Status::IOError("cannot open the catalog " + path + ": " + ErrnoText(e), e);
  }
  if (!S_ISREG(st.st_mode)) return NotACatalog(path, "not a regular file");
  std::unique_ptr<Catalog> cat(new Catalog());
  cat->path_ = path;
  cat->uri_ = catalog_internal::FileUri(path) + "?mode=ro&immutable=1";
  Status st2 = cat->LoadHeader(lazy_shards);
  if (!st2.ok()) {
    if (st2.code() == Code::kIOError && (st2.err() == EACCES || st2.err() == ENOMEM)) return st2;
    // SQLite's own text already starts with the path; keep only its detail.
    std::string detail = st2.message();
    if (detail.rfind(path + ": ", 0) == 0) detail = detail.substr(path.size() + 2);
    return NotACatalog(path, detail);
  }
  return cat;
}

Result<std::unique_ptr<Catalog>> Catalog::OpenUri(std::string uri, std::string label,
                                                  uint64_t size,
                                                  std::shared_ptr<const void> keep_alive,
                                                  std::function<std::string()> explain) {
  std::unique_ptr<Catalog> cat(new Catalog());
  cat->path_ = std::move(label);
  cat->uri_ = std::move(uri);
  cat->uri_size_ = size;
  cat->keep_alive_ = std::move(keep_alive);
  cat->explain_ = std::move(explain);
  Status st = cat->Explained(cat->LoadHeader(/*lazy_shards=*/true));
  if (!st.ok()) {
    if (st.code() == Code::kIOError) return st;
    return Status::Corruption(cat->path_ + ": not a usable packfs catalog (" + st.message() +
                              "); rebuild it with `mkpack catalog`");
  }
  return cat;
}

Result<std::unique_ptr<Catalog>> Catalog::FromData(const CatalogData& data) {
  std::unique_ptr<Catalog> cat(new Catalog());
  std::random_device rd;
  // Names starting with '/' are shared by all connections of this process (memdb VFS); the
  // random part keeps two in-memory catalogs apart.
  cat->uri_ = "file:/packfs-" + std::to_string(::getpid()) + "-" + std::to_string(rd()) + "-" +
              std::to_string(rd()) + "?vfs=memdb";
  cat->uri_is_memdb_ = true;
  cat->path_ = "<in-memory catalog>";
  PACKFS_ASSIGN_OR_RETURN(
      sql::Db keeper,
      sql::Db::Open(cat->uri_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                    cat->path_));
  // memdb caps a database at 1 GiB by default; a large set's catalog may exceed it.
  sqlite3_int64 limit = int64_t{1} << 40;
  sqlite3_file_control(keeper.get(), "main", SQLITE_FCNTL_SIZE_LIMIT, &limit);
  PACKFS_RETURN_IF_ERROR(catalog_internal::FillDatabase(keeper, data, /*exclusive=*/false));
  PACKFS_RETURN_IF_ERROR(keeper.Exec("PRAGMA cache_size=-256;"));  // its cache is never read again
  cat->keeper_ = std::make_unique<Connection>(std::move(keeper));
  PACKFS_RETURN_IF_ERROR(cat->LoadHeader(/*lazy_shards=*/false));
  return cat;
}

Result<std::optional<Node>> Catalog::Get(uint64_t id) const {
  if (id == 0) return std::optional<Node>();
  PACKFS_ASSIGN_OR_RETURN(Lease lease, Borrow());
  sql::Stmt& s = lease->get;
  sql::ResetOnExit reset(s);
  s.BindInt(1, static_cast<int64_t>(id));
  PACKFS_ASSIGN_OR_RETURN(bool row, Step(s));
  if (!row) return std::optional<Node>();
  return std::optional<Node>(ReadNode(s, codec_));
}

Result<std::optional<Node>> Catalog::Lookup(uint64_t parent, std::string_view name) const {
  PACKFS_ASSIGN_OR_RETURN(Lease lease, Borrow());
  sql::Stmt& s = lease->lookup;
  sql::ResetOnExit reset(s);
  if (version_ == 1) {
    s.BindInt(1, static_cast<int64_t>(parent));
    s.BindText(2, name);
  } else {
    // The name, if present, is among the fence_stride_ children from the last fence at or
    // before it (they have consecutive ids in name order).
    sql::Stmt& f = lease->fence;
    sql::ResetOnExit reset_fence(f);
    f.BindInt(1, static_cast<int64_t>(parent));
    f.BindText(2, name);
    PACKFS_ASSIGN_OR_RETURN(bool fenced, Step(f));
    if (!fenced) return std::optional<Node>();
    const int64_t first = f.Int(0);
    s.BindInt(1, first);
    s.BindInt(2, first + static_cast<int64_t>(fence_stride_));
    s.BindInt(3, static_cast<int64_t>(parent));
    s.BindText(4, name);
  }
  PACKFS_ASSIGN_OR_RETURN(bool row, Step(s));
  if (!row) return std::optional<Node>();
  return std::optional<Node>(ReadNode(s, codec_));
}

Status Catalog::List(const Node& dir, uint64_t offset, size_t limit, std::vector<Node>* out) const {
  if (!dir.is_dir() || offset >= dir.child_count || limit == 0) return Status::OK();
  uint64_t end = dir.child_count - offset < limit ? dir.child_count : offset + limit;
  return Range(dir.first_child + offset, dir.first_child + end, out);
}

Status Catalog::Range(uint64_t first, uint64_t end, std::vector<Node>* out) const {
  return ForRange(first, end, [out](Node&& n) {
    out->push_back(std::move(n));
    return true;
  });
}

Status Catalog::ForRange(uint64_t first, uint64_t end,
                         const std::function<bool(Node&&)>& fn) const {
  if (first >= end) return Status::OK();
  PACKFS_ASSIGN_OR_RETURN(Lease lease, Borrow());
  sql::Stmt& s = lease->list;
  sql::ResetOnExit reset(s);
  s.BindInt(1, static_cast<int64_t>(first));
  s.BindInt(2, static_cast<int64_t>(end));
  while (true) {
    PACKFS_ASSIGN_OR_RETURN(bool row, Step(s));
    if (!row || !fn(ReadNode(s, codec_))) break;
  }
  return Status::OK();
}

Result<std::optional<Node>> Catalog::Find(std::string_view key) const {
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, Get(kRootId));
  if (key.empty()) return node;
  // Every component must be non-empty: "b/" or "a//b" name nothing (keys never have them).
  size_t start = 0;
  while (node) {
    size_t slash = key.find('/', start);
    std::string_view part = key.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (part.empty() || !node->is_dir()) return std::optional<Node>();
    PACKFS_ASSIGN_OR_RETURN(node, Lookup(node->id, part));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return node;
}

Result<std::string> Catalog::KeyOf(const Node& node) const {
  if (node.id == kRootId) return std::string();
  // Walk up until the root or a directory whose key is remembered; then remember the key of the
  // node's own directory (its next sibling then costs no query).
  std::vector<Node> chain;  // node, its parent, ... (the remembered or root ancestor excluded)
  std::string base;         // key of the ancestor the walk stopped at
  chain.push_back(node);
  while (true) {
    const Node& cur = chain.back();
    if (cur.parent >= cur.id) {  // parents have smaller ids, which also bounds this walk
      return Status::Corruption(path_ + ": node " + std::to_string(cur.id) +
                                " has a bad parent; run `mkpack catalog` to rebuild it");
    }
    if (cur.parent == kRootId) break;
    {
      std::lock_guard<std::mutex> lock(dir_keys_mu_);
      auto it = dir_keys_.find(cur.parent);
      if (it != dir_keys_.end()) {
        base = it->second;
        break;
      }
    }
    PACKFS_ASSIGN_OR_RETURN(std::optional<Node> parent, Get(cur.parent));
    if (!parent) {
      return Status::Corruption(path_ + ": node " + std::to_string(cur.id) + " has no parent");
    }
    chain.push_back(std::move(*parent));
  }
  std::string key = std::move(base);
  std::string parent_key;  // remembered: the next node of the same directory needs no walk
  for (size_t i = chain.size(); i-- > 0;) {
    if (i == 0 && chain.size() > 1) parent_key = key;
    if (!key.empty()) key += '/';
    key += chain[i].name;
  }
  if (chain.size() > 1) {
    std::lock_guard<std::mutex> lock(dir_keys_mu_);
    if (dir_keys_.size() >= kDirKeysMax) dir_keys_.clear();
    dir_keys_.emplace(node.parent, std::move(parent_key));
  }
  return key;
}

Status Catalog::ForEachFile(
    const std::function<Status(const std::string& key, const Node&)>& fn) const {
  PACKFS_ASSIGN_OR_RETURN(Lease lease, Borrow());
  PACKFS_ASSIGN_OR_RETURN(sql::Stmt s, lease->db.Prepare(std::string("SELECT ") + kNodeColumns +
                                                         " FROM nodes ORDER BY id"));
  // One scan in id order: a parent always comes before its children, so each directory's path
  // is known when its files are reached. Only directory paths are kept.
  std::unordered_map<uint64_t, std::string> dir_paths;
  dir_paths.emplace(kRootId, std::string());
  while (true) {
    PACKFS_ASSIGN_OR_RETURN(bool row, Step(s));
    if (!row) break;
    Node n = ReadNode(s, codec_);
    if (n.id == kRootId) continue;
    auto it = dir_paths.find(n.parent);
    if (it == dir_paths.end()) {
      return Status::Corruption(path_ + ": node " + std::to_string(n.id) +
                                " comes before its parent; run `mkpack catalog` to rebuild it");
    }
    std::string key = it->second.empty() ? n.name : it->second + "/" + n.name;
    if (n.is_dir()) {
      dir_paths.emplace(n.id, std::move(key));
    } else {
      PACKFS_RETURN_IF_ERROR(fn(key, n));
    }
  }
  return Status::OK();
}

}  // namespace packfs
