// Tar shard indexing: walks the header blocks of a tar (reading headers only, seeking over data)
// and returns the regular-file members a pack set can serve as byte ranges of the tar. Stateless;
// thread-safe (all reads go through ShardSource::ReadAt on the caller's source).
//
// Formats: ustar (name + prefix), GNU (././@LongLink names and link names, base-256 numbers),
// pax ('x' records for path, linkpath, size, mtime; 'g' globals), as GNU tar and Python's tarfile
// write them. Every header's checksum is verified.
// Hard links become members whose bytes are their target's byte range. Symlinks, devices, FIFOs
// and directories are skipped and counted. Problems confined to one member (sparse member, unsafe
// name, hard link to nothing) refuse that member only and are described in `problems`. A damaged
// header or a truncated archive ends the walk: the members before it are kept, `truncated_at`
// says where the readable archive ends, and a problem says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"

namespace packfs {

// One header chain: optional 'x'/'L'/'K' blocks followed by the member's own header.
struct TarEntry {
  uint64_t header_offset = 0;  // first block of the chain
  uint64_t data_offset = 0;    // first data byte (right after the member's own header block)
  uint64_t next_offset = 0;    // where the next chain starts (data rounded up to blocks)
  uint64_t size = 0;           // data bytes (pax "size" overrides the header field)
  char type = '0';             // type flag of the member's own header ('\0' and '7' read as '0')
  std::string name;            // as stored (pax path / long name applied), not yet normalized
  std::string linkname;
  uint32_t mode = 0;           // permission bits from the header
  int64_t mtime = 0;           // seconds since the epoch (pax mtime, fractional part dropped)
  bool sparse = false;         // GNU sparse ('S', or pax GNU.sparse.* records)
  bool end = false;            // a zero block: the end-of-archive marker (other fields unset)
  // For a 'g' chain: its records, which the caller applies to all following members.
  std::vector<std::pair<std::string, std::string>> global_records;
};

// Defaults from earlier 'g' headers (pax globals).
struct TarGlobals {
  std::optional<std::string> path;
  std::optional<uint64_t> size;
  std::optional<int64_t> mtime;
};

// Parses the header chain at `offset` (a block boundary). Fails with Corruption naming the shard
// and offset on a bad checksum, a malformed number or pax record, or a chain running past the end
// of the source.
Result<TarEntry> ReadTarEntry(const ShardSource& src, uint64_t offset,
                              const TarGlobals& globals = {});

// A member name made a key: leading "./" and "/" dropped, trailing "/" dropped.
std::string NormalizeTarName(std::string_view name);

struct TarMember {
  std::string name;            // the key (validated)
  uint64_t header_offset = 0;  // first block of the member's own header chain
  uint64_t data_offset = 0;    // for hard links: the target's data
  uint64_t size = 0;
  uint32_t mode = 0;           // S_IFREG | permission bits
  int64_t mtime = 0;
  bool hard_link = false;
};

struct TarIndex {
  std::vector<TarMember> members;     // archive order; a name stored twice keeps the later copy
  std::vector<std::string> problems;  // one message per refused member, naming shard and member
  uint64_t skipped_symlinks = 0;
  uint64_t skipped_special = 0;       // devices, FIFOs, volume labels
  uint64_t skipped_dirs = 0;
  uint64_t hard_links = 0;
  // Set when the archive ends early (damaged header, truncated data): the offset where the
  // readable part ends.
  std::optional<uint64_t> truncated_at;
  uint64_t fingerprint = 0;  // XXH3-64 of every header block read (identifies the layout)
};

struct TarIndexOptions {
  // Bytes read at once while members are small, so several headers come in one ReadAt; after a
  // large member only kSmallRead bytes are read at the next header. 0 reads each block alone.
  // The result never depends on it, only the number of ReadAt calls.
  size_t read_window = 256 * 1024;
};

// Indexes the whole tar. Fails (naming the shard) only when not even the first header is a valid
// tar header; later damage is reported through truncated_at and problems.
Result<TarIndex> ReadTarIndex(const ShardSource& src, const TarIndexOptions& options = {});

// XXH3-64 fingerprint of the tar's headers, as ReadTarIndex computes it.
Result<uint64_t> TarFingerprint(const ShardSource& src);

// The once-per-member check before serving bytes from a catalog: the header chain at
// `header_offset` must parse, name `key`, and be a regular file whose data is
// [data_offset, data_offset + size), or a hard link whose target's header block sits right before
// `data_offset`. Any difference is a Corruption status describing it.
Status CheckTarMember(const ShardSource& src, uint64_t header_offset, std::string_view key,
                      uint64_t data_offset, uint64_t size);

// True for shard file names a pack set serves as tar shards ("*.tar").
bool IsTarShardName(std::string_view name);

}  // namespace packfs
