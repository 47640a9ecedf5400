// Zip shard indexing: central directory walk, per-member checks against local headers, fingerprint.
//
// Flow: FindZipEnd (end records, archive start) -> one ReadAt of the whole central directory ->
// decode every entry with ByteReader (whole-shard Corruption for structural damage) -> per member,
// one local-header read and the checks that decide whether its bytes can be served exactly.
// The overlap check sorts every entry's local header offset and refuses a member whose header and
// data run into the next header, so a damaged size can never hand out a neighbour's bytes. A
// member that does not end exactly at the next header (or the central directory) — which every
// known writer guarantees — has its CRC checked, because a damaged local length may have shifted
// its data offset; that costs one read of the member, and only for such rare archives.
// Local headers are read through a ReadWindow (zip_local_header.h): where small members are
// packed back to back, one 256 KiB read serves thousands of headers, so the bytes every check
// sees are the same but a 65,534-member shard of 16-byte members costs ~20 reads instead of
// 65,534 (the fresh 1M-member catalog went from ~5.8 s to ~3.3 s of CPU). Members are checked
// in local-header order so the window only moves forward, and reported in directory order.
#include "core/format/zip_reader.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <ctime>
#include <optional>
#include <unordered_set>

#include "core/base/byte_reader.h"
#include "core/base/key.h"
#include "core/format/zip_end_records.h"
#include "core/format/zip_format.h"
#include "core/format/zip_local_header.h"

