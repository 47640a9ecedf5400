// Thin RAII wrappers over the SQLite C API used by the catalog: a connection (Db) and a prepared
// statement (Stmt). Errors become Status values naming the database path. Thread-compatible: each
// Db and its statements are used by one thread at a time (connections are opened NOMUTEX).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace packfs::sql {

// A prepared statement; finalized on destruction. Bind* indexes are 1-based as in SQLite.
class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3_stmt* s, std::string what) : s_(s), what_(std::move(what)) {}
  Stmt(Stmt&& o) noexcept : s_(o.s_), what_(std::move(o.what_)) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(s_); }

  sqlite3_stmt* get() const { return s_; }
  void BindInt(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  // The text must outlive the step (SQLITE_STATIC: no copy on the hot path).
  void BindText(int i, std::string_view v) {
    // A null data pointer would bind NULL, not "".
    sqlite3_bind_text(s_, i, v.data() ? v.data() : "", static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BindNull(int i) { sqlite3_bind_null(s_, i); }
  // Returns true for a row, false when done; an error Status otherwise.
  Result<bool> Step();
  // Steps a statement that returns no rows, then resets it.
  Status Run();
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  std::string_view Text(int col) const {
    const unsigned char* p = sqlite3_column_text(s_, col);
    int n = sqlite3_column_bytes(s_, col);
    return p ? std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(n))
             : std::string_view();
  }
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

 private:
  sqlite3_stmt* s_ = nullptr;
  std::string what_;  // database path, for messages
};

// Resets a statement when leaving a scope, so an early return never leaves it mid-step (which
// would hold a read transaction open on the connection).
class ResetOnExit {
 public:
  explicit ResetOnExit(Stmt& s) : s_(s) {}
  ~ResetOnExit() { s_.Reset(); }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  Stmt& s_;
};

// A connection; closed on destruction (after its statements, which callers destroy first).
class Db {
 public:
  Db() = default;
  Db(Db&& o) noexcept : db_(o.db_), what_(std::move(o.what_)) { o.db_ = nullptr; }
  Db& operator=(Db&&) = delete;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db() { sqlite3_close_v2(db_); }

  // Opens `filename` with sqlite3_open_v2 flags. `what` names the database in messages.
  static Result<Db> Open(const std::string& filename, int flags, std::string what);

  sqlite3* get() const { return db_; }
  const std::string& what() const { return what_; }
  Status Exec(const std::string& sql);
  Result<Stmt> Prepare(std::string_view sql);
  // The current error of this connection as a Status (Corruption for damaged/foreign files).
  Status Error(int rc, std::string_view doing) const;

 private:
  sqlite3* db_ = nullptr;
  std::string what_;
};

// Maps an SQLite result code to a Status for `what` ("<what>: <doing>: <sqlite message>").
Status SqliteStatus(int rc, const std::string& what, std::string_view doing, sqlite3* db);

}  // namespace packfs::sql
