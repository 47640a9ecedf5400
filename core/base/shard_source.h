// ShardSource: the one way packfs reads shard bytes — a size and a positional ReadAt.
// Implementations must be safe for concurrent use from many threads (no shared cursor), so the
// FUSE layer can serve reads from any worker. Local files (FileShardSource), in-memory buffers
// (MemoryShardSource), HTTP/S3 objects (RemoteShardSource), synthesized episode videos
// (Mp4SliceSource) and windows of other sources plug in here without touching callers.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <span>
#include <string>
#include <vector>

#include "core/base/extent.h"
#include "core/base/status.h"
#include "core/base/unique_fd.h"

namespace packfs {

class ShardSource {
 public:
  virtual ~ShardSource() = default;

  // Name used in messages: the shard path relative to the dataset root (e.g. "media/pack-0003.zip").
  virtual const std::string& name() const = 0;
  // Size in bytes, fixed for the life of the source.
  virtual uint64_t size() const = 0;
  // Reads min(buf.size(), size() - offset) bytes at `offset` into buf and returns how many were
  // read; fewer than asked only at end of source. Thread-safe.
  virtual Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const = 0;
  // ReadAt for a read that belongs to one member whose bytes (local header included) are
  // [member_begin, member_end) of this source; offset and buf lie within them. Lets a remote
  // source fetch a small member whole and detect sequential reads of a large one. `run_end`:
  // where the run of members that the member's directory has in this source ends (its last
  // member's end; 0 when unknown): a walk over the members that starts in that run reads ahead
  // no further until it has gone past it (RemoteReader). The default ignores the member and
  // calls ReadAt. Thread-safe.
  virtual Result<size_t> ReadMemberAt(uint64_t member_begin, uint64_t member_end, uint64_t offset,
                                      std::span<uint8_t> buf, uint64_t run_end = 0) const {
    (void)member_begin, (void)member_end, (void)run_end;
    return ReadAt(offset, buf);
  }
  // ReadMemberAt without a copy, for sources that hold the bytes in memory anyway (a remote
  // shard's cached blocks): appends extents covering min(length, size() - offset) bytes at
  // `offset`, in order, to `out` and returns that count; nullopt when this source has no such
  // memory (the default: read with ReadMemberAt). The extents keep their memory alive.
  virtual Result<std::optional<size_t>> LendMemberAt(uint64_t member_begin, uint64_t member_end,
                                                     uint64_t offset, size_t length,
                                                     std::vector<Extent>* out,
                                                     uint64_t run_end = 0) const {
    (void)member_begin, (void)member_end, (void)offset, (void)length, (void)out, (void)run_end;
    return std::optional<size_t>();
  }
  // Whether members after `offset` may be brought beside a read by `reader` (a thread id) now
  // (PackSet::ReadThrough): always for a local file; for a shard held elsewhere, when
  // LendCachedMember may lend them (a remote shard: walked by that reader alone). Cheap: asked
  // before any catalog query.
  virtual bool MayLendFollowers(uint64_t offset, uint64_t reader) const {
    (void)offset, (void)reader;
    return fd() >= 0;
  }
  // The bytes of member [member_begin, member_end) of this source (local header included), when
  // the source holds all of them in memory now: appended to `out` as extents, true. False, and
  // nothing appended, when it does not (the default). Never fetches and never waits: lets a read
  // of a remote shard bring the members that follow it from what a walk's read-ahead has
  // fetched already (PackSet::ReadThrough), without a request of its own.
  virtual bool LendCachedMember(uint64_t member_begin, uint64_t member_end,
                                std::vector<Extent>* out) const {
    (void)member_begin, (void)member_end, (void)out;
    return false;
  }
  // Fills `buf` with this source's bytes from `offset` when a local copy of them holds them all
  // (a remote shard's disk cache, checked): true. False when it does not (the default), `buf`
  // then unspecified. Never fetches: lets a read of a shard held elsewhere bring the members
  // that follow it from its disk cache, as a local shard's read brings them from its file.
  virtual bool ReadCachedRange(uint64_t offset, std::span<uint8_t> buf) const {
    (void)offset, (void)buf;
    return false;
  }
  // A file descriptor whose bytes at the same offsets are this source's (for zero-copy replies),
  // or -1 when the bytes are synthesized or remote.
  virtual int fd() const { return -1; }
  // For a source without fd(): a local file holding its bytes [offset, offset + length) at the
  // same offsets (a remote shard's disk cache), to hint the disk with (posix_fadvise) before the
  // reads that will want them; never to serve bytes from, which may be unchecked yet. Null when
  // there is none (the default). Cheap: no I/O.
  virtual std::shared_ptr<const UniqueFd> HintFile(uint64_t offset, uint64_t length) const {
    (void)offset, (void)length;
    return nullptr;
  }
  // Where bytes [offset, offset + length) of this source lie, when they lie contiguously in a
  // file-backed source: that source (fd() >= 0, kept open while the lease is held) and the offset
  // in it. nullopt when they do not (synthesized bytes, a range straddling pieces). Lets a source
  // made of pieces of files (a sliced MP4) still be served zero-copy. Thread-safe.
  virtual Result<std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>> MapToFile(
      uint64_t offset, uint64_t length) const;
};

// A shard opened for reading; keeps its fd (or connection state) alive while held.
using ShardLease = std::shared_ptr<const ShardSource>;

// Reads exactly buf.size() bytes at offset or fails with a Corruption status naming `what`
// ("truncated: <shard> ends at N, <what> needs bytes up to M").
Status ReadExactly(const ShardSource& src, uint64_t offset, std::span<uint8_t> buf,
                   const char* what);

// Size and modification time of a local file (nanoseconds since the epoch).
struct FileStat {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};
Result<FileStat> StatFile(const std::string& path);

// A local file read with pread(2). Holds one O_RDONLY fd for its lifetime. On a thread with a
// WaitNotice (core/base/wait_notice.h) a read first takes what is cached and tells the notice
// before it waits for the rest.
class FileShardSource final : public ShardSource {
 public:
  // Opens `path`; `display_name` is what messages call it.
  static Result<std::unique_ptr<FileShardSource>> Open(const std::string& path,
                                                       std::string display_name);

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return stat_.size; }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override;

  const FileStat& stat() const { return stat_; }
  int fd() const override { return fd_.get(); }

 private:
  FileShardSource(UniqueFd fd, std::string name, FileStat st)
      : fd_(std::move(fd)), name_(std::move(name)), stat_(st) {}

  // With a WaitNotice set on the calling thread (core/base/wait_notice.h): what of buf is read
  // at `offset` without waiting for the disk (preadv2 with RWF_NOWAIT), from 0 to all of it.
  size_t ReadCached(uint64_t offset, std::span<uint8_t> buf) const;

  UniqueFd fd_;
  std::string name_;
  FileStat stat_;
  mutable std::atomic<bool> nowait_{true};  // cleared when the file system refuses RWF_NOWAIT
};

// An immutable in-memory shard (tests, synthesized content).
class MemoryShardSource final : public ShardSource {
 public:
  MemoryShardSource(std::string name, std::vector<uint8_t> bytes)
      : name_(std::move(name)), bytes_(std::move(bytes)) {}

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return bytes_.size(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override;

 private:
  std::string name_;
  std::vector<uint8_t> bytes_;
};

}  // namespace packfs
