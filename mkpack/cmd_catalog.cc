// `mkpack catalog DIR|URL`: builds, refreshes or checks the SQLite catalog of a pack set; for a
// remote set, builds it over ranged reads and uploads it (s3 with credentials) or writes it to a
// local file to be published beside the shards.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/base/json.h"
#include "core/read/pack_set.h"
#include "core/remote/remote_catalog.h"
#include "core/remote/remote_maintenance.h"
#include "core/remote/url.h"
#include "mkpack/cli_util.h"
#include "mkpack/commands.h"

namespace packfs::mkpack {

namespace {

// The remote half of `mkpack catalog`; returns the exit code.
int RunRemoteCatalog(const std::string& location, const std::string& output,
                     const RemoteCliOptions& cli, int threads, bool check, bool json) {
  if (check) {
    PrintError("catalog", Status::InvalidArgument(
                              "--check reads a local pack directory; for " + location +
                              " run `mkpack verify " + location + "`, which compares its " +
                              "catalog with every shard"));
    return kExitError;
  }
  const RemoteOptions options = MakeRemoteOptions(cli);
  // Upload only where it can work: s3 with a key. A signed PUT of the catalog needs write
  // access, which read-only keys lack; the error then says where the local copy is.
  Result<Url> url = ParseUrl(location);  // the scheme as the remote set read it (any case)
  const bool is_s3 = url.ok() && url->is_s3();
  const bool signed_s3 = is_s3 && !options.s3.anonymous && !options.s3.access_key.empty();
  const bool upload = output.empty() && signed_s3;
  if (!upload && output.empty()) {
    // No silent default file: a catalog dropped into the working directory could overwrite one.
    const std::string why =
        is_s3 ? "no S3 credentials to upload it with" : "an HTTP server cannot be uploaded to";
    PrintError("catalog", Status::InvalidArgument(
                              "the catalog of " + location + " needs -o FILE (" + why +
                              "); then publish FILE as " + location + "/" + kCatalogFileName));
    return kExitError;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto built = BuildRemoteCatalog(location, options, threads);
  if (!built.ok()) {
    PrintError("catalog", built.status());
    return kExitError;
  }
  const CatalogData& data = built->data;
  std::string path = output;
  if (upload) {
    const std::string dir = options.cache_dir.empty() ? DefaultRemoteCacheDir() : options.cache_dir;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    path = dir + "/upload-" + RemoteCatalogCacheName(built->location);
  }
  Status st = WriteCatalog(path, data);
  if (!st.ok()) {
    PrintError("catalog", st);
    return kExitError;
  }
  std::string uploaded;
  if (upload) {
    auto url = UploadRemoteCatalog(built->location, options, path);
    if (!url.ok()) {
      PrintError("catalog", url.status());
      return kExitError;
    }
    uploaded = *url;
    std::filesystem::remove(path);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& p : data.problems) PrintWarning("catalog", p);
  if (json) {
    std::printf("{\"shards\": %zu, \"indexed\": %zu, \"reused\": 0, \"files\": %llu, "
                "\"directories\": %llu, \"bytes\": %llu, \"problems\": %zu, \"seconds\": %.3f, "
                "\"uploaded\": %s, \"output\": %s, \"url\": %s}\n",
                data.shards.size(), data.shards.size(), (unsigned long long)data.totals.files,
                (unsigned long long)data.totals.directories, (unsigned long long)data.totals.bytes,
                data.problems.size(), secs, upload ? "true" : "false",
                upload ? "null" : JsonString(path).c_str(), JsonString(built->catalog_url).c_str());
  } else {
    std::printf("catalog: %zu shards indexed over HTTP, %llu files, %s, %.2f s\n",
                data.shards.size(), (unsigned long long)data.totals.files,
                HumanBytes(data.totals.bytes).c_str(), secs);
    if (upload) {
      std::printf("uploaded %s\n", uploaded.c_str());
    } else {
      std::printf("wrote %s; publish it beside the shards as %s\n", path.c_str(),
                  built->catalog_url.c_str());
    }
  }
  return data.problems.empty() ? kExitOk : kExitProblems;
}

// Whether the catalog of the local pack directory lists shards the directory no longer holds.
bool MissingFromCatalogDir(const std::string& dir) {
  auto cat = Catalog::Open(dir + "/" + kCatalogFileName);
  auto names = ListShardFiles(dir);
  if (!cat.ok() || !names.ok()) return false;
  auto shards = (*cat)->Shards();
  return shards.ok() && !FindMissingShards(*shards, *names).empty();
}

}  // namespace

void RegisterCatalog(CLI::App& app, int* exit_code) {
  struct Opts {
    std::string dir;
    int threads = 0;
    bool check = false;
    bool forget_missing = false;
    bool json = false;
    std::string output;
    RemoteCliOptions remote;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "catalog",
      "Build or refresh DIR/.packfs-catalog.sqlite for any STORED zip set (mkpack, Python zipfile, "
      "zip -0). Only new or changed shards are read. A shard the catalog lists that is gone is "
      "never dropped silently: the refresh is refused (exit 1) unless --forget-missing.");
  cmd->add_option("dir", opts->dir, "pack directory, or its https:// or s3:// URL")->required();
  cmd->add_option("-j,--threads", opts->threads, "shards indexed in parallel (default: one per core)");
  cmd->add_flag("--check", opts->check,
                "compare every shard's fingerprint with the catalog and write nothing "
                "(exit 1 when the catalog is stale)");
  cmd->add_flag("--forget-missing", opts->forget_missing,
                "drop the members of shards the catalog lists but the directory no longer holds "
                "(without it such a refresh is refused, exit 1, naming the shards)");
  cmd->add_flag("--json", opts->json, "print the result as JSON on stdout");
  cmd->add_option("-o,--output", opts->output,
                  "remote sets: write the catalog to this file instead of uploading it (required "
                  "for http(s) and for s3 without credentials)");
  AddRemoteOptions(cmd, &opts->remote);
  cmd->callback([opts, exit_code] {
    if (IsRemoteSet(opts->dir)) {
      if (opts->forget_missing) {
        PrintError("catalog", Status::InvalidArgument(
                                  "--forget-missing applies to local pack directories; the "
                                  "catalog of " + opts->dir + " is always built from the "
                                  "shards found there"));
        *exit_code = kExitError;
        return;
      }
      *exit_code = RunRemoteCatalog(opts->dir, opts->output, opts->remote, opts->threads,
                                    opts->check, opts->json);
      return;
    }
    if (!opts->output.empty()) {
      PrintError("catalog", Status::InvalidArgument(
                                "-o is for remote sets; a local catalog is always written as " +
                                opts->dir + "/" + kCatalogFileName));
      *exit_code = kExitError;
      return;
    }
    if (opts->check && opts->forget_missing) {
      PrintError("catalog", Status::InvalidArgument(
                                "--check writes nothing, so there is nothing to --forget-missing"));
      *exit_code = kExitError;
      return;
    }
    if (opts->check) {
      auto diffs = CheckCatalog(opts->dir);
      if (!diffs.ok()) {
        PrintError("catalog", diffs.status());
        *exit_code = kExitError;
        return;
      }
      if (opts->json) {
        std::printf("{\"current\": %s, \"differences\": [", diffs->empty() ? "true" : "false");
        for (size_t i = 0; i < diffs->size(); ++i) {
          std::printf("%s%s", i ? ", " : "", JsonString((*diffs)[i]).c_str());
        }
        std::printf("]}\n");
      } else {
        for (const auto& d : *diffs) std::printf("STALE: %s\n", d.c_str());
        if (diffs->empty()) {
          std::printf("catalog is current\n");
        } else if (MissingFromCatalogDir(opts->dir)) {
          // A plain refresh would drop the missing shards' members: name the choice.
          std::printf("catalog is stale: restore the missing shards, or run `mkpack catalog "
                      "--forget-missing %s` to drop their members\n", opts->dir.c_str());
        } else {
          std::printf("catalog is stale: run `mkpack catalog %s`\n", opts->dir.c_str());
        }
      }
      *exit_code = diffs->empty() ? kExitOk : kExitProblems;
      return;
    }
    auto t0 = std::chrono::steady_clock::now();
    auto res = RefreshCatalog(opts->dir, opts->threads, opts->forget_missing);
    if (!res.ok()) {
      PrintError("catalog", res.status());
      // A refresh refused because it would lose shards is a finding about the set, not a
      // usage or I/O error.
      *exit_code = res.status().code() == Code::kStale ? kExitProblems : kExitError;
      return;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& p : res->problems) PrintWarning("catalog", p);
    std::string dir = opts->dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    std::string forgotten_json = "[";
    for (const MissingShard& m : res->forgotten) {
      std::fprintf(stderr,
                   "mkpack catalog: forgot %s/%s: %llu member(s) dropped from the catalog\n",
                   dir.c_str(), m.name.c_str(), static_cast<unsigned long long>(m.members));
      forgotten_json += (forgotten_json.size() > 1 ? ", " : "") + JsonString(m.name);
    }
    forgotten_json += "]";
    if (opts->json) {
      std::printf("{\"shards\": %llu, \"indexed\": %llu, \"reused\": %llu, \"files\": %llu, "
                  "\"directories\": %llu, \"bytes\": %llu, \"problems\": %zu, \"forgotten\": %s, "
                  "\"seconds\": %.3f}\n",
                  (unsigned long long)res->shard_count, (unsigned long long)res->report.shards_indexed,
                  (unsigned long long)res->report.shards_reused, (unsigned long long)res->totals.files,
                  (unsigned long long)res->totals.directories, (unsigned long long)res->totals.bytes,
                  res->problems.size(), forgotten_json.c_str(), secs);
    } else {
      std::printf("catalog: %llu shards (%llu indexed, %llu unchanged), %llu files, %s, %.2f s\n",
                  (unsigned long long)res->shard_count, (unsigned long long)res->report.shards_indexed,
                  (unsigned long long)res->report.shards_reused, (unsigned long long)res->totals.files,
                  HumanBytes(res->totals.bytes).c_str(), secs);
    }
    *exit_code = res->problems.empty() ? kExitOk : kExitProblems;
  });
}

}  // namespace packfs::mkpack