namespace packfs {
namespace {

using namespace packfs::zip;

constexpr const char* kRepack = "repack it with `mkpack pack`";


struct CentralEntry {
  std::string_view name;  // points into the central directory buffer
  uint16_t made_by = 0, flags = 0, method = 0, dos_time = 0, dos_date = 0;
  uint32_t crc32 = 0, external_attr = 0;
  uint64_t compressed_size = 0, size = 0, local_offset = 0, disk = 0;  // after ZIP64 extra
  std::optional<int64_t> ut_mtime;
  std::string zip64_problem;  // non-empty when a masked field has no ZIP64 value
};

const char* MethodName(uint16_t m) {
  switch (m) {
    case 1: return "shrink";
    case 2: case 3: case 4: case 5: return "reduce";
    case 6: return "implode";
    case 8: return "deflate";
    case 9: return "deflate64";
    case 10: return "PKWARE DCL implode";
    case 12: return "bzip2";
    case 14: return "lzma";
    case 18: return "IBM TERSE";
    case 19: return "IBM LZ77";
    case 20: case 93: return "zstd";
    case 94: return "mp3";
    case 95: return "xz";
    case 96: return "jpeg";
    case 97: return "wavpack";
    case 98: return "ppmd";
    case 99: return "AES encryption";
    default: return "unknown";
  }
}

// Decodes the extra fields of a central entry: ZIP64 values (only those whose fixed field is
// masked are present, in APPNOTE order) and the Info-ZIP extended timestamp.
void DecodeCentralExtra(std::span<const uint8_t> bytes, uint32_t csize32, uint32_t usize32,
                        uint32_t offset32, uint16_t disk16, CentralEntry* e) {
  e->compressed_size = csize32;
  e->size = usize32;
  e->local_offset = offset32;
  e->disk = disk16;
  const bool need64 =
      usize32 == k32Max || csize32 == k32Max || offset32 == k32Max || disk16 == k16Max;
  bool got64 = false;
  ByteReader extra(bytes);
  while (extra.remaining() >= 4) {
    const uint16_t id = extra.U16();
    const uint16_t len = extra.U16();
    ByteReader f(extra.Bytes(len));
    if (!extra.ok()) break;
    if (id == kExtraZip64 && need64 && !got64) {
      if (usize32 == k32Max) e->size = f.U64();
      if (csize32 == k32Max) e->compressed_size = f.U64();
      if (offset32 == k32Max) e->local_offset = f.U64();
      if (disk16 == k16Max) e->disk = f.U32();
      got64 = f.ok();
      if (!got64) e->zip64_problem = "has a ZIP64 extra field too short for its masked fields";
    } else if (id == kExtraTimestamp && len >= 5) {
      const uint8_t flags = f.U8();
      const int32_t mtime = static_cast<int32_t>(f.U32());
      if ((flags & 1) && f.ok()) e->ut_mtime = mtime;
    }
  }
  if (need64 && !got64 && e->zip64_problem.empty()) {
    e->zip64_problem = "has 32-bit fields marked as ZIP64 (0xFFFFFFFF) but no ZIP64 extra field";
  }
}

int64_t DosTimeUtc(uint16_t time, uint16_t date) {
  std::tm tm{};
  tm.tm_sec = (time & 0x1F) * 2;
  tm.tm_min = (time >> 5) & 0x3F;
  tm.tm_hour = time >> 11;
  tm.tm_mday = date & 0x1F;
  tm.tm_mon = ((date >> 5) & 0x0F) - 1;
  tm.tm_year = (date >> 9) + 80;
  return static_cast<int64_t>(timegm(&tm));
}

uint32_t ModeOf(const CentralEntry& e) {
  if ((e.made_by >> 8) != 3) return 0;  // host system: 3 = Unix
  const uint32_t mode = e.external_attr >> 16;
  return (mode & S_IFMT) != 0 ? mode : 0;
}

struct Directory {
  std::vector<uint8_t> bytes;
  std::vector<CentralEntry> entries;
};

// Reads and decodes the whole central directory. Whole-shard errors only.
Result<Directory> ReadCentral(const ShardSource& src, const ZipEnd& end) {
  Directory dir;
  dir.bytes.resize(static_cast<size_t>(end.cd_size));
  if (!dir.bytes.empty()) {
    PACKFS_RETURN_IF_ERROR(ReadExactly(src, end.cd_offset, dir.bytes, "the central directory"));
  }
  dir.entries.reserve(static_cast<size_t>(end.entries));  // bounded by cd_size / 46 (FindZipEnd)
  ByteReader r(dir.bytes);
  // Some old writers store more than 65535 entries without ZIP64, keeping only the count modulo
  // 65536 in the 16-bit field; the directory then holds more entries than declared. Those are
  // read too, and accepted only when the real count wraps to the declared one.
  const bool may_wrap = !end.zip64 && end.entries <= k16Max;
  for (uint64_t i = 0; i < end.entries || (may_wrap && r.remaining() > 0); ++i) {
    const uint64_t at = end.cd_offset + r.pos();
    if (r.U32() != kCentralSig || !r.ok()) {
      return Status::Corruption(src.name() + ": central directory entry " + std::to_string(i + 1) +
                                " of " + std::to_string(end.entries) + " (offset " +
                                std::to_string(at) +
                                ") has no central header signature; the entry count disagrees "
                                "with the directory");
    }
    CentralEntry e;
    e.made_by = r.U16();
    r.Skip(2);  // version needed
    e.flags = r.U16();
    e.method = r.U16();
    e.dos_time = r.U16();
    e.dos_date = r.U16();
    e.crc32 = r.U32();
    const uint32_t csize32 = r.U32();
    const uint32_t usize32 = r.U32();
    const uint16_t name_len = r.U16();
    const uint16_t extra_len = r.U16();
    const uint16_t comment_len = r.U16();
    const uint16_t disk16 = r.U16();
    r.Skip(2);  // internal attributes
    e.external_attr = r.U32();
    const uint32_t offset32 = r.U32();
    e.name = r.Chars(name_len);
    std::span<const uint8_t> extra = r.Bytes(extra_len);
    r.Skip(comment_len);
    if (!r.ok()) {
      return Status::Corruption(src.name() + ": central directory entry " + std::to_string(i + 1) +
                                " (offset " + std::to_string(at) +
                                ") runs past the end of the directory (damaged name, extra or "
                                "comment length)");
    }
    DecodeCentralExtra(extra, csize32, usize32, offset32, disk16, &e);
    if (e.disk != 0) {
      return Status::Corruption(src.name() + ": member " + QuoteKey(e.name) +
                                " lives on another disk; multi-disk zip archives are not supported");
    }
    dir.entries.push_back(e);
  }
  const uint64_t found = dir.entries.size();
  if (r.remaining() != 0 ||
      (found != end.entries && (found <= k16Max || found % 0x10000 != end.entries))) {
    return Status::Corruption(src.name() + ": the central directory holds " +
                              std::to_string(found) + " entries (and " +
                              std::to_string(r.remaining()) + " bytes more) but the end record "
                              "declares " + std::to_string(end.entries) +
                              "; the entry count disagrees with the directory");
  }
  std::unordered_set<std::string_view> seen;
  seen.reserve(dir.entries.size());
  for (const CentralEntry& e : dir.entries) {
    if (!seen.insert(e.name).second) {
      return Status::Corruption(src.name() + ": the name " + QuoteKey(e.name) +
                                " appears twice in the central directory; which copy is meant is "
                                "ambiguous: " + kRepack);
    }
  }
  return dir;
}

bool IsDirectoryEntry(const CentralEntry& e) {
  return !e.name.empty() && e.name.back() == '/' && e.size == 0 && e.compressed_size == 0;
}

// Checks that need only the central entry. Returns the problem text, or "" when servable so far.
std::string CentralProblem(const CentralEntry& e, const ZipEnd& end) {
  Status key = ValidateKey(e.name);
  if (!key.ok()) return "has an unsafe name (" + key.message() + "); rename it and " + kRepack;
  if (e.flags & (kFlagEncrypted | kFlagStrongEncryption)) {
    const bool strong = (e.flags & kFlagStrongEncryption) != 0;
    return std::string("is encrypted (flag ") + (strong ? "0x40, strong encryption" : "0x1") +
           "); packfs cannot serve encrypted members: " + kRepack + " from the decrypted file";
  }
  if (e.method != kMethodStored) {
    return "is compressed with method " + std::to_string(e.method) + " (" + MethodName(e.method) +
           "); packfs serves only STORED members: " + kRepack;
  }
  if (!e.zip64_problem.empty()) return e.zip64_problem + "; the archive is damaged: " + kRepack;
  if (e.compressed_size != e.size) {
    return "is STORED but its compressed size (" + std::to_string(e.compressed_size) +
           ") differs from its size (" + std::to_string(e.size) + "); the archive is damaged: " +
           kRepack;
  }
  const uint64_t archive_len = end.cd_offset - end.archive_start;
  if (e.local_offset >= archive_len || archive_len - e.local_offset < kLocalHeaderSize) {
    return "has a local header offset (" + std::to_string(e.local_offset) +
           ") outside the member area of the archive (it points into the central directory, "
           "the end records or past the end of the file); the archive is damaged: " + kRepack;
  }
  return "";
}

// Checks the local header against the central entry; fills data_offset on success.
// Extents are checked before sizes so that a member reaching into its neighbour is reported
// as an overlap, the more useful diagnosis. `headers` holds every local header offset, sorted.
std::string LocalProblem(const ShardSource& src, const CentralEntry& e, const ZipEnd& end,
                         const std::vector<uint64_t>& headers, uint64_t local_abs,
                         uint64_t* data_offset, Status* io_error) {
  // A failed read (EIO, a vanished network object) is not this member's fault: it fails the
  // shard through *io_error instead of quietly refusing the member.
  auto read_failed = [&](const Status& st) {
    if (st.code() != Code::kCorruption) *io_error = st;
    return "could not be checked: " + st.message();
  };
  Result<LocalHeader> lh = ReadLocal(src, local_abs, e.name.size());
  if (!lh.ok() && lh.status().code() != Code::kCorruption) return read_failed(lh.status());
  if (!lh.ok()) return "has a bad local header: " + lh.status().message() + "; " + kRepack;
  const LocalHeader& h = *lh;
  if (h.name != e.name) {
    return "has a local header at offset " + std::to_string(local_abs) + " naming " +
           QuoteKey(h.name) + "; local and central headers disagree: " + kRepack;
  }
  if (h.method != e.method) {
    return "has local method " + std::to_string(h.method) + " but central method " +
           std::to_string(e.method) + "; local and central headers disagree: " + kRepack;
  }
  if (h.flags & (kFlagEncrypted | kFlagStrongEncryption)) {
    return "is marked encrypted in its local header; packfs cannot serve encrypted members: " +
           std::string(kRepack);
  }
  if (!h.extra_well_formed) {
    return "has a malformed local extra field, so its data offset cannot be trusted: " +
           std::string(kRepack);
  }
  if (h.data_offset > end.cd_offset || e.size > end.cd_offset - h.data_offset) {
    return "has data (" + std::to_string(e.size) + " bytes at offset " +
           std::to_string(h.data_offset) +
           ") that runs into the central directory or past the end of the file: " + kRepack;
  }
  auto next = std::upper_bound(headers.begin(), headers.end(), local_abs);
  if (next != headers.end() && h.data_offset + e.size > *next) {
    return "overlaps the member whose local header is at offset " + std::to_string(*next) +
           " (its data would end at " + std::to_string(h.data_offset + e.size) +
           "); refusing it so it never returns another member's bytes: " + kRepack;
  }
  const bool descriptor = ((h.flags | e.flags) & kFlagDataDescriptor) != 0;
  if (!descriptor && h.sizes_known &&
      (h.size != e.size || h.compressed_size != e.compressed_size || h.crc32 != e.crc32)) {
    return "has local sizes/CRC (" + std::to_string(h.size) + " bytes) that disagree with the "
           "central directory (" + std::to_string(e.size) + " bytes): " + kRepack;
  }
  if (!h.sizes_known) {
    return "has local sizes marked as ZIP64 (0xFFFFFFFF) but no ZIP64 extra field; the archive "
           "is damaged: " + std::string(kRepack);
  }
  size_t descriptor_len = 0;
  if (descriptor) {
    Result<size_t> len =
        DataDescriptorLength(src, h.data_offset + e.size, end.cd_offset, e.crc32, e.size);
    if (!len.ok()) return read_failed(len.status());
    descriptor_len = *len;
    if (descriptor_len == 0) {
      return "uses a data descriptor that is missing or disagrees with the central directory "
             "(crc/size); the archive is damaged: " + std::string(kRepack);
    }
  }
  // Writers pack members back to back, so the member (and its descriptor) ends exactly where the
  // next local header or the central directory starts. When it does not, a damaged length may
  // have shifted the data offset: only a CRC over the data can then vouch for the bytes.
  const uint64_t boundary = next != headers.end() ? *next : end.cd_offset;
  if (h.data_offset + e.size + descriptor_len != boundary) {
    Result<uint32_t> crc = CrcOfRange(src, h.data_offset, e.size);
    if (!crc.ok()) return read_failed(crc.status());
    if (*crc != e.crc32) {
      return "has data whose CRC-32 does not match the central directory (its headers are "
             "damaged or the data changed): " + std::string(kRepack);
    }
  }
  *data_offset = h.data_offset;
  return "";
}

std::string MemberMessage(const ShardSource& src, std::string_view name, const std::string& what) {
  return src.name() + ": member " + QuoteKey(name) + " " + what;
}

}  // namespace

Result<ShardIndex> ReadZipIndex(const ShardSource& src) {
  return ReadZipIndex(src, ZipIndexOptions{});
}

Result<ShardIndex> ReadZipIndex(const ShardSource& src, const ZipIndexOptions& options) {
  PACKFS_ASSIGN_OR_RETURN(ZipEnd end, FindZipEnd(src));
  PACKFS_ASSIGN_OR_RETURN(Directory dir, ReadCentral(src, end));

  ShardIndex index;
  index.archive_start = end.archive_start;
  index.cd_offset = end.cd_offset;
  index.cd_size = end.cd_size;
  index.cd_entries = dir.entries.size();  // equals the declared count, or wraps to it (16-bit)
  index.fingerprint = XXH3_64bits(dir.bytes.data(), dir.bytes.size());

  // Every local header inside the member area bounds the member before it, whatever the state
  // of its own entry: refusing a good member is safe, serving a neighbour's bytes is not.
  const uint64_t archive_len = end.cd_offset - end.archive_start;
  std::vector<uint64_t> headers;
  headers.reserve(dir.entries.size());
  for (const CentralEntry& e : dir.entries) {
    if (e.local_offset < archive_len) headers.push_back(end.archive_start + e.local_offset);
  }
  if (!std::is_sorted(headers.begin(), headers.end())) std::sort(headers.begin(), headers.end());

  // Members are checked in local-header order so the read window moves forward through the
  // file (writers usually emit the directory in that order already), and reported in central
  // directory order. An I/O error fails the shard whichever member meets it first.
  const size_t n = dir.entries.size();
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  auto by_offset = [&](uint32_t a, uint32_t b) {
    return dir.entries[a].local_offset < dir.entries[b].local_offset;
  };
  if (!std::is_sorted(order.begin(), order.end(), by_offset)) {
    std::stable_sort(order.begin(), order.end(), by_offset);
  }
  ReadWindow window(src, headers, options.read_window);
  std::vector<std::string> problems(n);
  std::vector<uint64_t> data_offsets(n, 0);
  for (uint32_t i : order) {
    const CentralEntry& e = dir.entries[i];
    if (IsDirectoryEntry(e)) continue;
    problems[i] = CentralProblem(e, end);
    if (problems[i].empty()) {
      Status io_error;
      problems[i] = LocalProblem(window, e, end, headers, end.archive_start + e.local_offset,
                                 &data_offsets[i], &io_error);
      if (!io_error.ok()) return io_error;
    }
  }

  index.members.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const CentralEntry& e = dir.entries[i];
    if (IsDirectoryEntry(e)) continue;
    if (!problems[i].empty()) {
      index.problems.push_back(MemberMessage(src, e.name, problems[i]));
      continue;
    }
    ShardMember m;
    m.name = std::string(e.name);
    m.local_header_offset = end.archive_start + e.local_offset;
    m.data_offset = data_offsets[i];
    m.size = e.size;
    m.crc32 = e.crc32;
    m.mode = ModeOf(e);
    m.mtime = e.ut_mtime ? *e.ut_mtime : DosTimeUtc(e.dos_time, e.dos_date);
    index.members.push_back(std::move(m));
  }
  return index;
}

