// `mkpack ls DIR|URL`: lists the members of a pack set (from the catalog when present).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/base/json.h"
#include "mkpack/cli_util.h"
#include "mkpack/commands.h"

namespace packfs::mkpack {

void RegisterLs(CLI::App& app, int* exit_code) {
  struct Opts {
    std::string dir;
    bool long_format = false;
    bool refs = false;
    bool json = false;
    RemoteCliOptions remote;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "ls", "List the members of a pack set in key order (from the catalog when present).");
  cmd->add_option("dir", opts->dir, "pack directory, or its https:// or s3:// URL")->required();
  cmd->add_flag("-l,--long", opts->long_format, "size, shard, data offset, CRC-32 and key per line");
  cmd->add_flag("--refs", opts->refs, "key<TAB>blob reference per line");
  cmd->add_flag("--json", opts->json,
                "one JSON object per line: key, size, shard, offset, crc32, mtime, ref");
  AddRemoteOptions(cmd, &opts->remote);
  cmd->callback([opts, exit_code] {
    auto ps = OpenPackSetForCli("ls", opts->dir, opts->remote);
    if (!ps.ok()) {
      PrintError("ls", ps.status());
      *exit_code = kExitError;
      return;
    }
    const PackSet& set = **ps;
    std::vector<std::pair<std::string, Node>> files;
    files.reserve(set.catalog().totals().files);
    Status st = set.catalog().ForEachFile([&](const std::string& key, const Node& n) {
      files.emplace_back(key, n);
      return Status::OK();
    });
    if (!st.ok()) {
      PrintError("ls", st);
      *exit_code = kExitError;
      return;
    }
    std::sort(files.begin(), files.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string line;
    for (const auto& [key, n] : files) {
      line.clear();
      if (opts->json) {
        line = "{\"key\": " + JsonString(key) + ", \"size\": " + std::to_string(n.size) +
               ", \"shard\": " + JsonString(set.ShardRefPath(n.shard)) +
               ", \"offset\": " + std::to_string(n.data_offset) + ", \"crc32\": \"" +
               Hex32(n.crc32) + "\", \"mtime\": " + std::to_string(n.mtime) +
               ", \"ref\": " + JsonString(set.Ref(key, n)) + "}";
      } else if (opts->refs) {
        line = key + "\t" + set.Ref(key, n);
      } else if (opts->long_format) {
        char buf[96];
        Result<const ShardInfo*> shard = set.catalog().Shard(n.shard);
        std::snprintf(buf, sizeof buf, "%12llu  %s  %12llu  %s  ", (unsigned long long)n.size,
                      shard.ok() ? (*shard)->name.c_str() : "?",
                      (unsigned long long)n.data_offset, Hex32(n.crc32).c_str());
        line = buf + key;
      } else {
        line = key;
      }
      line += '\n';
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
    *exit_code = set.catalog().problems().empty() ? kExitOk : kExitProblems;
  });
}

}  // namespace packfs::mkpack
