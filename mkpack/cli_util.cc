// Shared mkpack helpers.
#include "mkpack/cli_util.h"

#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/open/open_source.h"

namespace packfs::mkpack {

void PrintError(const char* cmd, const Status& st) {
  std::fprintf(stderr, "mkpack %s: %s\n", cmd, st.message().c_str());
}

void PrintWarning(const char* cmd, const std::string& msg) {
  std::fprintf(stderr, "mkpack %s: warning: %s\n", cmd, msg.c_str());
}

Result<std::unique_ptr<PackSet>> OpenPackSetForCli(const char* cmd, const std::string& dir,
                                                   const RemoteCliOptions& remote,
                                                   const PackSetOptions& opts) {
  OpenSourceOptions options;
  options.pack = opts;
  options.remote = MakeRemoteOptions(remote);
  auto ps = OpenSourceSet(SourceLocation{dir, {}}, options);
  if (!ps.ok()) return ps.status();
  for (const auto& w : (*ps)->warnings()) PrintWarning(cmd, w);
  return ps;
}

bool IsRemoteSet(const std::string& location) {
  OpenSourceOptions options;
  options.remote.emplace();
  Result<SourceKind> kind = ClassifySource(SourceLocation{location, {}}, options);
  return kind.ok() && *kind == SourceKind::kRemote;
}

void AddRemoteOptions(CLI::App* cmd, RemoteCliOptions* opts) {
  cmd->add_option("--endpoint", opts->endpoint,
                  "S3-compatible endpoint for s3:// sets, e.g. http://127.0.0.1:9000 "
                  "(default: $AWS_ENDPOINT_URL_S3 or $AWS_ENDPOINT_URL, else AWS)");
  cmd->add_option("--region", opts->region,
                  "S3 region (default: $AWS_REGION or $AWS_DEFAULT_REGION, else us-east-1)");
  cmd->add_flag("--anonymous", opts->anonymous,
                "unsigned S3 requests (public buckets), even when AWS_ACCESS_KEY_ID is set");
  cmd->add_option("--max-connections", opts->max_connections,
                  "concurrent HTTP requests to a remote set (default 8)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--cache-dir", opts->cache_dir,
                  "where catalogs of remote sets are cached (default: $XDG_CACHE_HOME/packfs or "
                  "~/.cache/packfs)");
}

RemoteOptions MakeRemoteOptions(const RemoteCliOptions& cli) {
  RemoteOptions r;
  r.s3 = S3Config::FromEnvironment();
  if (!cli.endpoint.empty()) r.s3.endpoint = cli.endpoint;
  if (!cli.region.empty()) r.s3.region = cli.region;
  if (cli.anonymous) r.s3.anonymous = true;
  if (cli.max_connections > 0) r.http.max_connections = static_cast<size_t>(cli.max_connections);
  if (!cli.cache_dir.empty()) {
    std::error_code ec;
    r.cache_dir = std::filesystem::absolute(cli.cache_dir, ec).string();
    if (ec) r.cache_dir = cli.cache_dir;
  }
  return r;
}

std::string HumanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 5) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  }
  return buf;
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

}  // namespace packfs::mkpack
