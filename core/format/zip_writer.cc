// ZipLayout arithmetic and the streaming ZipWriter (see zip_writer.h for the format choices).
#include "core/format/zip_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

#include <xxhash.h>

#include "core/base/byte_reader.h"
#include "core/base/crc32.h"
#include "core/format/zip_format.h"

namespace packfs {
namespace {

constexpr uint32_t kZip64LocalExtra = 4 + 16;  // both sizes
constexpr uint32_t kUtExtra = 4 + 5;           // flags + mtime
constexpr uint32_t kPadMin = 6;                // tag, length, u16 alignment
// Kick writeback every this many bytes so the final fsync has little left to do and dirty pages
// do not pile up (a 4 GiB shard would otherwise all be flushed at Finish).
constexpr uint64_t kWritebackChunk = 32ull << 20;
// Direct I/O alignment of buffer address, file offset and length (4 KiB covers the logical block
// size of the disks in use; a device wanting more makes the write fail with EINVAL, and the
// writer falls back to the page cache).
constexpr size_t kDirectAlign = 4096;

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  }
  return true;
}

// The mtime a reader derives from a DOS date/time field (UTC), as ReadZipIndex does.
int64_t DosToUnixUtc(uint32_t dos) {
  std::tm tm{};
  tm.tm_sec = static_cast<int>(dos & 0x1F) * 2;
  tm.tm_min = static_cast<int>((dos >> 5) & 0x3F);
  tm.tm_hour = static_cast<int>((dos >> 11) & 0x1F);
  tm.tm_mday = static_cast<int>((dos >> 16) & 0x1F);
  tm.tm_mon = static_cast<int>((dos >> 21) & 0x0F) - 1;
  tm.tm_year = static_cast<int>(dos >> 25) + 80;
  return static_cast<int64_t>(timegm(&tm));
}

}  // namespace

uint32_t DosDateTimeUtc(int64_t mtime) {
  struct tm tm {};
  time_t t = static_cast<time_t>(mtime);
  if (mtime < 315532800 || gmtime_r(&t, &tm) == nullptr) {  // before 1980-01-01: clamp
    return (0u << 25 | 1u << 21 | 1u << 16);               // 1980-01-01 00:00:00
  }
  int year = tm.tm_year + 1900;
  if (year > 2107) return (127u << 25 | 12u << 21 | 31u << 16 | 23u << 11 | 59u << 5 | 29u);
  uint32_t date = static_cast<uint32_t>((year - 1980) << 9 | (tm.tm_mon + 1) << 5 | tm.tm_mday);
  uint32_t time = static_cast<uint32_t>(tm.tm_hour << 11 | tm.tm_min << 5 | tm.tm_sec / 2);
  return date << 16 | time;
}

ZipPlacement ZipLayout::Place(const ZipMemberSpec& spec) const {
  ZipPlacement pl;
  pl.local_header_offset = offset_;
  pl.zip64_local = spec.size >= zip::k32Max;
  bool ut = HasUnixTime(spec.mtime);
  uint32_t extra = (pl.zip64_local ? kZip64LocalExtra : 0) + (ut ? kUtExtra : 0);
  uint64_t base = offset_ + zip::kLocalHeaderSize + spec.name.size() + extra;
  if (spec.align > 1 && base % spec.align != 0) {
    pl.pad_len = kPadMin + static_cast<uint32_t>((spec.align - (base + kPadMin) % spec.align) %
                                                 spec.align);
  }
  pl.local_extra_len = extra + pl.pad_len;
  pl.data_offset = base + pl.pad_len;
  uint32_t z64_fields = (spec.size >= zip::k32Max ? 2 : 0) + (offset_ >= zip::k32Max ? 1 : 0);
  pl.central_extra_len = (z64_fields ? 4 + 8 * z64_fields : 0) + (ut ? kUtExtra : 0);
  pl.central_size =
      zip::kCentralHeaderSize + static_cast<uint32_t>(spec.name.size()) + pl.central_extra_len;
  return pl;
}

