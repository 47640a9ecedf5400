// `mkpack resolve DIR KEY|REF...`: the {path, offset, size} a loader can pread directly.
#include <cstdio>

#include "core/json.h"
#include "core/key.h"
#include "mkpack/cli_util.h"
#include "mkpack/commands.h"

namespace packfs::mkpack {

void RegisterResolve(CLI::App& app, int* exit_code) {
  struct Opts {
    std::string dir;
    std::vector<std::string> items;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "resolve",
      "Print where a member's bytes are: shard file, data offset, size and CRC-32 (tab-separated: "
      "PATH OFFSET SIZE CRC32), for a key or a zip://KEY::SHARD reference.");
  cmd->add_option("dir", opts->dir, "pack directory")->required();
  cmd->add_option("items", opts->items, "keys or blob references")->required();
  cmd->add_flag("--json", opts->json, "one JSON object per item");
  cmd->callback([opts, exit_code] {
    auto ps = OpenPackSetForCli("resolve", opts->dir);
    if (!ps.ok()) {
      PrintError("resolve", ps.status());
      *exit_code = kExitError;
      return;
    }
    const PackSet& set = **ps;
    int rc = kExitOk;
    for (const std::string& item : opts->items) {
      std::string key = item;
      std::string want_shard;
      if (item.rfind("zip://", 0) == 0) {
        auto ref = ParseRef(item);
        if (!ref.ok()) {
          PrintError("resolve", ref.status());
          rc = kExitError;
          continue;
        }
        key = ref->key;
        want_shard = ref->shard;
      }
      auto node = set.catalog().Find(key);
      if (!node.ok()) {
        PrintError("resolve", node.status());
        rc = kExitError;
        continue;
      }
      if (!node->has_value() || (*node)->is_dir()) {
        std::fprintf(stderr, "mkpack resolve: %s: no such member in %s\n", QuoteKey(key).c_str(),
                     opts->dir.c_str());
        rc = std::max(rc, kExitProblems);
        continue;
      }
      const Node& n = **node;
      std::string shard_ref = set.ShardRefPath(n.shard);
      const std::string& shard_name = set.catalog().shards()[n.shard].name;
      // A reference names its shard relative to the dataset root; accept it when it ends with the
      // shard's file name (the root prefix may differ after a copy), reject a different shard.
      if (!want_shard.empty()) {
        bool same = want_shard == shard_ref || want_shard == shard_name ||
                    (want_shard.size() > shard_name.size() &&
                     want_shard.compare(want_shard.size() - shard_name.size() - 1,
                                        std::string::npos, "/" + shard_name) == 0);
        if (!same) {
          std::fprintf(stderr, "mkpack resolve: %s: the reference names shard %s but %s holds the "
                       "key in %s (stale reference?)\n",
                       item.c_str(), want_shard.c_str(), opts->dir.c_str(), shard_ref.c_str());
          rc = std::max(rc, kExitProblems);
          continue;
        }
      }
      Status st = set.CheckMember(n);
      if (!st.ok()) {
        PrintError("resolve", st);
        rc = kExitError;
        continue;
      }
      std::string path = set.ShardFilePath(n.shard);
      if (opts->json) {
        std::printf("{\"key\": %s, \"path\": %s, \"shard\": %s, \"offset\": %llu, \"size\": %llu, "
                    "\"crc32\": \"%s\", \"ref\": %s}\n",
                    JsonString(key).c_str(), JsonString(path).c_str(), JsonString(shard_ref).c_str(),
                    (unsigned long long)n.data_offset, (unsigned long long)n.size,
                    Hex32(n.crc32).c_str(), JsonString(set.Ref(key, n)).c_str());
      } else {
        std::printf("%s\t%llu\t%llu\t%s\n", path.c_str(), (unsigned long long)n.data_offset,
                    (unsigned long long)n.size, Hex32(n.crc32).c_str());
      }
    }
    *exit_code = rc;
  });
}

}  // namespace packfs::mkpack
