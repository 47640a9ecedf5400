// RemoteDb: the read-only "packfs-remote" SQLite VFS over RemoteReader (see remote_vfs.h).
#include "core/remote/remote_vfs.h"

#include <sqlite3.h>

#include <atomic>
#include <cstring>
#include <map>

namespace packfs {
namespace {

constexpr const char* kVfsName = "packfs-remote";

// Registered objects by name. A process-wide table because SQLite finds a VFS's files by name
// only; entries live as long as their RemoteDb.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<RemoteDb::Entry>> files;
  std::atomic<uint64_t> next{0};
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: SQLite may outlive statics
  return *registry;
}

// An open file: sqlite3_file first, as SQLite requires.
struct File {
  sqlite3_file base;
  std::shared_ptr<RemoteDb::Entry> entry;
};

int Close(sqlite3_file* f) {
  reinterpret_cast<File*>(f)->entry.~shared_ptr();
  return SQLITE_OK;
}

int Read(sqlite3_file* f, void* buf, int amt, sqlite3_int64 offset) {
  const RemoteDb::Entry& e = *reinterpret_cast<File*>(f)->entry;
  if (amt <= 0 || offset < 0) return SQLITE_OK;
  auto* out = static_cast<uint8_t*>(buf);
  // The whole file is one "member": a scan reading its pages in order gets read-ahead.
  Result<size_t> got = e.reader->Read(e.object, 0, e.object->size(), static_cast<uint64_t>(offset),
                                      std::span<uint8_t>(out, static_cast<size_t>(amt)));
  if (!got.ok()) {
    std::lock_guard<std::mutex> lock(e.mu);
    e.last_error = got.status().message();
    return SQLITE_IOERR_READ;
  }
  if (*got < static_cast<size_t>(amt)) {
    // Past the end: SQLite wants the rest zeroed and to be told.
    std::memset(out + *got, 0, static_cast<size_t>(amt) - *got);
    return SQLITE_IOERR_SHORT_READ;
  }
  return SQLITE_OK;
}

int Write(sqlite3_file*, const void*, int, sqlite3_int64) { return SQLITE_READONLY; }
int Truncate(sqlite3_file*, sqlite3_int64) { return SQLITE_READONLY; }
int Sync(sqlite3_file*, int) { return SQLITE_OK; }
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  *size = static_cast<sqlite3_int64>(reinterpret_cast<File*>(f)->entry->object->size());
  return SQLITE_OK;
}
int Lock(sqlite3_file*, int) { return SQLITE_OK; }
int Unlock(sqlite3_file*, int) { return SQLITE_OK; }
int CheckReservedLock(sqlite3_file*, int* out) {
  *out = 0;
  return SQLITE_OK;
}
int FileControl(sqlite3_file*, int, void*) { return SQLITE_NOTFOUND; }
int SectorSize(sqlite3_file*) { return 4096; }
int DeviceCharacteristics(sqlite3_file*) { return SQLITE_IOCAP_IMMUTABLE; }

// Version 1: no shared memory (no WAL) and no memory mapping; every page read goes to Read.
const sqlite3_io_methods kMethods = {1,        Close, Read,   Write,  Truncate,
                                     Sync,     FileSize, Lock, Unlock, CheckReservedLock,
                                     FileControl, SectorSize, DeviceCharacteristics,
                                     nullptr,  nullptr, nullptr, nullptr, nullptr, nullptr};

int OpenFile(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  f->pMethods = nullptr;
  if ((flags & SQLITE_OPEN_MAIN_DB) == 0 || name == nullptr) return SQLITE_CANTOPEN;
  if ((flags & SQLITE_OPEN_READWRITE) != 0) return SQLITE_READONLY;
  std::shared_ptr<RemoteDb::Entry> entry;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.files.find(name);
    if (it == r.files.end()) return SQLITE_CANTOPEN;
    entry = it->second;
  }
  auto* file = reinterpret_cast<File*>(f);
  new (&file->entry) std::shared_ptr<RemoteDb::Entry>(std::move(entry));
  file->base.pMethods = &kMethods;
  if (out_flags != nullptr) *out_flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB;
  return SQLITE_OK;
}

int Delete(sqlite3_vfs*, const char*, int) { return SQLITE_READONLY; }
int Access(sqlite3_vfs*, const char*, int, int* out) {
  *out = 0;  // no journal or WAL beside a remote database
  return SQLITE_OK;
}
int FullPathname(sqlite3_vfs*, const char* name, int n, char* out) {
  if (static_cast<int>(std::strlen(name)) >= n) return SQLITE_CANTOPEN;
  std::strcpy(out, name);
  return SQLITE_OK;
}

// Randomness, sleep, time and errors come from the default VFS.
sqlite3_vfs* Base() { return sqlite3_vfs_find(nullptr); }
int Randomness(sqlite3_vfs*, int n, char* out) { return Base()->xRandomness(Base(), n, out); }
int Sleep(sqlite3_vfs*, int us) { return Base()->xSleep(Base(), us); }
int CurrentTime(sqlite3_vfs*, double* t) { return Base()->xCurrentTime(Base(), t); }
int GetLastError(sqlite3_vfs*, int n, char* out) {
  return Base()->xGetLastError(Base(), n, out);
}

Status RegisterVfs() {
  static const int rc = [] {
    static sqlite3_vfs vfs{};
    vfs.iVersion = 1;
    vfs.szOsFile = sizeof(File);
    vfs.mxPathname = 512;
    vfs.zName = kVfsName;
    vfs.xOpen = OpenFile;
    vfs.xDelete = Delete;
    vfs.xAccess = Access;
    vfs.xFullPathname = FullPathname;
    vfs.xRandomness = Randomness;
    vfs.xSleep = Sleep;
    vfs.xCurrentTime = CurrentTime;
    vfs.xGetLastError = GetLastError;
    return sqlite3_vfs_register(&vfs, /*makeDflt=*/0);
  }();
  if (rc != SQLITE_OK) {
    return Status::IOError(std::string("cannot register SQLite's ") + kVfsName + " VFS: " +
                           sqlite3_errstr(rc));
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<RemoteDb>> RemoteDb::Open(std::shared_ptr<const RangeFetcher> object,
                                                 std::shared_ptr<RemoteReader> reader) {
  PACKFS_RETURN_IF_ERROR(RegisterVfs());
  std::unique_ptr<RemoteDb> db(new RemoteDb());
  db->entry_ = std::make_shared<Entry>();
  db->entry_->object = std::move(object);
  db->entry_->reader = std::move(reader);
  Registry& r = TheRegistry();
  db->name_ = "/packfs-remote-" + std::to_string(r.next++);
  db->uri_ = "file:" + db->name_ + "?vfs=" + kVfsName + "&immutable=1";
  std::lock_guard<std::mutex> lock(r.mu);
  r.files.emplace(db->name_, db->entry_);
  return db;
}

RemoteDb::~RemoteDb() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.files.erase(name_);
}

uint64_t RemoteDb::size() const { return entry_->object->size(); }

std::string RemoteDb::last_error() const {
  std::lock_guard<std::mutex> lock(entry_->mu);
  return entry_->last_error;
}

}  // namespace packfs