ZipPlacement ZipLayout::Add(const ZipMemberSpec& spec) {
  ZipPlacement pl = Place(spec);
  offset_ = pl.data_offset + spec.size;
  cd_size_ += pl.central_size;
  ++count_;
  return pl;
}

bool ZipLayout::NeedsZip64End(uint64_t entries, uint64_t cd_offset, uint64_t cd_size) {
  // 0xFFFF / 0xFFFFFFFF themselves mean "see the ZIP64 record" to readers, so they overflow too.
  return entries >= zip::k16Max || cd_offset >= zip::k32Max || cd_size >= zip::k32Max;
}

uint64_t ZipLayout::EndRecordsSize(uint64_t entries, uint64_t cd_offset, uint64_t cd_size) {
  return zip::kEocdSize +
         (NeedsZip64End(entries, cd_offset, cd_size) ? zip::kZip64EocdSize + zip::kZip64LocatorSize
                                                     : 0);
}

// ----------------------------------------------------------------------------------------------

Result<std::unique_ptr<ZipWriter>> ZipWriter::Create(const std::string& path,
                                                     std::string display_name,
                                                     size_t buffer_bytes, bool direct) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    int e = errno;
    return Status::IOError("cannot create shard " + display_name + ": " + ErrnoText(e), e);
  }
  // Direct I/O where the file system takes it (set after creating: a refused O_DIRECT open
  // would already have created the file). Otherwise writes go through the page cache.
  if (direct) {
    const int flags = ::fcntl(fd.get(), F_GETFL);
    direct = flags >= 0 && ::fcntl(fd.get(), F_SETFL, flags | O_DIRECT) == 0;
  }
  return std::unique_ptr<ZipWriter>(new ZipWriter(std::move(fd), std::move(display_name),
                                                  buffer_bytes, direct));
}

ZipWriter::ZipWriter(UniqueFd fd, std::string name, size_t buffer_bytes, bool direct)
    : fd_(std::move(fd)),
      name_(std::move(name)),
      buffer_cap_((std::max<size_t>(buffer_bytes, kDirectAlign) + kDirectAlign - 1) /
                  kDirectAlign * kDirectAlign),
      direct_(direct) {
  void* p = nullptr;
  if (::posix_memalign(&p, kDirectAlign, buffer_cap_) != 0) throw std::bad_alloc();
  buf_.reset(static_cast<uint8_t*>(p));
}

ZipWriter::~ZipWriter() = default;

Status ZipWriter::IoError(const char* what, int err) const {
  std::string hint = err == ENOSPC ? " (free space or pick another destination)" : "";
  return Status::IOError(std::string(what) + " shard " + name_ + ": " + ErrnoText(err) + hint, err);
}

Status ZipWriter::WriteFd(const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::write(fd_.get(), p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && direct_ && SetDirect(false)) continue;  // alignment refused
      return IoError("writing", errno);
    }
    p += k;
    n -= static_cast<size_t>(k);
    file_pos_ += static_cast<uint64_t>(k);
  }
  if (!direct_ && file_pos_ - synced_to_ >= kWritebackChunk) {
    // Best effort: only starts writeback; errors surface at fsync.
    (void)::sync_file_range(fd_.get(), static_cast<off_t>(synced_to_),
                            static_cast<off_t>(file_pos_ - synced_to_), SYNC_FILE_RANGE_WRITE);
    synced_to_ = file_pos_;
  }
  return Status::OK();
}

bool ZipWriter::SetDirect(bool on) {
  const int flags = ::fcntl(fd_.get(), F_GETFL);
  if (flags < 0) return false;
  if (::fcntl(fd_.get(), F_SETFL, on ? flags | O_DIRECT : flags & ~O_DIRECT) != 0) return false;
  direct_ = on;
  return true;
}

