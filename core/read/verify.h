// Full verification of a pack directory (what `mkpack verify` reports): every shard indexes, every
// member is STORED with a safe key, keys are unique across shards, every member's CRC-32 is right,
// and the catalog (when present) agrees with the shards. Reads every byte; shards in parallel.
// Stateless; the threads it starts are joined before it returns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/catalog/catalog.h"
#include "core/format/zip_reader.h"

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
Status CheckMemberCrcs(const ShardSource& src, const std::vector<ShardMember>& members,
                       std::vector<std::string>* problems, uint64_t* bytes_checked);

// A set of zip shards to verify wherever they live (a local directory, HTTP or S3 objects).
struct VerifyInput {
  std::string prefix;              // what messages call the pack directory ("media")
  std::string refresh_command;     // what messages advise for a stale catalog ("mkpack catalog X")
  // What messages advise for a shard the catalog lists but that is gone, whose members a plain
  // refresh would drop ("mkpack catalog --forget-missing X"); empty: refresh_command.
  std::string forget_missing_command;
  std::vector<std::string> names;  // shard file names in index order
  // Opens shard i; its name() is what messages call it. Called from the worker threads.
  std::function<Result<std::unique_ptr<ShardSource>>(size_t)> open;
  bool catalog_present = false;
  const Catalog* catalog = nullptr;  // null while present: it could not be opened
  std::string catalog_error;         // why it could not be opened
};

// Verifies the shards of `in` on `threads` threads (0: one per core) and compares the catalog
// with them. Every failure, unreadable shards included, is a problem in the report.
VerifyReport VerifyShards(const VerifyInput& in, int threads);

// Verifies the pack directory. Fails (non-OK) only for usage or I/O errors that stop the whole
// run (no such directory, tar shards); everything else is a problem in the report, including a
// directory without shards (the message says what was looked for) and the temp shards an
// interrupted `mkpack pack` left (the set is incomplete: `mkpack pack --resume` finishes it).
Result<VerifyReport> VerifyPackDir(const std::string& dir, int threads);

}  // namespace packfs
