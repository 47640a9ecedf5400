// Finds a zip archive's end records and derives the central directory position and archive start.
#include "core/format/zip_end_records.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/base/byte_reader.h"
#include "core/format/zip_format.h"

namespace packfs {
namespace {

using namespace packfs::zip;

struct Eocd {
  uint64_t pos = 0;  // absolute
  uint16_t disk = 0, cd_disk = 0, entries_disk = 0, entries = 0;
  uint32_t cd_size = 0, cd_offset = 0;
};

Status NoEnd(const ShardSource& src) {
  return Status::Corruption(src.name() +
                            ": no end of central directory record (truncated or not a zip file)");
}

Status MultiDisk(const ShardSource& src) {
  return Status::Corruption(src.name() +
                            ": multi-disk (split or spanned) zip archives are not supported; "
                            "join the parts and repack with `mkpack pack`");
}

// The ZIP64 end record that `locator_pos`'s locator names. The locator's offset is relative to
// the archive start, which is unknown while a junk prefix may exist, so the record is accepted
// either where the locator says or right before the locator (a 56-byte record without extensible
// data); from the latter the junk length follows.
Result<uint64_t> FindZip64Eocd(const ShardSource& src, uint64_t locator_pos,
                               uint64_t declared_offset) {
  std::array<uint8_t, 4> sig{};
  auto has_sig_at = [&](uint64_t pos) -> Result<bool> {
    PACKFS_RETURN_IF_ERROR(ReadExactly(src, pos, sig, "the ZIP64 end of central directory record"));
    ByteReader r(sig);
    return r.U32() == kZip64EocdSig;
  };
  // Right before the locator first: with a junk prefix the declared (relative) offset lands in
  // member data, where a stray signature could otherwise be mistaken for the record.
  if (locator_pos >= kZip64EocdSize) {
    const uint64_t before = locator_pos - kZip64EocdSize;
    PACKFS_ASSIGN_OR_RETURN(bool there, has_sig_at(before));
    // The record cannot sit earlier in the file than the offset the locator declares.
    if (there && declared_offset <= before) return before;
  }
  if (declared_offset <= locator_pos && locator_pos - declared_offset >= kZip64EocdSize) {
    PACKFS_ASSIGN_OR_RETURN(bool there, has_sig_at(declared_offset));
    if (there) return declared_offset;  // a longer record (with extensible data)
  }
  if (declared_offset >= src.size()) {
    return Status::Corruption(src.name() + ": the ZIP64 end of central directory locator points to offset " +
                              std::to_string(declared_offset) + ", outside the file (" +
                              std::to_string(src.size()) + " bytes); the archive is damaged");
  }
  return Status::Corruption(src.name() + ": the ZIP64 end of central directory locator points to offset " +
                            std::to_string(declared_offset) +
                            ", where there is no ZIP64 end record; the archive is damaged");
}

// Validates one EOCD candidate (already known to have a comment reaching the end of the file).
Result<ZipEnd> CheckCandidate(const ShardSource& src, const Eocd& e) {
  ZipEnd end;
  uint64_t end_pos = e.pos;  // first end record; the central directory ends right before it
  uint64_t cd_offset = e.cd_offset, cd_size = e.cd_size, entries = e.entries;

  std::array<uint8_t, kZip64LocatorSize> loc{};
  bool zip64 = false;
  if (e.pos >= kZip64LocatorSize) {
    PACKFS_RETURN_IF_ERROR(
        ReadExactly(src, e.pos - kZip64LocatorSize, loc, "the ZIP64 end of central directory locator"));
    ByteReader lr(loc);
    zip64 = lr.U32() == kZip64LocatorSig;
    if (zip64) {
      const uint32_t z64_disk = lr.U32();
      const uint64_t z64_offset = lr.U64();
      const uint32_t total_disks = lr.U32();
      if (z64_disk != 0 || total_disks > 1) return MultiDisk(src);
      PACKFS_ASSIGN_OR_RETURN(uint64_t z64_pos,
                              FindZip64Eocd(src, e.pos - kZip64LocatorSize, z64_offset));
      std::array<uint8_t, kZip64EocdSize> rec{};
      PACKFS_RETURN_IF_ERROR(ReadExactly(src, z64_pos, rec, "the ZIP64 end of central directory record"));
      ByteReader zr(rec);
      zr.Skip(4 + 8 + 2 + 2);  // signature, record size, versions
      const uint32_t disk = zr.U32(), cd_disk = zr.U32();
      const uint64_t entries_disk = zr.U64();
      entries = zr.U64();
      cd_size = zr.U64();
      cd_offset = zr.U64();
      if (disk != 0 || cd_disk != 0 || entries_disk != entries) return MultiDisk(src);
      end_pos = z64_pos;
    }
  }
  if (!zip64 && (e.disk != 0 || e.cd_disk != 0 || e.entries_disk != e.entries)) {
    return MultiDisk(src);
  }
  if (cd_offset > end_pos || cd_size > end_pos - cd_offset) {
    return Status::Corruption(src.name() + ": the central directory (offset " +
                              std::to_string(cd_offset) + ", " + std::to_string(cd_size) +
                              " bytes) lies outside the file; the archive is damaged or truncated");
  }
  end.archive_start = end_pos - cd_offset - cd_size;
  end.cd_offset = end_pos - cd_size;
  end.cd_size = cd_size;
  end.entries = entries;
  end.zip64 = zip64;
  // Every central header is at least 46 bytes: a count the directory cannot hold is refused here,
  // before anyone allocates for it.
  // (A zero count with a large directory may be 65536 entries wrapped in the 16-bit field.)
  const bool may_wrap = !zip64 && cd_size >= uint64_t{0x10000} * kCentralHeaderSize;
  if (entries > cd_size / kCentralHeaderSize || (entries == 0 && cd_size != 0 && !may_wrap)) {
    return Status::Corruption(src.name() + ": the end record declares " + std::to_string(entries) +
                              " entries but the central directory is " + std::to_string(cd_size) +
                              " bytes; the entry count disagrees with the directory");
  }
  if (cd_size > 0) {
    std::array<uint8_t, 4> sig{};
    PACKFS_RETURN_IF_ERROR(ReadExactly(src, end.cd_offset, sig, "the central directory"));
    ByteReader sr(sig);
    if (sr.U32() != kCentralSig) {
      return Status::Corruption(src.name() + ": no central directory header at offset " +
                                std::to_string(end.cd_offset) +
                                " where the end record places the central directory");
    }
  }
  return end;
}

}  // namespace

Result<ZipEnd> FindZipEnd(const ShardSource& src) {
  const uint64_t size = src.size();
  if (size < kEocdSize) return NoEnd(src);
  const uint64_t tail_len = std::min<uint64_t>(size, uint64_t{kEocdSize} + kMaxCommentSize);
  const uint64_t tail_start = size - tail_len;
  std::vector<uint8_t> tail(static_cast<size_t>(tail_len));
  PACKFS_RETURN_IF_ERROR(ReadExactly(src, tail_start, tail, "the end of central directory record"));

  Status first_error;
  for (size_t p = tail.size() - kEocdSize + 1; p-- > 0;) {
    if (tail[p] != 0x50 || tail[p + 1] != 0x4b || tail[p + 2] != 0x05 || tail[p + 3] != 0x06) {
      continue;
    }
    ByteReader r(std::span<const uint8_t>(tail).subspan(p));
    Eocd e;
    e.pos = tail_start + p;
    r.Skip(4);
    e.disk = r.U16();
    e.cd_disk = r.U16();
    e.entries_disk = r.U16();
    e.entries = r.U16();
    e.cd_size = r.U32();
    e.cd_offset = r.U32();
    const uint16_t comment_len = r.U16();
    if (!r.ok() || e.pos + kEocdSize + comment_len != size) continue;  // inside a comment
    Result<ZipEnd> end = CheckCandidate(src, e);
    if (end.ok()) return end;
    if (first_error.ok()) first_error = end.status();
  }
  return first_error.ok() ? NoEnd(src) : first_error;
}

}  // namespace packfs