Status ZipWriter::Flush(bool last) {
  if (buf_len_ == 0) return Status::OK();
  size_t n = buf_len_;
  if (direct_) {
    // Whole blocks only; the last flush pads its final block with zeros, cut off by Finish.
    n = last ? (buf_len_ + kDirectAlign - 1) / kDirectAlign * kDirectAlign
             : buf_len_ / kDirectAlign * kDirectAlign;
    if (n == 0) return Status::OK();
    if (n > buf_len_) std::memset(buf_.get() + buf_len_, 0, n - buf_len_);
  }
  PACKFS_RETURN_IF_ERROR(WriteFd(buf_.get(), n));
  const size_t kept = n < buf_len_ ? buf_len_ - n : 0;
  if (kept > 0) std::memmove(buf_.get(), buf_.get() + n, kept);
  buf_len_ = kept;
  return Status::OK();
}

Status ZipWriter::Write(std::span<const uint8_t> data) {
  // Buffered: a write bigger than the batch goes out as it is. Direct: everything goes through
  // the (aligned) batch buffer in whole blocks.
  if (!direct_ && buf_len_ + data.size() > buffer_cap_) {
    PACKFS_RETURN_IF_ERROR(Flush(false));
    if (data.size() >= buffer_cap_) return WriteFd(data.data(), data.size());
  }
  while (!data.empty()) {
    if (buf_len_ == buffer_cap_) PACKFS_RETURN_IF_ERROR(Flush(false));
    const size_t n = std::min(data.size(), buffer_cap_ - buf_len_);
    std::memcpy(buf_.get() + buf_len_, data.data(), n);
    buf_len_ += n;
    data = data.subspan(n);
  }
  return Status::OK();
}

void ZipWriter::PatchCrc(uint64_t local_header_offset, uint32_t crc, Status* st) {
  uint8_t le[4] = {static_cast<uint8_t>(crc), static_cast<uint8_t>(crc >> 8),
                   static_cast<uint8_t>(crc >> 16), static_cast<uint8_t>(crc >> 24)};
  const uint64_t at = local_header_offset + 14;
  // Bytes still in the batch buffer are patched there (no system call).
  size_t on_disk = 0;
  for (size_t i = 0; i < 4; ++i) {
    if (at + i >= file_pos_) {
      buf_.get()[at + i - file_pos_] = le[i];
    } else {
      on_disk = i + 1;
    }
  }
  if (on_disk == 0) return;
  // The rest was written: a small write through the page cache (direct I/O takes whole blocks
  // only). No direct write touches that block again, so the two never overlap.
  const bool was_direct = direct_;
  if (was_direct && !SetDirect(false)) {
    *st = IoError("patching the CRC in", errno);
    return;
  }
  ssize_t k = ::pwrite(fd_.get(), le, on_disk, static_cast<off_t>(at));
  if (k != static_cast<ssize_t>(on_disk)) *st = IoError("patching the CRC in", k < 0 ? errno : EIO);
  if (was_direct && !SetDirect(true) && st->ok()) *st = IoError("patching the CRC in", errno);
}

Status ZipWriter::BeginMember(const ZipMemberSpec& spec) {
  if (in_member_) {
    return Status::InvalidArgument(name_ + ": member " + cur_name_ + " was not ended");
  }
  if (spec.align > zip::k16Max) {
    return Status::InvalidArgument(name_ + ": alignment " + std::to_string(spec.align) +
                                   " is above 65535");
  }
  cur_name_.assign(spec.name);
  cur_spec_ = spec;
  cur_spec_.name = cur_name_;
  ZipPlacement pl = layout_.Add(cur_spec_);
  cur_place_ = pl;
  cur_written_ = 0;
  cur_crc_ = 0;
  in_member_ = true;

  std::vector<uint8_t> h;
  h.reserve(zip::kLocalHeaderSize + spec.name.size() + pl.local_extra_len);
  ByteWriter w(&h);
  uint32_t dos = DosDateTimeUtc(spec.mtime);
  bool ut = ZipLayout::HasUnixTime(spec.mtime);
  w.U32(zip::kLocalSig);
  w.U16(pl.zip64_local ? zip::kVersionNeeded45 : zip::kVersionNeeded20);
  w.U16(IsAscii(spec.name) ? 0 : zip::kFlagUtf8);
  w.U16(zip::kMethodStored);
  w.U16(static_cast<uint16_t>(dos));
  w.U16(static_cast<uint16_t>(dos >> 16));
  w.U32(0);  // CRC, patched by EndMember
  uint32_t size32 = pl.zip64_local ? zip::k32Max : static_cast<uint32_t>(spec.size);
  w.U32(size32);
  w.U32(size32);
  w.U16(static_cast<uint16_t>(spec.name.size()));
  w.U16(static_cast<uint16_t>(pl.local_extra_len));
  w.Bytes(spec.name);
  if (pl.zip64_local) {
    w.U16(zip::kExtraZip64);
    w.U16(16);
    w.U64(spec.size);
    w.U64(spec.size);
  }
  if (ut) {
    w.U16(zip::kExtraTimestamp);
    w.U16(5);
    w.U8(1);  // modification time present
    w.U32(static_cast<uint32_t>(spec.mtime));
  }
  if (pl.pad_len > 0) {
    w.U16(zip::kExtraAlignment);
    w.U16(static_cast<uint16_t>(pl.pad_len - 4));
    w.U16(static_cast<uint16_t>(spec.align));
    w.Zeros(pl.pad_len - kPadMin);
  }
  return Write(h);
}

