// Helpers shared by mkpack subcommands: opening pack sets with reported warnings, number
// formatting, and a small parallel-for. Not thread-safe unless stated.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/base/status.h"
#include "core/read/pack_set.h"
#include "core/remote/remote_pack_set.h"
#include "core/remote/url.h"

namespace packfs::mkpack {

// Prints "mkpack <cmd>: <status message>" to stderr.
void PrintError(const char* cmd, const Status& st);
void PrintWarning(const char* cmd, const std::string& msg);

// The options of commands that accept remote pack sets (https://host/data/media,
// s3://bucket/data/media): the same flags and defaults as packfs. Credentials come from the
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_ENDPOINT_URL,
// AWS_REGION), never from the command line.
struct RemoteCliOptions {
  std::string endpoint;
  std::string region;
  bool anonymous = false;
  int max_connections = 0;  // 0: HttpOptions' default
  std::string cache_dir;
};
// Adds --endpoint, --region, --anonymous, --max-connections and --cache-dir to `cmd`, bound to
// *opts (which must outlive the parse and the callback).
void AddRemoteOptions(CLI::App* cmd, RemoteCliOptions* opts);
// Environment first, then the flags given.
RemoteOptions MakeRemoteOptions(const RemoteCliOptions& cli);

// Opens a pack set, local or (for an http(s):// or s3:// location) remote, through
// OpenSourceSet (core/open/open_source.h); prints its warnings to stderr.
Result<std::unique_ptr<PackSet>> OpenPackSetForCli(const char* cmd, const std::string& dir,
                                                   const RemoteCliOptions& remote,
                                                   const PackSetOptions& opts = {});

// Whether mkpack reaches `location` as a remote set (an http(s):// or s3:// URL) rather than a
// local pack directory: OpenSourceSet's decision (core/open/open_source.h).
bool IsRemoteSet(const std::string& location);

// "1.23 GB", "456 kB" (SI units).
std::string HumanBytes(uint64_t bytes);
// "%08x".
std::string Hex32(uint32_t v);


}  // namespace packfs::mkpack
