// DiskCache: byte extents of remote objects kept as files under a directory, so a later mount
// (a second epoch on the node) reads them locally instead of over the network.
//
// An extent's file is named by a 128-bit hash of (object key, start, length), where the object
// key holds the URL and the ETag: a replaced object has another key, so its old extents are never
// served (they age out). Each file is a 32-byte header (magic, length, XXH3-64 of the data) and
// the data, written to a temporary file and renamed into place, so a crash leaves either no file
// or a whole one; a file of the wrong size or checksum (disk damage, a hand edit) is deleted and
// reported as a miss, never served. The total size is bounded: at Open the directory is scanned
// (oldest modification first), and Put evicts the least recently used files past the bound.
// Several mounts may share a directory; each bounds it by its own count (files another mount
// adds are only seen at the next Open).
//
// Thread-safety: all methods are safe for concurrent use (an index under one mutex; file I/O
// outside it). Errors writing are swallowed (the cache is an optimization) but counted.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace packfs {

class DiskCache {
 public:
  // Creates `dir` (and its parents) when missing and indexes the files already there.
  static Result<std::unique_ptr<DiskCache>> Open(const std::string& dir, uint64_t capacity);

  // The `length` bytes of object/start, verified; nullopt when absent or damaged (then deleted).
  std::optional<std::vector<uint8_t>> Get(const std::string& object, uint64_t start,
                                          size_t length);
  // Stores an extent (best effort); extents larger than a quarter of the capacity are skipped.
  void Put(const std::string& object, uint64_t start, std::span<const uint8_t> data);

  // Where object/start/length is (or would be) stored; for tests that damage files.
  std::string PathOf(const std::string& object, uint64_t start, size_t length) const;
  const std::string& dir() const { return dir_; }
  uint64_t bytes() const;
  uint64_t capacity() const { return capacity_; }
  uint64_t damaged() const;       // files found damaged and deleted
  uint64_t write_errors() const;  // Puts that failed

 private:
  DiskCache(std::string dir, uint64_t capacity) : dir_(std::move(dir)), capacity_(capacity) {}
  struct Entry {
    uint64_t size = 0;
    uint64_t last_use = 0;
  };
  void TouchLocked(const std::string& name, uint64_t size);
  void ForgetLocked(const std::string& name);
  // Deletes least recently used files until the total is at most 7/8 of the capacity.
  void EvictLocked();

  const std::string dir_;
  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> index_;  // file name (relative to dir_) -> entry
  uint64_t bytes_ = 0;
  uint64_t clock_ = 0;
  uint64_t damaged_ = 0;
  uint64_t write_errors_ = 0;
};

}  // namespace packfs