Result<uint64_t> ReadLocalHeader(const ShardSource& src, uint64_t local_header_offset,
                                 std::string_view expected_name) {
  Result<LocalHeader> lh = ReadLocal(src, local_header_offset, expected_name.size());
  if (!lh.ok()) {
    return Status::Corruption(MemberMessage(src, expected_name, lh.status().message()) +
                              "; the shard changed or is damaged: rebuild the catalog with "
                              "`mkpack catalog`");
  }
  if (lh->name != expected_name) {
    return Status::Corruption(MemberMessage(
        src, expected_name,
        "is not at offset " + std::to_string(local_header_offset) + " (the local header there names " +
            QuoteKey(lh->name) + "); the shard changed since the catalog was built: rebuild it "
            "with `mkpack catalog`"));
  }
  if (lh->method != kMethodStored) {
    return Status::NotSupported(MemberMessage(
        src, expected_name,
        "is compressed with method " + std::to_string(lh->method) + " (" + MethodName(lh->method) +
            "); packfs serves only STORED members: " + kRepack));
  }
  if (lh->flags & (kFlagEncrypted | kFlagStrongEncryption)) {
    return Status::NotSupported(MemberMessage(
        src, expected_name, "is encrypted; packfs cannot serve encrypted members: " +
                                std::string(kRepack)));
  }
  if (!lh->extra_well_formed) {
    return Status::Corruption(MemberMessage(
        src, expected_name, "has a malformed local extra field: " + std::string(kRepack)));
  }
  return lh->data_offset;
}

Result<uint64_t> ZipFingerprint(const ShardSource& src) {
  PACKFS_ASSIGN_OR_RETURN(ZipEnd end, FindZipEnd(src));
  std::vector<uint8_t> cd(static_cast<size_t>(end.cd_size));
  if (!cd.empty()) {
    PACKFS_RETURN_IF_ERROR(ReadExactly(src, end.cd_offset, cd, "the central directory"));
  }
  return static_cast<uint64_t>(XXH3_64bits(cd.data(), cd.size()));
}

}  // namespace packfs
