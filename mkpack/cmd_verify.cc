// `mkpack verify DIR|URL`: checks a pack set end to end, local or remote (see core/read/verify.h,
// core/remote/remote_maintenance.h).
#include <chrono>
#include <cstdio>

#include "core/base/json.h"
#include "core/read/verify.h"
#include "core/remote/remote_maintenance.h"
#include "mkpack/cli_util.h"
#include "mkpack/commands.h"

namespace packfs::mkpack {

void RegisterVerify(CLI::App& app, int* exit_code) {
  struct Opts {
    std::string dir;
    int threads = 0;
    bool json = false;
    RemoteCliOptions remote;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Check a pack set: every member STORED with a safe key, keys unique across shards, every "
      "CRC-32 right, catalog consistent. Exit 0 OK, 1 problems found, 2 usage or I/O error.");
  cmd->add_option("dir", opts->dir,
                  "pack directory, or its https:// or s3:// URL (every byte is read with ranged "
                  "GETs)")->required();
  cmd->add_option("-j,--threads", opts->threads, "shards checked in parallel (default: one per core; 16 for a remote set)");
  cmd->add_flag("--json", opts->json, "print the result as JSON on stdout");
  AddRemoteOptions(cmd, &opts->remote);
  cmd->callback([opts, exit_code] {
    auto t0 = std::chrono::steady_clock::now();
    auto rep = IsRemoteSet(opts->dir)
                   ? VerifyRemotePackSet(opts->dir, MakeRemoteOptions(opts->remote), opts->threads)
                   : VerifyPackDir(opts->dir, opts->threads);
    if (!rep.ok()) {
      PrintError("verify", rep.status());
      *exit_code = kExitError;
      return;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const VerifyReport& r = *rep;
    if (opts->json) {
      std::printf("{\"ok\": %s, \"members\": %llu, \"bytes\": %llu, \"shards\": %llu, "
                  "\"catalog\": %s, \"seconds\": %.3f, \"problems\": [",
                  r.problems.empty() ? "true" : "false", (unsigned long long)r.members,
                  (unsigned long long)r.bytes, (unsigned long long)r.shards,
                  r.catalog_present ? "true" : "false", secs);
      for (size_t i = 0; i < r.problems.size(); ++i) {
        std::printf("%s%s", i ? ", " : "", JsonString(r.problems[i]).c_str());
      }
      std::printf("]}\n");
    } else {
      for (const auto& p : r.problems) std::printf("PROBLEM: %s\n", p.c_str());
      if (r.problems.empty()) {
        std::printf("OK: %llu members, %llu bytes, %llu shards%s\n", (unsigned long long)r.members,
                    (unsigned long long)r.bytes, (unsigned long long)r.shards,
                    r.catalog_present ? ", catalog consistent" : " (no catalog)");
      } else {
        std::printf("FAILED: %zu problems in %llu members, %llu shards\n", r.problems.size(),
                    (unsigned long long)r.members, (unsigned long long)r.shards);
      }
      std::fprintf(stderr, "verified %s in %.2f s (%.0f MB/s)\n", HumanBytes(r.bytes).c_str(), secs,
                   secs > 0 ? r.bytes / secs / 1e6 : 0.0);
    }
    *exit_code = r.problems.empty() ? kExitOk : kExitProblems;
  });
}

}  // namespace packfs::mkpack
