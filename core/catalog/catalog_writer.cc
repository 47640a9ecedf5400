// Writing a catalog: bulk load into a fresh SQLite database, then publish it atomically.
//
// Speed matters (1M members in a few seconds), so the load runs in one transaction with prepared
// statements, journal and fsync off (the file is a private temporary until renamed, so a crash
// just leaves garbage we never open), and rows and fences are inserted in key order, so every
// insert appends to its b-tree. Durability comes from
// one fsync of the finished file before rename(2) and one of the directory after it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <unordered_map>

#include "core/base/unique_fd.h"
#include "core/catalog/catalog.h"
#include "core/catalog/catalog_schema.h"

namespace packfs {
namespace catalog_internal {

std::string FileUri(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (unsigned char c : path) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '/' || c == '.' || c == '-' || c == '_' || c == '~';
    if (plain) {
      uri.push_back(static_cast<char>(c));
    } else {
      uri.push_back('%');
      uri.push_back(kHex[c >> 4]);
      uri.push_back(kHex[c & 15]);
    }
  }
  return uri;
}

Node ReadNode(const sql::Stmt& s, const NodeCodec& codec) {
  Node n;
  n.id = static_cast<uint64_t>(s.Int(0));
  n.parent = static_cast<uint64_t>(s.Int(1));
  n.name = std::string(s.Text(2));
  n.type = s.Int(3) == 0 ? NodeType::kDirectory : NodeType::kFile;
  n.first_child = static_cast<uint64_t>(s.Int(4));
  n.child_count = static_cast<uint64_t>(s.Int(5));
  n.shard = static_cast<uint32_t>(s.Int(6));
  n.local_header_offset = static_cast<uint64_t>(s.Int(7));
  n.data_offset = static_cast<uint64_t>(s.Int(8));
  if (codec.data_offset_relative) n.data_offset += n.local_header_offset;
  n.size = static_cast<uint64_t>(s.Int(9));
  n.crc32 = static_cast<uint32_t>(s.Int(10));  // the low 32 bits: schema 2 stores it signed
  n.mode = static_cast<uint32_t>(s.Int(11));
  if (!n.is_dir()) n.mode ^= codec.file_mode;
  n.mtime = s.Int(12) + codec.mtime_base;
  return n;
}

namespace {

// The codec that stores `nodes` smallest: the most common file mode, the median mtime.
NodeCodec ChooseCodec(const std::vector<Node>& nodes) {
  NodeCodec codec;
  codec.data_offset_relative = true;
  std::unordered_map<uint32_t, uint64_t> modes;
  std::vector<int64_t> mtimes;
  mtimes.reserve(nodes.size());
  for (const Node& n : nodes) {
    if (!n.is_dir()) ++modes[n.mode];
    mtimes.push_back(n.mtime);
  }
  uint64_t best = 0;
  for (const auto& [mode, count] : modes) {
    if (count > best || (count == best && mode < codec.file_mode)) {
      best = count;
      codec.file_mode = mode;
    }
  }
  if (!mtimes.empty()) {
    auto mid = mtimes.begin() + static_cast<std::ptrdiff_t>(mtimes.size() / 2);
    std::nth_element(mtimes.begin(), mid, mtimes.end());
    codec.mtime_base = *mid;
  }
  return codec;
}

}  // namespace

Status FillDatabase(sql::Db& db, const CatalogData& data, bool exclusive) {
  std::random_device rd;
  std::string catalog_id = std::to_string((uint64_t{rd()} << 32) | rd());
  PACKFS_RETURN_IF_ERROR(db.Exec(
      std::string(exclusive ? "PRAGMA locking_mode=EXCLUSIVE;" : "") +
      "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
      "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536;"
      "PRAGMA application_id=" + std::to_string(kApplicationId) + ";"
      "PRAGMA user_version=" + std::to_string(kCatalogSchemaVersion) + ";"));
  PACKFS_RETURN_IF_ERROR(db.Exec(
      "BEGIN;"
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
      // No index on the name (names are unique by construction, and the table is only ever
      // read whole, at open): its pages would interleave with the table's and break the one
      // sequential scan a remote open makes into a request per block.
      "CREATE TABLE shards(id INTEGER PRIMARY KEY, name TEXT NOT NULL, size INTEGER NOT "
      "NULL, mtime_ns INTEGER NOT NULL, fingerprint INTEGER NOT NULL, member_count INTEGER NOT "
      "NULL);"
      "CREATE TABLE nodes(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL, name TEXT NOT NULL, "
      "type INTEGER NOT NULL, first_child INTEGER NOT NULL, child_count INTEGER NOT NULL, "
      "shard INTEGER NOT NULL, local_header_offset INTEGER NOT NULL, data_offset INTEGER NOT "
      "NULL, size INTEGER NOT NULL, crc32 INTEGER NOT NULL, mode INTEGER NOT NULL, mtime "
      "INTEGER NOT NULL);"
      "CREATE TABLE problems(shard TEXT NOT NULL, message TEXT NOT NULL);"
      "CREATE TABLE fences(parent INTEGER NOT NULL, name TEXT NOT NULL, id INTEGER NOT NULL, "
      "PRIMARY KEY(parent, name)) WITHOUT ROWID;"));
  const NodeCodec codec = ChooseCodec(data.nodes);
  int64_t newest_shard_mtime_ns = 0;
  for (const ShardInfo& s : data.shards) {
    newest_shard_mtime_ns = std::max(newest_shard_mtime_ns, s.mtime_ns);
  }

  {
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt meta, db.Prepare("INSERT INTO meta VALUES(?, ?)"));
    const std::pair<std::string, std::string> rows[] = {
        {"format", "packfs-catalog"},
        {"schema_version", std::to_string(kCatalogSchemaVersion)},
        {"files", std::to_string(data.totals.files)},
        {"directories", std::to_string(data.totals.directories)},
        {"bytes", std::to_string(data.totals.bytes)},
        {"nodes", std::to_string(data.nodes.size())},
        {"catalog_id", catalog_id},
        {"written_by", std::string("packfs ") + PACKFS_VERSION},
        {"file_mode", std::to_string(codec.file_mode)},
        {"mtime_base", std::to_string(codec.mtime_base)},
        {"fence_stride", std::to_string(kFenceStride)},
        // Lets a catalog read in place tell directories' mtime without reading every shard row.
        {"newest_shard_mtime_ns", std::to_string(newest_shard_mtime_ns)},
    };
    for (const auto& [k, v] : rows) {
      meta.BindText(1, k);
      meta.BindText(2, v);
      PACKFS_RETURN_IF_ERROR(meta.Run());
    }
  }
  {
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt ins, db.Prepare("INSERT INTO shards VALUES(?,?,?,?,?,?)"));
    for (size_t i = 0; i < data.shards.size(); ++i) {
      const ShardInfo& s = data.shards[i];
      ins.BindInt(1, static_cast<int64_t>(i));
      ins.BindText(2, s.name);
      ins.BindInt(3, static_cast<int64_t>(s.size));
      ins.BindInt(4, s.mtime_ns);
      ins.BindInt(5, static_cast<int64_t>(s.fingerprint));  // stored as its two's complement
      ins.BindInt(6, static_cast<int64_t>(s.member_count));
      PACKFS_RETURN_IF_ERROR(ins.Run());
    }
  }
  {
    // (parameter 1, the id, is never bound: it stays NULL.)
    // The id is left NULL so SQLite appends with the next rowid (max + 1) instead of seeking
    // for each explicit one: nodes[i].id == i + 1 and the table starts empty, so the ids are
    // the same (checked below). Every parameter is bound on each row, so bindings are never
    // cleared.
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt ins,
                            db.Prepare("INSERT INTO nodes VALUES(NULL,?2,?3,?4,?5,?6,?7,?8,?9,?10,"
                                       "?11,?12,?13)"));
    for (size_t i = 0; i < data.nodes.size(); ++i) {
      const Node& n = data.nodes[i];
      if (n.id != i + 1) {
        return Status::InvalidArgument("node " + std::to_string(i) + " has id " +
                                       std::to_string(n.id) +
                                       "; catalog node ids must be consecutive from 1");
      }
      ins.BindInt(2, static_cast<int64_t>(n.parent));
      ins.BindText(3, n.name);
      ins.BindInt(4, n.is_dir() ? 0 : 1);
      ins.BindInt(5, static_cast<int64_t>(n.first_child));
      ins.BindInt(6, static_cast<int64_t>(n.child_count));
      ins.BindInt(7, n.shard);
      ins.BindInt(8, static_cast<int64_t>(n.local_header_offset));
      // A file's data follows its local header (a directory has zeros): a small difference,
      // kept exact by two's complement in any case.
      ins.BindInt(9, static_cast<int64_t>(n.data_offset - n.local_header_offset));
      ins.BindInt(10, static_cast<int64_t>(n.size));
      ins.BindInt(11, static_cast<int32_t>(n.crc32));
      ins.BindInt(12, n.is_dir() ? n.mode : n.mode ^ codec.file_mode);
      ins.BindInt(13, n.mtime - codec.mtime_base);
      const int rc = sqlite3_step(ins.get());
      if (rc != SQLITE_DONE) return db.Error(rc, "inserting node " + std::to_string(n.id));
      sqlite3_reset(ins.get());
    }
    if (!data.nodes.empty() &&
        sqlite3_last_insert_rowid(db.get()) != static_cast<int64_t>(data.nodes.size())) {
      return Status::Corruption("catalog node ids were not assigned consecutively");
    }
  }
  {
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt ins, db.Prepare("INSERT INTO problems VALUES(?, ?)"));
    for (size_t i = 0; i < data.problems.size(); ++i) {
      ins.BindText(1, i < data.problem_shards.size() ? std::string_view(data.problem_shards[i])
                                                     : std::string_view());
      ins.BindText(2, data.problems[i]);
      PACKFS_RETURN_IF_ERROR(ins.Run());
    }
  }
  {
    // In key order (directories by id, children by name), so each row appends to the b-tree.
    PACKFS_ASSIGN_OR_RETURN(sql::Stmt ins, db.Prepare("INSERT INTO fences VALUES(?, ?, ?)"));
    for (const Node& dir : data.nodes) {
      if (!dir.is_dir()) continue;
      for (uint64_t pos = 0; pos < dir.child_count; pos += kFenceStride) {
        const uint64_t id = dir.first_child + pos;
        if (id == 0 || id > data.nodes.size()) {
          return Status::InvalidArgument("directory node " + std::to_string(dir.id) +
                                         " lists children past the last node");
        }
        ins.BindInt(1, static_cast<int64_t>(dir.id));
        ins.BindText(2, data.nodes[id - 1].name);
        ins.BindInt(3, static_cast<int64_t>(id));
        PACKFS_RETURN_IF_ERROR(ins.Run());
      }
    }
  }
  return db.Exec("COMMIT;");
}

}  // namespace catalog_internal

namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status FsyncPath(const std::string& path, int flags, const std::string& what) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0) {
    int e = errno;
    return Status::IOError("cannot sync " + what + ": " + ErrnoText(e), e);
  }
  return Status::OK();
}

// Removes the temporary file unless the rename happened.
class TempFileGuard {
 public:
  explicit TempFileGuard(std::string path) : path_(std::move(path)) {}
  ~TempFileGuard() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void Release() { path_.clear(); }
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

 private:
  std::string path_;
};

}  // namespace

Status WriteCatalog(const std::string& path, const CatalogData& data) {
  std::random_device rd;
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  ::unlink(tmp.c_str());
  TempFileGuard guard(tmp);
  {
    PACKFS_ASSIGN_OR_RETURN(
        sql::Db db, sql::Db::Open(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                           SQLITE_OPEN_NOMUTEX,
                                  tmp));
    Status st = catalog_internal::FillDatabase(db, data, /*exclusive=*/true);
    if (!st.ok()) return st.WithPrefix("cannot write the catalog " + path);
  }  // closed: every page is in the file
  PACKFS_RETURN_IF_ERROR(FsyncPath(tmp, O_RDONLY, tmp));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    return Status::IOError("cannot rename " + tmp + " to " + path + ": " + ErrnoText(e), e);
  }
  guard.Release();
  return FsyncPath(DirName(path), O_RDONLY | O_DIRECTORY, "the directory of " + path);
}

}  // namespace packfs
