// Test helper: hand-builds zip archive bytes with every variant the reader must handle (ZIP64
// end records and extras, data descriptors, junk prefixes, comments with fake end records,
// directory entries, Unix modes, extended timestamps, deliberately inconsistent headers).
// Pure functions over value types; thread-compatible. Nothing here uses packfs's zip writer, so
// reader tests do not depend on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace packfs::testing {

struct ZipBuilderEntry {
  std::string name;
  std::string data;  // stored as given; `method` only changes the header field
  uint16_t method = 0;
  uint16_t flags = 0;             // extra general-purpose bits (e.g. 0x1 encrypted)
  bool data_descriptor = false;   // flag 0x8: local sizes/CRC zero, descriptor after the data
  bool descriptor_signature = true;
  bool zip64_central = false;     // central sizes and offset masked, values in a ZIP64 extra
  bool zip64_local = false;       // local sizes masked, values in a ZIP64 extra
  std::string local_extra;        // raw extra records appended to the local header's extra
  std::string central_extra;      // raw extra records appended to the central entry's extra
  std::string gap_after;          // unreferenced bytes after the data (and descriptor)
  uint16_t version_made_by = 0x031E;  // Unix, 3.0
  uint32_t external_attr = 0100644u << 16;
  uint16_t dos_time = 0x6000;     // 12:00:00
  uint16_t dos_date = 0x5A21;     // 2025-01-01
  std::optional<int32_t> ut_mtime;  // adds an extended-timestamp extra (central and local)
  // Deliberate inconsistencies.
  std::optional<std::string> local_name;      // name written in the local header
  std::optional<uint16_t> local_method;
  std::optional<uint64_t> central_size;       // uncompressed size in the central entry
  std::optional<uint64_t> central_csize;      // compressed size in the central entry
  std::optional<uint64_t> central_offset;     // local header offset in the central entry (relative)
  std::optional<uint32_t> central_crc;
};

struct ZipBuilderOptions {
  std::string junk_prefix;      // bytes before the archive; offsets stay relative to the archive
  std::string comment;          // archive comment (may contain a fake end record)
  bool zip64_end = false;       // write ZIP64 EOCD + locator, mask the EOCD fields
  std::optional<uint64_t> declared_entries;  // override the entry count in the end record(s)
  bool wrap_entry_count = false;  // without zip64_end: store the count modulo 65536 (old writers)
  std::optional<uint16_t> eocd_disk;         // override "number of this disk"
  std::optional<uint64_t> locator_offset;    // override the ZIP64 locator's record offset
};

struct BuiltZip {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> local_offsets;  // absolute, per entry
  std::vector<uint64_t> data_offsets;   // absolute, per entry
  uint64_t cd_offset = 0;               // absolute
  uint64_t cd_size = 0;
  uint64_t eocd_offset = 0;             // absolute offset of the classic end record
};

BuiltZip BuildZip(const std::vector<ZipBuilderEntry>& entries, const ZipBuilderOptions& opt = {});

// A plain end-of-central-directory record (22 bytes + comment) for embedding fake records.
std::string FakeEocd(uint16_t entries, uint32_t cd_size, uint32_t cd_offset, uint16_t comment_len);

}  // namespace packfs::testing
