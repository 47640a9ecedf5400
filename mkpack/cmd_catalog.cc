// `mkpack catalog DIR`: builds, refreshes or checks the SQLite catalog of a pack set.
#include <chrono>
#include <cstdio>

#include "core/json.h"
#include "core/pack_set.h"
#include "mkpack/cli_util.h"
#include "mkpack/commands.h"

namespace packfs::mkpack {

void RegisterCatalog(CLI::App& app, int* exit_code) {
  struct Opts {
    std::string dir;
    int threads = 0;
    bool check = false;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "catalog",
      "Build or refresh DIR/.packfs-catalog.sqlite for any STORED zip set (mkpack, Python zipfile, "
      "zip -0). Only new or changed shards are read.");
  cmd->add_option("dir", opts->dir, "pack directory")->required();
  cmd->add_option("-j,--threads", opts->threads, "shards indexed in parallel (default: one per core)");
  cmd->add_flag("--check", opts->check,
                "compare every shard's fingerprint with the catalog and write nothing "
                "(exit 1 when the catalog is stale)");
  cmd->add_flag("--json", opts->json, "print the result as JSON on stdout");
  cmd->callback([opts, exit_code] {
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
        } else {
          std::printf("catalog is stale: run `mkpack catalog %s`\n", opts->dir.c_str());
        }
      }
      *exit_code = diffs->empty() ? kExitOk : kExitProblems;
      return;
    }
    auto t0 = std::chrono::steady_clock::now();
    auto res = RefreshCatalog(opts->dir, opts->threads);
    if (!res.ok()) {
      PrintError("catalog", res.status());
      *exit_code = kExitError;
      return;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& p : res->problems) PrintWarning("catalog", p);
    if (opts->json) {
      std::printf("{\"shards\": %llu, \"indexed\": %llu, \"reused\": %llu, \"files\": %llu, "
                  "\"directories\": %llu, \"bytes\": %llu, \"problems\": %zu, \"seconds\": %.3f}\n",
                  (unsigned long long)res->shard_count, (unsigned long long)res->report.shards_indexed,
                  (unsigned long long)res->report.shards_reused, (unsigned long long)res->totals.files,
                  (unsigned long long)res->totals.directories, (unsigned long long)res->totals.bytes,
                  res->problems.size(), secs);
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
