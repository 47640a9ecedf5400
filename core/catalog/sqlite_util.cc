// RAII wrappers over the SQLite C API (see sqlite_util.h).
#include "core/catalog/sqlite_util.h"

#include <utility>

namespace packfs::sql {

Status SqliteStatus(int rc, const std::string& what, std::string_view doing, sqlite3* db) {
  std::string msg = what + ": " + std::string(doing) + ": " +
                    (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  int primary = rc & 0xff;
  switch (primary) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT:
    case SQLITE_SCHEMA:
      return Status::Corruption(std::move(msg));
    case SQLITE_CANTOPEN:
      return Status::IOError(std::move(msg), ENOENT);
    case SQLITE_NOMEM:
      return Status::IOError(std::move(msg), ENOMEM);
    case SQLITE_FULL:
      return Status::IOError(std::move(msg), ENOSPC);
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return Status::IOError(std::move(msg), EACCES);
    default:
      return Status::IOError(std::move(msg), EIO);
  }
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(s_);
    s_ = std::exchange(o.s_, nullptr);
    what_ = std::move(o.what_);
  }
  return *this;
}

Result<bool> Stmt::Step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatus(rc, what_, "query failed", sqlite3_db_handle(s_));
}

Status Stmt::Run() {
  ResetOnExit reset(*this);
  PACKFS_ASSIGN_OR_RETURN(bool row, Step());
  (void)row;
  return Status::OK();
}

Result<Db> Db::Open(const std::string& filename, int flags, std::string what) {
  Db db;
  db.what_ = std::move(what);
  int rc = sqlite3_open_v2(filename.c_str(), &db.db_, flags, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db.what_, "cannot open", db.db_);
  sqlite3_extended_result_codes(db.db_, 1);
  return db;
}

Status Db::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return Error(rc, sql);
  return Status::OK();
}

Result<Stmt> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return Error(rc, "cannot prepare a query");
  }
  return Stmt(s, what_);
}

Status Db::Error(int rc, std::string_view doing) const { return SqliteStatus(rc, what_, doing, db_); }

}  // namespace packfs::sql
