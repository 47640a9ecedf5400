// RemoteDb: an SQLite database read in place from a remote object. A read-only SQLite VFS
// ("packfs-remote") turns SQLite's page reads into RemoteReader reads of the object (aligned
// blocks through its memory and disk caches, one ranged GET per missing run of blocks), so a
// query touches only the pages it needs: a lookup in a catalog of millions of members costs a few
// GETs cold and none once its pages are cached, instead of a download of the whole file.
//
// SQLite finds the file through the VFS by name: RemoteDb::Open registers the object under a
// fresh name for as long as the RemoteDb lives, and uri() opens it read-only and immutable (no
// locks, no journal) from any number of connections. Reads that fail are reported to SQLite as
// I/O errors; last_error() keeps the reader's message, which names the URL.
//
// Thread-safety: connections on different threads may read at once (RemoteReader is
// thread-safe); registration takes a mutex. The VFS itself is registered with SQLite once per
// process, on first use, and never unregistered (SQLite keeps a pointer to it).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/base/status.h"
#include "core/remote/remote_reader.h"

namespace packfs {

class RemoteDb {
 public:
  // Registers `object` (its size is the database's) read through `reader`.
  static Result<std::unique_ptr<RemoteDb>> Open(std::shared_ptr<const RangeFetcher> object,
                                                std::shared_ptr<RemoteReader> reader);
  ~RemoteDb();
  RemoteDb(const RemoteDb&) = delete;
  RemoteDb& operator=(const RemoteDb&) = delete;

  // "file:/packfs-remote-<n>?vfs=packfs-remote&immutable=1": for sqlite3_open_v2 with
  // SQLITE_OPEN_READONLY | SQLITE_OPEN_URI.
  const std::string& uri() const { return uri_; }
  uint64_t size() const;
  // The message of the last failed read ("" when none failed).
  std::string last_error() const;

  // What the VFS finds by name (internal; public for remote_vfs.cc).
  struct Entry {
    std::shared_ptr<const RangeFetcher> object;
    std::shared_ptr<RemoteReader> reader;
    mutable std::mutex mu;
    mutable std::string last_error;  // guarded by mu
  };

 private:
  RemoteDb() = default;
  std::string name_;
  std::string uri_;
  std::shared_ptr<Entry> entry_;
};

}  // namespace packfs