Status ZipWriter::Append(std::span<const uint8_t> data) {
  if (!in_member_) return Status::InvalidArgument(name_ + ": Append outside a member");
  if (data.size() > cur_spec_.size - cur_written_) {
    return Status::Corruption(name_ + ": member " + cur_name_ + " got more bytes than its " +
                              std::to_string(cur_spec_.size) + " (input grew while read?)");
  }
  cur_crc_ = Crc32(cur_crc_, data.data(), data.size());
  cur_written_ += data.size();
  return Write(data);
}

Status ZipWriter::EndMember() {
  if (!in_member_) return Status::InvalidArgument(name_ + ": EndMember outside a member");
  in_member_ = false;
  if (cur_written_ != cur_spec_.size) {
    return Status::Corruption(name_ + ": member " + cur_name_ + " got " +
                              std::to_string(cur_written_) + " bytes, expected " +
                              std::to_string(cur_spec_.size) + " (input shrank while read?)");
  }
  Status st;
  PatchCrc(cur_place_.local_header_offset, cur_crc_, &st);
  PACKFS_RETURN_IF_ERROR(st);
  AppendCentral(cur_spec_, cur_place_, cur_crc_);
  return Status::OK();
}

Status ZipWriter::AddMember(const ZipMemberSpec& spec, std::span<const uint8_t> data,
                            uint32_t crc) {
  if (data.size() != spec.size) {
    return Status::InvalidArgument(name_ + ": member " + std::string(spec.name) + " has " +
                                   std::to_string(data.size()) + " bytes, spec says " +
                                   std::to_string(spec.size));
  }
  PACKFS_RETURN_IF_ERROR(BeginMember(spec));
  cur_written_ = spec.size;
  in_member_ = false;
  PACKFS_RETURN_IF_ERROR(Write(data));
  Status st;
  PatchCrc(cur_place_.local_header_offset, crc, &st);
  PACKFS_RETURN_IF_ERROR(st);
  AppendCentral(cur_spec_, cur_place_, crc);
  return Status::OK();
}

