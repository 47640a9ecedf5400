// Tar shard indexing: header-chain parsing, the archive walk, and the per-member header check
// (see tar_reader.h).
#include "core/format/tar_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <xxhash.h>

#include "core/base/key.h"
#include "core/format/tar_format.h"

namespace packfs {
namespace {

using Block = std::span<const uint8_t>;

// Longest GNU long name / pax header we accept. Real names are at most a few KiB; the limits only
// stop a damaged size field from making us allocate gigabytes.
constexpr uint64_t kMaxLongName = 1 << 20;
constexpr uint64_t kMaxPaxData = 16 << 20;
// Bytes read at the next header after a large member (covers a pax header, its records and the
// member's own header, the usual chain, in one ReadAt).
constexpr size_t kSmallRead = 4096;

std::string At(uint64_t offset) { return "offset " + std::to_string(offset); }

// A NUL-terminated (or field-filling) string field.
std::string_view Field(Block b, size_t off, size_t len) {
  const char* p = reinterpret_cast<const char*>(b.data() + off);
  return std::string_view(p, strnlen(p, len));
}

// An octal or base-256 (GNU, high bit of the first byte set) numeric field. Returns false when
// the field is malformed or the value does not fit.
bool ParseNumber(Block b, size_t off, size_t len, int64_t* out) {
  const uint8_t* f = b.data() + off;
  if (f[0] & 0x80) {
    const bool negative = f[0] == 0xff;
    uint64_t v = negative ? ~uint64_t{0} : (f[0] & 0x7f);
    for (size_t i = 1; i < len; ++i) {
      if (!negative && (v >> 56) != 0) return false;
      if (negative && (v >> 56) != 0xff) return false;
      v = (v << 8) | f[i];
    }
    if (!negative && v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
    return true;
  }
  size_t i = 0;
  while (i < len && (f[i] == ' ' || f[i] == 0)) ++i;  // leading padding (an empty field is 0)
  uint64_t v = 0;
  for (; i < len && f[i] >= '0' && f[i] <= '7'; ++i) {
    if (v >> 60) return false;
    v = v * 8 + (f[i] - '0');
  }
  for (; i < len; ++i) {  // only terminators after the digits
    if (f[i] != ' ' && f[i] != 0) return false;
  }
  *out = static_cast<int64_t>(v);
  return true;
}

bool IsZeroBlock(Block b) {
  return std::all_of(b.begin(), b.end(), [](uint8_t c) { return c == 0; });
}

// The stored checksum matches the unsigned (POSIX) or signed (old Sun tar) sum of the block with
// the checksum field read as spaces.
bool ChecksumOk(Block b) {
  int64_t stored = 0;
  if (!ParseNumber(b, tar::kChksumOff, tar::kChksumLen, &stored)) return false;
  int64_t usum = 0, ssum = 0;
  for (size_t i = 0; i < tar::kBlockSize; ++i) {
    const bool in_field = i >= tar::kChksumOff && i < tar::kChksumOff + tar::kChksumLen;
    const uint8_t c = in_field ? ' ' : b[i];
    usum += c;
    ssum += static_cast<int8_t>(c);
  }
  return stored == usum || stored == ssum;
}

bool IsPosixUstar(Block b) { return std::memcmp(b.data() + tar::kMagicOff, "ustar\0" "00", 8) == 0; }

bool ParseDecimal(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// pax mtime: "[-]SECONDS[.FRACTION]"; the fraction is dropped.
bool ParsePaxTime(std::string_view s, int64_t* out) {
  bool negative = !s.empty() && s[0] == '-';
  if (negative) s.remove_prefix(1);
  size_t dot = s.find('.');
  uint64_t v = 0;
  if (!ParseDecimal(s.substr(0, dot), &v) || v > static_cast<uint64_t>(INT64_MAX)) return false;
  if (dot != std::string_view::npos) {
    for (char c : s.substr(dot + 1)) {
      if (c < '0' || c > '9') return false;
    }
  }
  *out = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// Parses "LEN KEY=VALUE\n" records.
bool ParsePaxRecords(std::string_view data, std::vector<std::pair<std::string, std::string>>* out) {
  while (!data.empty()) {
    if (data[0] == '\0') break;  // some writers pad the record block with NULs
    size_t sp = data.find(' ');
    uint64_t len = 0;
    if (sp == std::string_view::npos || !ParseDecimal(data.substr(0, sp), &len) ||
        len <= sp + 1 || len > data.size() || data[len - 1] != '\n') {
      return false;
    }
    std::string_view rec = data.substr(sp + 1, len - sp - 2);
    size_t eq = rec.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    out->emplace_back(std::string(rec.substr(0, eq)), std::string(rec.substr(eq + 1)));
    data.remove_prefix(len);
  }
  return true;
}

// A source that serves reads from one cached window of the underlying source, so a walk over
// small members fetches many headers per ReadAt. Single-threaded (a mutable cache): it lives on
// the stack of one indexing call and is never shared.
class WindowSource final : public ShardSource {
 public:
  explicit WindowSource(const ShardSource& src) : src_(src) {}
  const std::string& name() const override { return src_.name(); }
  uint64_t size() const override { return src_.size(); }
  void set_window(size_t n) { window_ = n; }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    if (offset >= start_ && offset - start_ <= cache_.size() &&
        buf.size() <= cache_.size() - (offset - start_)) {
      std::memcpy(buf.data(), cache_.data() + (offset - start_), buf.size());
      return buf.size();
    }
    if (buf.size() >= window_) return src_.ReadAt(offset, buf);
    cache_.resize(window_);
    Result<size_t> got = src_.ReadAt(offset, std::span<uint8_t>(cache_.data(), cache_.size()));
    if (!got.ok()) {
      cache_.clear();
      return got;
    }
    cache_.resize(*got);
    start_ = offset;
    const size_t n = std::min(buf.size(), *got);
    std::memcpy(buf.data(), cache_.data(), n);
    return n;
  }

 private:
  const ShardSource& src_;
  size_t window_ = tar::kBlockSize;
  mutable std::vector<uint8_t> cache_;
  mutable uint64_t start_ = 0;
};

// Reads `size` bytes of extension data (long name, pax records) after the header at `offset`.
Result<std::string> ReadExtensionData(const ShardSource& src, uint64_t offset, uint64_t size,
                                      uint64_t limit, const char* what) {
  if (size > limit) {
    return Status::Corruption(src.name() + ": " + what + " at " + At(offset) + " claims " +
                              std::to_string(size) + " bytes (damaged header?)");
  }
  std::string data(size, '\0');
  PACKFS_RETURN_IF_ERROR(ReadExactly(
      src, offset + tar::kBlockSize,
      std::span<uint8_t>(reinterpret_cast<uint8_t*>(data.data()), data.size()), what));
  return data;
}

}  // namespace

std::string NormalizeTarName(std::string_view name) {
  for (;;) {
    if (name.starts_with("./")) {
      name.remove_prefix(2);
    } else if (name.starts_with("/")) {
      name.remove_prefix(1);
    } else {
      break;
    }
  }
  if (name == ".") name = "";
  while (!name.empty() && name.back() == '/') name.remove_suffix(1);
  return std::string(name);
}

bool IsTarShardName(std::string_view name) {
  return name.size() > 4 && name.ends_with(".tar") && !name.starts_with(".");
}

Result<TarEntry> ReadTarEntry(const ShardSource& src, uint64_t offset, const TarGlobals& globals) {
  TarEntry e;
  e.header_offset = offset;
  std::optional<std::string> long_name, long_link, pax_path, pax_link;
  // Plain values with flags rather than std::optional: g++ 12 reports a false
  // maybe-uninitialized for optional integers here.
  uint64_t pax_size = 0;
  int64_t pax_mtime = 0;
  bool have_pax_size = false, have_pax_mtime = false;
  bool pax_sparse = false;
  bool extended = false;  // saw an extension header, so a member header must follow
  uint8_t raw[tar::kBlockSize];
  for (;;) {
    PACKFS_RETURN_IF_ERROR(ReadExactly(src, offset, raw, "a tar header"));
    Block b(raw, sizeof raw);
    if (IsZeroBlock(b)) {
      if (extended) {
        return Status::Corruption(src.name() + ": end-of-archive block at " + At(offset) +
                                  " right after an extension header");
      }
      e.end = true;
      e.data_offset = e.next_offset = offset + tar::kBlockSize;
      return e;
    }
    if (!ChecksumOk(b)) {
      return Status::Corruption(src.name() + ": bad tar header checksum at " + At(offset) +
                                " (not a tar, or damaged)");
    }
    int64_t size = 0;
    if (!ParseNumber(b, tar::kSizeOff, tar::kSizeLen, &size) || size < 0) {
      return Status::Corruption(src.name() + ": malformed size field in the tar header at " +
                                At(offset));
    }
    const char type = static_cast<char>(raw[tar::kTypeOff]);
    const uint64_t data_at = offset + tar::kBlockSize;
    const uint64_t next = data_at + tar::PaddedSize(static_cast<uint64_t>(size));
    if (type == tar::kGnuLongName || type == tar::kGnuLongLink) {
      PACKFS_ASSIGN_OR_RETURN(std::string s,
                              ReadExtensionData(src, offset, static_cast<uint64_t>(size),
                                                kMaxLongName, "a GNU long name"));
      s.resize(strnlen(s.data(), s.size()));
      (type == tar::kGnuLongName ? long_name : long_link) = std::move(s);
      extended = true;
      offset = next;
      continue;
    }
    if (type == tar::kPaxLocal || type == tar::kPaxGlobal) {
      PACKFS_ASSIGN_OR_RETURN(std::string s,
                              ReadExtensionData(src, offset, static_cast<uint64_t>(size),
                                                kMaxPaxData, "pax records"));
      std::vector<std::pair<std::string, std::string>> recs;
      if (!ParsePaxRecords(s, &recs)) {
        return Status::Corruption(src.name() + ": malformed pax records at " + At(offset));
      }
      if (type == tar::kPaxGlobal) {
        if (extended) {
          return Status::Corruption(src.name() + ": pax global header at " + At(offset) +
                                    " inside another member's header chain");
        }
        e.type = tar::kPaxGlobal;
        e.global_records = std::move(recs);
        e.data_offset = data_at;
        e.next_offset = next;
        return e;
      }
      for (auto& [k, v] : recs) {
        // An empty value deletes the keyword: the header field applies again.
        if (k == "path") {
          pax_path = v.empty() ? std::nullopt : std::optional(v);
        } else if (k == "linkpath") {
          pax_link = v.empty() ? std::nullopt : std::optional(v);
        } else if (k == "size") {
          have_pax_size = !v.empty();
          if (have_pax_size && !ParseDecimal(v, &pax_size)) {
            return Status::Corruption(src.name() + ": malformed pax size '" + v + "' at " +
                                      At(offset));
          }
        } else if (k == "mtime") {
          have_pax_mtime = !v.empty();
          if (have_pax_mtime && !ParsePaxTime(v, &pax_mtime)) {
            return Status::Corruption(src.name() + ": malformed pax mtime '" + v + "' at " +
                                      At(offset));
          }
        } else if (k.starts_with("GNU.sparse.")) {
          pax_sparse = true;
        }
      }
      extended = true;
      offset = next;
      continue;
    }

    // The member's own header.
    e.type = (type == tar::kRegularOld || type == tar::kContiguous) ? tar::kRegular : type;
    if (pax_path) {
      e.name = *pax_path;
    } else if (long_name) {
      e.name = *long_name;
    } else if (globals.path) {
      e.name = *globals.path;
    } else {
      std::string_view name = Field(b, tar::kNameOff, tar::kNameLen);
      std::string_view prefix = Field(b, tar::kPrefixOff, tar::kPrefixLen);
      e.name = IsPosixUstar(b) && !prefix.empty() ? std::string(prefix) + "/" + std::string(name)
                                                  : std::string(name);
    }
    e.linkname = pax_link ? *pax_link
                 : long_link ? *long_link
                             : std::string(Field(b, tar::kLinkOff, tar::kLinkLen));
    int64_t mode = 0, mtime = 0;
    if (!ParseNumber(b, tar::kModeOff, tar::kModeLen, &mode) ||
        !ParseNumber(b, tar::kMtimeOff, tar::kMtimeLen, &mtime)) {
      return Status::Corruption(src.name() + ": malformed mode or mtime field in the tar header at " +
                                At(offset));
    }
    e.mode = static_cast<uint32_t>(mode) & 07777;
    e.mtime = have_pax_mtime ? pax_mtime : globals.mtime ? *globals.mtime : mtime;
    e.size = have_pax_size ? pax_size : globals.size ? *globals.size : static_cast<uint64_t>(size);
    e.sparse = pax_sparse || type == tar::kGnuSparse;
    e.data_offset = data_at;
    if (type == tar::kGnuSparse && raw[482] != 0) {
      // Old GNU sparse: extension blocks of the sparse map sit between header and data; each
      // says in its byte 504 whether another follows.
      uint8_t ext[tar::kBlockSize];
      do {
        PACKFS_RETURN_IF_ERROR(ReadExactly(src, e.data_offset, ext, "a GNU sparse map block"));
        e.data_offset += tar::kBlockSize;
      } while (ext[504] != 0);
    }
    // As Python's tarfile and GNU tar do: links, devices, FIFOs and directories store no data,
    // whatever their size field says; every other type (including unknown ones) does.
    const bool has_data = !(e.type >= tar::kHardLink && e.type <= tar::kFifo);
    const uint64_t stored = type == tar::kGnuSparse ? static_cast<uint64_t>(size) : e.size;
    e.next_offset = has_data ? e.data_offset + tar::PaddedSize(stored) : e.data_offset;
    if (e.next_offset < e.data_offset) {
      return Status::Corruption(src.name() + ": member size at " + At(offset) + " overflows");
    }
    return e;
  }
}

Result<TarIndex> ReadTarIndex(const ShardSource& src, const TarIndexOptions& options) {
  TarIndex index;
  WindowSource win(src);
  const size_t window = std::max<size_t>(options.read_window, tar::kBlockSize);
  TarGlobals globals;
  std::unordered_map<std::string, size_t> by_name;  // key -> position in members
  uint64_t fp = 0;
  uint64_t offset = 0;
  size_t last_size = 0;  // data bytes of the previous chain: decides how much to read next
  auto stop = [&](uint64_t at, const std::string& why) {
    index.truncated_at = at;
    index.problems.push_back(why);
  };
  auto refuse = [&](const std::string& key, const std::string& why) {
    index.problems.push_back(src.name() + ": member " + QuoteKey(key) + ": " + why);
  };
  for (;;) {
    if (offset >= src.size()) {
      if (offset == 0) return Status::Corruption(src.name() + " is empty, not a tar");
      stop(offset, src.name() + ": the tar ends at " + At(offset) +
                       " without its end-of-archive blocks (truncated?); the members before it "
                       "are served");
      break;
    }
    win.set_window(options.read_window == 0 ? tar::kBlockSize
                   : last_size < window     ? window
                                            : std::min(window, kSmallRead));
    Result<TarEntry> got = ReadTarEntry(win, offset, globals);
    if (!got.ok()) {
      if (offset == 0) return got.status();
      stop(offset, got.status().message() + "; the tar is readable only up to " + At(offset) +
                       ", the members before it are served");
      break;
    }
    TarEntry& e = *got;
    if (e.end) break;
    {  // fingerprint: every header block of the chain
      std::vector<uint8_t> head(static_cast<size_t>(e.data_offset - e.header_offset));
      PACKFS_RETURN_IF_ERROR(ReadExactly(win, e.header_offset, head, "a tar header"));
      fp = XXH3_64bits_withSeed(head.data(), head.size(), fp);
    }
    last_size = static_cast<size_t>(std::min<uint64_t>(e.next_offset - e.data_offset, SIZE_MAX));
    if (e.next_offset > src.size() &&
        !(e.next_offset - src.size() < tar::kBlockSize && e.data_offset + e.size <= src.size())) {
      // The data (not just its last block's padding) runs past the end of the file.
      stop(e.header_offset, src.name() + ": member " + QuoteKey(e.name) + " needs bytes up to " +
                                std::to_string(e.data_offset + e.size) + " but the tar ends at " +
                                std::to_string(src.size()) + " (truncated); the members before " +
                                At(e.header_offset) + " are served");
      break;
    }
    offset = e.next_offset;
    if (e.type == tar::kPaxGlobal) {
      for (const auto& [k, v] : e.global_records) {
        uint64_t n = 0;
        int64_t t = 0;
        if (k == "path") globals.path = v.empty() ? std::nullopt : std::optional(v);
        if (k == "size") globals.size = ParseDecimal(v, &n) ? std::optional(n) : std::nullopt;
        if (k == "mtime") globals.mtime = ParsePaxTime(v, &t) ? std::optional(t) : std::nullopt;
      }
      continue;
    }
    const bool dir_like = e.type == tar::kDirectory || e.type == tar::kGnuDumpDir ||
                          (e.type == tar::kRegular && e.name.ends_with("/"));
    if (dir_like) {
      ++index.skipped_dirs;
      continue;
    }
    if (e.type == tar::kSymlink) {
      ++index.skipped_symlinks;
      continue;
    }
    if (e.type == tar::kCharDev || e.type == tar::kBlockDev || e.type == tar::kFifo ||
        e.type == tar::kGnuVolumeLabel) {
      ++index.skipped_special;
      continue;
    }
    const std::string key = NormalizeTarName(e.name);
    if (e.type != tar::kRegular && e.type != tar::kHardLink && e.type != tar::kGnuSparse) {
      refuse(key, std::string("unsupported tar entry type '") + e.type + "' at " +
                      At(e.header_offset) + "; skipped");
      continue;
    }
    if (Status st = ValidateKey(key); !st.ok()) {
      refuse(key, st.message() + "; skipped");
      continue;
    }
    if (e.sparse) {
      refuse(key, "sparse tar members are not supported (their bytes are not stored in one "
                  "range); re-create the tar without --sparse");
      continue;
    }
    TarMember m;
    m.name = key;
    m.header_offset = e.header_offset;
    m.data_offset = e.data_offset;
    m.size = e.size;
    m.mode = S_IFREG | e.mode;
    m.mtime = e.mtime;
    if (e.type == tar::kHardLink) {
      auto target = by_name.find(NormalizeTarName(e.linkname));
      if (target == by_name.end()) {
        refuse(key, "hard link to " + QuoteKey(e.linkname) +
                        ", which is not a regular file earlier in the tar; skipped");
        continue;
      }
      const TarMember& t = index.members[target->second];
      m.data_offset = t.data_offset;
      m.size = t.size;
      m.hard_link = true;
      ++index.hard_links;
    }
    auto [it, fresh] = by_name.emplace(key, index.members.size());
    if (fresh) {
      index.members.push_back(std::move(m));
    } else {
      // Extraction keeps the last copy; so do we.
      refuse(key, "stored twice; the later copy (at " + At(e.header_offset) + ") is served");
      index.members[it->second] = std::move(m);
    }
  }
  index.fingerprint = fp;
  return index;
}

Result<uint64_t> TarFingerprint(const ShardSource& src) {
  PACKFS_ASSIGN_OR_RETURN(TarIndex index, ReadTarIndex(src));
  return index.fingerprint;
}

Status CheckTarMember(const ShardSource& src, uint64_t header_offset, std::string_view key,
                      uint64_t data_offset, uint64_t size) {
  PACKFS_ASSIGN_OR_RETURN(TarEntry e, ReadTarEntry(src, header_offset));
  if (e.end || e.type == tar::kPaxGlobal) {
    return Status::Corruption("no member header at " + At(header_offset));
  }
  if (NormalizeTarName(e.name) != key) {
    return Status::Corruption("the header at " + At(header_offset) + " names " +
                              QuoteKey(e.name));
  }
  if (e.sparse) return Status::Corruption("the member became a sparse member");
  if (data_offset > src.size() || size > src.size() - data_offset) {
    return Status::Corruption("the data runs past the end of the tar");
  }
  if (e.type == tar::kRegular) {
    if (e.data_offset != data_offset || e.size != size) {
      return Status::Corruption("the header says " + std::to_string(e.size) + " bytes at " +
                                At(e.data_offset) + ", the catalog says " + std::to_string(size) +
                                " at " + At(data_offset));
    }
    return Status::OK();
  }
  if (e.type == tar::kHardLink) {
    // The target's own header block sits right before its data.
    uint8_t raw[tar::kBlockSize];
    if (data_offset < tar::kBlockSize) return Status::Corruption("hard link target out of range");
    PACKFS_RETURN_IF_ERROR(ReadExactly(src, data_offset - tar::kBlockSize, raw, "a tar header"));
    Block b(raw, sizeof raw);
    const char t = static_cast<char>(raw[tar::kTypeOff]);
    if (IsZeroBlock(b) || !ChecksumOk(b) ||
        !(t == tar::kRegular || t == tar::kRegularOld || t == tar::kContiguous)) {
      return Status::Corruption("no regular file header in front of the hard link's target data");
    }
    return Status::OK();
  }
  return Status::Corruption(std::string("the header at ") + At(header_offset) +
                            " is of type '" + e.type + "', not a file");
}

}  // namespace packfs
