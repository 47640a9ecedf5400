// ZipWriter: writes one zip shard of STORED members, streaming, with exact size projection.
// ZipLayout is the pure arithmetic of where headers and data land (used by the shard planner
// without touching files); ZipWriter produces exactly those bytes. Both are thread-compatible
// (one thread per object). A ZipWriter owns its output fd; it never unlinks or renames the file
// (the caller decides whether an unfinished file is kept or removed).
//
// Format choices (APPNOTE 4.3/4.5): no data descriptors — sizes are known up front and the CRC is
// patched into the local header once the data is through; ZIP64 extra fields only for a member
// of >= 4 GiB - 1 (local and central) or a local header offset >= 4 GiB - 1 (central), ZIP64 end
// records only when the entry count, directory offset or directory size overflow the 16/32-bit
// fields; flag bit 11 for non-ASCII (UTF-8) names; "version made by" Unix with external
// attributes (S_IFREG | mode) << 16; DOS time in UTC plus an Info-ZIP "UT" extra (0x5455) with
// the Unix mtime in both headers; alignment padding as a 0xD935 extra field (u16 alignment,
// then zeros) at the end of the local extra so the data starts on the requested boundary.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/base/unique_fd.h"
#include "core/format/zip_reader.h"

namespace packfs {

// What the writer needs to know about a member before its data.
struct ZipMemberSpec {
  std::string_view name;   // the key, already validated
  uint64_t size = 0;       // exact data size
  int64_t mtime = 0;       // seconds since the epoch (UTC)
  uint32_t mode = 0644;    // permission bits; S_IFREG is added
  uint32_t align = 0;      // data alignment in bytes (0 or 1: none); at most 65535
};

// Where one member lands and how its headers are shaped.
struct ZipPlacement {
  uint64_t local_header_offset = 0;
  uint64_t data_offset = 0;
  uint32_t local_extra_len = 0;  // ZIP64 + UT + padding
  uint32_t pad_len = 0;          // bytes of the 0xD935 extra (0: none)
  bool zip64_local = false;      // local header carries a ZIP64 extra (size >= 0xFFFFFFFF)
  uint32_t central_extra_len = 0;
  uint32_t central_size = 0;     // bytes of this member's central directory entry
};

// The arithmetic of a shard being laid out: offsets, directory size, entry count. A small value
// type; copy it to ask "what if" (the planner tries whole groups this way).
class ZipLayout {
 public:
  // Placement of `spec` if it were added next. Pure.
  ZipPlacement Place(const ZipMemberSpec& spec) const;
  // Adds `spec` and returns its placement.
  ZipPlacement Add(const ZipMemberSpec& spec);

  uint64_t offset() const { return offset_; }   // where the next local header starts
  uint64_t cd_size() const { return cd_size_; }
  uint64_t count() const { return count_; }
  // Final file size if the shard were finished now (directory and end records included).
  uint64_t FinishedSize() const { return offset_ + cd_size_ + EndRecordsSize(count_, offset_, cd_size_); }

  // Bytes of the end records: EOCD, plus ZIP64 EOCD and locator when a field overflows.
  static uint64_t EndRecordsSize(uint64_t entries, uint64_t cd_offset, uint64_t cd_size);
  static bool NeedsZip64End(uint64_t entries, uint64_t cd_offset, uint64_t cd_size);
  // True when `mtime` fits the UT extra's 32-bit signed field.
  static bool HasUnixTime(int64_t mtime) { return mtime >= 0 && mtime <= 0x7FFFFFFF; }

 private:
  uint64_t offset_ = 0;
  uint64_t cd_size_ = 0;
  uint64_t count_ = 0;
};

class ZipWriter {
 public:
  // Creates `path` (O_EXCL: never overwrites). `display_name` names the shard in messages.
  // `buffer_bytes` is the write batch: small members are gathered and written in one call.
  // `direct`: write with O_DIRECT where the file system allows (whole 4 KiB blocks from an
  // aligned buffer; the padding of the last one is cut off at Finish). The shard's bytes then
  // skip the page cache: copying them into it was the largest CPU cost of `mkpack pack` on
  // small files (and dearer still on VMs, where new pages cost a host fault). Same bytes either way.
  static Result<std::unique_ptr<ZipWriter>> Create(const std::string& path, std::string display_name,
                                                   size_t buffer_bytes = 4 << 20,
                                                   bool direct = true);
  // Whether writes bypass the page cache (O_DIRECT accepted).
  bool direct() const { return direct_; }
  ~ZipWriter();
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;

  // Streams a member: BeginMember, Append until exactly spec.size bytes, EndMember (which fails,
  // naming the member, when a different count arrived). The CRC is computed on the way.
  Status BeginMember(const ZipMemberSpec& spec);
  Status Append(std::span<const uint8_t> data);
  Status EndMember();
  // A member whose bytes and CRC are already known (prefetched by another thread).
  Status AddMember(const ZipMemberSpec& spec, std::span<const uint8_t> data, uint32_t crc);

  // Writes the central directory and end records, flushes, optionally fsyncs, closes the fd.
  // The file size then equals layout().FinishedSize() as it was before the call.
  Status Finish(bool sync);

  const ZipLayout& layout() const { return layout_; }
  // What ReadZipIndex would return for the finished shard (members, directory offset, size,
  // entry count, fingerprint), known without reading the file back. Valid after Finish().
  const ShardIndex& index() const { return index_; }
  const std::string& display_name() const { return name_; }

 private:
  ZipWriter(UniqueFd fd, std::string name, size_t buffer_bytes, bool direct);
  Status Write(std::span<const uint8_t> data);  // through the batch buffer
  // Writes the batch (direct: its whole blocks, or with `last` all of it padded to a block).
  Status Flush(bool last);
  bool SetDirect(bool on);  // toggles O_DIRECT on fd_; false when refused
  Status WriteFd(const uint8_t* p, size_t n);
  Status IoError(const char* what, int err) const;
  void PatchCrc(uint64_t local_header_offset, uint32_t crc, Status* st);
  void AppendCentral(const ZipMemberSpec& spec, const ZipPlacement& pl, uint32_t crc);

  UniqueFd fd_;
  std::string name_;
  size_t buffer_cap_;
  struct FreeBytes {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  bool direct_ = false;
  std::unique_ptr<uint8_t, FreeBytes> buf_;  // batch buffer, block-aligned, buffer_cap_ bytes
  size_t buf_len_ = 0;           // pending bytes, file offsets [file_pos_, file_pos_ + buf_len_)
  uint64_t file_pos_ = 0;        // bytes already handed to write(2)
  uint64_t synced_to_ = 0;       // start of the range not yet submitted for writeback
  std::vector<uint8_t> central_; // the central directory, built as members are added
  ZipLayout layout_;
  ShardIndex index_;               // members as a reader will see them; completed by Finish

  // The member being streamed.
  bool in_member_ = false;
  std::string cur_name_;
  ZipMemberSpec cur_spec_;
  ZipPlacement cur_place_;
  uint64_t cur_written_ = 0;
  uint32_t cur_crc_ = 0;
};

// DOS date (high 16 bits) and time (low 16 bits) of `mtime` in UTC, clamped to 1980..2107.
uint32_t DosDateTimeUtc(int64_t mtime);

}  // namespace packfs
