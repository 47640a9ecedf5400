// DiskCache: byte extents of remote objects kept on local disk, so a later mount (a second epoch
// on the node) reads them locally instead of over the network.
//
// Layout: one sparse data file per object version, named by a 128-bit hash of the object key
// (URL and version, the ETag or a catalog's size and fingerprint of the shard: a replaced object
// has another key, so its old bytes are never served), holding
// every cached extent at its own object offset; and beside it an extent log `<name>.ext` (a
// header with the key's hash, then 32-byte records: start, length, XXH3-64 of the data, a record
// checksum), appended with O_APPEND after the data is written. A cached read is then one pread
// in a kept-open file with the locality of the shard itself — what a local mount does — instead
// of a lookup, an open and a read of one file per extent (the old layout: 0.40x a local mount).
//
// Trust: the log is loaded when an object is first used (a torn or checksum-failing record, a
// crash leftover, is skipped); each extent's XXH3 is verified on its first read in this process
// and trusted afterwards, as are extents this process wrote. Data that does not match its record
// is never served: the record is dropped, counted as damaged, and the caller refetches.
//
// Size bound: allocated bytes (data blocks plus logs), counted at Open by scanning the directory
// and after each Put; past the bound the least recently used whole objects are unlinked (down to
// 7/8 of it). Several mounts may share a directory: both write the same bytes at the same offset
// (same key, same version), each sees the other's extents on its next miss (the log's new
// records are read then), a file another mount evicts stays readable through this one's open fd
// (it writes into the unlinked file until it reopens), and each bounds the directory by its own
// count (objects another mount creates are counted at the next Open).
//
// Thread-safety: all methods are safe for concurrent use (an index under one mutex; data I/O
// outside it; open files are shared_ptrs, so a reader keeps its fd while another thread closes
// or evicts the object). At most kMaxOpenObjects objects keep their two fds open (an LRU).
// Errors writing are swallowed (the cache is an optimization) but counted.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/base/unique_fd.h"

namespace packfs {

class DiskCache {
 public:
  static constexpr size_t kMaxOpenObjects = 128;

  // Creates `dir` (and its parents) when missing and counts the objects already there (an
  // older layout's files in it are deleted).
  static Result<std::unique_ptr<DiskCache>> Open(const std::string& dir, uint64_t capacity);

  // Fills `buf` with the bytes of `object` at `offset` when cached extents cover all of them
  // (verified); false otherwise (buf's contents are then unspecified).
  bool Read(const std::string& object, uint64_t offset, std::span<uint8_t> buf);
  // The open data file of `object` (its bytes at their object offsets) when extents this process
  // has verified (or written) cover [offset, offset + length); null otherwise, also when a
  // covering extent is not verified yet (Read verifies it). The file stays open while the handle
  // is held, even if the object is evicted meanwhile: a reply can splice from it.
  std::shared_ptr<const UniqueFd> MapVerified(const std::string& object, uint64_t offset,
                                              uint64_t length);
  // The same when extents cover the range, verified or not: for read-ahead hints on the file
  // (posix_fadvise), never to serve its bytes.
  std::shared_ptr<const UniqueFd> MapCovered(const std::string& object, uint64_t offset,
                                             uint64_t length);
  // Read of `length` bytes into memory asked for only once cached extents are found to cover
  // them: `place` gives the destination then (null: read nothing), so a miss costs no buffer.
  bool Read(const std::string& object, uint64_t offset, size_t length,
            const std::function<uint8_t*()>& place);
  // Stores an extent (best effort); extents larger than a quarter of the capacity are skipped.
  void Put(const std::string& object, uint64_t start, std::span<const uint8_t> data);

  // The data file of `object` (byte i of the object at offset i) and its extent log; for tests
  // that damage them.
  std::string PathOf(const std::string& object) const;
  std::string LogPathOf(const std::string& object) const;
  const std::string& dir() const { return dir_; }
  uint64_t bytes() const;
  uint64_t capacity() const { return capacity_; }
  uint64_t damaged() const;       // extents found damaged and dropped (refetched)
  uint64_t write_errors() const;  // Puts that failed

 private:
  DiskCache(std::string dir, uint64_t capacity) : dir_(std::move(dir)), capacity_(capacity) {}
  struct Files {
    UniqueFd data;
    UniqueFd log;
    ino_t data_ino = 0;
  };
  struct Extent {
    uint64_t hash = 0;
    bool verified = false;
  };
  struct Object {
    std::map<std::pair<uint64_t, uint64_t>, Extent> extents;  // (start, length) -> extent
    uint64_t max_length = 0;
    uint64_t allocated = 0;  // bytes counted toward the bound
    uint64_t last_use = 0;
    std::shared_ptr<const Files> files;  // null: closed (or not on disk)
    ino_t data_ino = 0;                  // of the files the extents were read from
    uint64_t log_read = 0;               // log bytes parsed so far
    bool foreign = false;                // the log's header is not this object's: unused
  };
  struct Piece {
    uint64_t start, length, hash;
    bool verified;
  };

  // The object's entry with its files open (created when `create`); null when absent.
  Object* OpenLocked(const std::string& name, bool create);
  // Parses the log records past log_read (other mounts' and crash leftovers included).
  void RefreshLocked(const std::string& name, Object& obj);
  // MapVerified (verified: true) and MapCovered (false).
  std::shared_ptr<const UniqueFd> Map(const std::string& object, uint64_t offset,
                                      uint64_t length, bool verified);
  // Extents covering [begin, end), or nullopt.
  static std::optional<std::vector<Piece>> Cover(const Object& obj, uint64_t begin, uint64_t end);
  // Forgets an extent whose bytes did not match (takes the lock).
  void DropExtent(const std::string& name, const Piece& p);
  void RecountLocked(Object& obj);
  void CloseIdleLocked();
  // Unlinks least recently used objects until the total is at most 7/8 of the capacity.
  void EvictLocked();

  const std::string dir_;
  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Object> objects_;  // file name -> object
  size_t open_ = 0;
  uint64_t bytes_ = 0;
  uint64_t clock_ = 0;
  uint64_t damaged_ = 0;
  uint64_t write_errors_ = 0;
};

}  // namespace packfs