void ZipWriter::AppendCentral(const ZipMemberSpec& spec, const ZipPlacement& pl, uint32_t crc) {
  ByteWriter w(&central_);
  bool big = spec.size >= zip::k32Max;
  bool far = pl.local_header_offset >= zip::k32Max;
  uint16_t needed = (big || far) ? zip::kVersionNeeded45 : zip::kVersionNeeded20;
  uint32_t dos = DosDateTimeUtc(spec.mtime);
  ShardMember m;
  m.name.assign(spec.name);
  m.local_header_offset = pl.local_header_offset;
  m.data_offset = pl.data_offset;
  m.size = spec.size;
  m.crc32 = crc;
  m.mode = S_IFREG | (spec.mode & 07777);
  // The UT extra's field is a signed 32-bit value; ZipLayout writes it only when it fits.
  m.mtime = ZipLayout::HasUnixTime(spec.mtime) ? spec.mtime : DosToUnixUtc(dos);
  index_.members.push_back(std::move(m));
  w.U32(zip::kCentralSig);
  w.U16(static_cast<uint16_t>(zip::kVersionMadeByUnix | needed));
  w.U16(needed);
  w.U16(IsAscii(spec.name) ? 0 : zip::kFlagUtf8);
  w.U16(zip::kMethodStored);
  w.U16(static_cast<uint16_t>(dos));
  w.U16(static_cast<uint16_t>(dos >> 16));
  w.U32(crc);
  uint32_t size32 = big ? zip::k32Max : static_cast<uint32_t>(spec.size);
  w.U32(size32);
  w.U32(size32);
  w.U16(static_cast<uint16_t>(spec.name.size()));
  w.U16(static_cast<uint16_t>(pl.central_extra_len));
  w.U16(0);  // comment
  w.U16(0);  // disk
  w.U16(0);  // internal attributes
  w.U32((S_IFREG | (spec.mode & 07777)) << 16);
  w.U32(far ? zip::k32Max : static_cast<uint32_t>(pl.local_header_offset));
  w.Bytes(spec.name);
  if (big || far) {
    w.U16(zip::kExtraZip64);
    w.U16(static_cast<uint16_t>((big ? 16 : 0) + (far ? 8 : 0)));
    if (big) {
      w.U64(spec.size);
      w.U64(spec.size);
    }
    if (far) w.U64(pl.local_header_offset);
  }
  if (ZipLayout::HasUnixTime(spec.mtime)) {
    w.U16(zip::kExtraTimestamp);
    w.U16(5);
    w.U8(1);
    w.U32(static_cast<uint32_t>(spec.mtime));
  }
}

Status ZipWriter::Finish(bool sync) {
  if (in_member_) return Status::InvalidArgument(name_ + ": member " + cur_name_ + " not ended");
  uint64_t cd_offset = layout_.offset();
  uint64_t cd_size = central_.size();
  uint64_t entries = layout_.count();
  index_.cd_offset = cd_offset;
  index_.cd_size = cd_size;
  index_.cd_entries = entries;
  index_.fingerprint = XXH3_64bits(central_.data(), central_.size());
  PACKFS_RETURN_IF_ERROR(Write(central_));
  std::vector<uint8_t> end;
  ByteWriter w(&end);
  bool z64 = ZipLayout::NeedsZip64End(entries, cd_offset, cd_size);
  if (z64) {
    uint64_t z64_offset = cd_offset + cd_size;
    w.U32(zip::kZip64EocdSig);
    w.U64(zip::kZip64EocdSize - 12);
    w.U16(static_cast<uint16_t>(zip::kVersionMadeByUnix | zip::kVersionNeeded45));
    w.U16(zip::kVersionNeeded45);
    w.U32(0);
    w.U32(0);
    w.U64(entries);
    w.U64(entries);
    w.U64(cd_size);
    w.U64(cd_offset);
    w.U32(zip::kZip64LocatorSig);
    w.U32(0);
    w.U64(z64_offset);
    w.U32(1);
  }
  uint16_t entries16 = static_cast<uint16_t>(std::min<uint64_t>(entries, zip::k16Max));
  w.U32(zip::kEocdSig);
  w.U16(0);
  w.U16(0);
  w.U16(entries16);
  w.U16(entries16);
  w.U32(static_cast<uint32_t>(std::min<uint64_t>(cd_size, zip::k32Max)));
  w.U32(static_cast<uint32_t>(std::min<uint64_t>(cd_offset, zip::k32Max)));
  w.U16(0);  // comment length
  PACKFS_RETURN_IF_ERROR(Write(end));
  const uint64_t size = file_pos_ + buf_len_;
  PACKFS_RETURN_IF_ERROR(Flush(true));
  if (file_pos_ != size && ::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) {
    return IoError("truncating the padding of", errno);
  }
  file_pos_ = size;
  if (sync && ::fsync(fd_.get()) != 0) return IoError("syncing", errno);
  int fd = fd_.release();
  if (::close(fd) != 0 && errno != EINTR) return IoError("closing", errno);
  return Status::OK();
}

}  // namespace packfs
