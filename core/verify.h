// Full verification of a pack directory (what `mkpack verify` reports): every shard indexes, every
// member is STORED with a safe key, keys are unique across shards, every member's CRC-32 is right,
// and the catalog (when present) agrees with the shards. Reads every byte; shards in parallel.
// Stateless; the threads it starts are joined before it returns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/shard_source.h"
#include "core/status.h"
#include "core/zip_reader.h"

namespace packfs {

struct VerifyReport {
  uint64_t shards = 0;
  uint64_t members = 0;
  uint64_t bytes = 0;           // member bytes checked
  bool catalog_present = false;
  std::vector<std::string> problems;  // empty: the set is OK
};

// Checks the CRC-32 of `members` of one shard, reading it front to back in large windows so that
// small members cost no syscall each. Appends one message per bad member to `problems`.
// Returns an error only when the shard cannot be read at all.
Status CheckMemberCrcs(const ShardSource& src, const std::vector<ZipMember>& members,
                       std::vector<std::string>* problems, uint64_t* bytes_checked);

// Verifies the pack directory. Fails (non-OK) only for usage or I/O errors that stop the whole
// run (no such directory, no shards); everything else is a problem in the report.
Result<VerifyReport> VerifyPackDir(const std::string& dir, int threads);

}  // namespace packfs
