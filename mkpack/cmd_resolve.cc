// `mkpack resolve DIR KEY|REF...` and `mkpack resolve --root ROOT REF...`: the {path, offset,
// size} a loader can read directly, for a local pack directory or a remote one (the path is then
// the shard's URL, for a ranged GET).
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/base/json.h"
#include "core/base/key.h"
#include "mkpack/cli_util.h"
#include "mkpack/commands.h"

namespace packfs::mkpack {
namespace {

// The pack directory a reference's shard lives in under a dataset root: "media/pack-0000.zip"
// under "s3://b/data" is "s3://b/data/media". Empty when the shard path has no directory.
// Empty too for a shard path that could leave the root ("..", ".", empty segments, absolute).
std::string PackDirUnderRoot(std::string root, const std::string& shard) {
  const size_t slash = shard.rfind('/');
  if (slash == std::string::npos || slash == 0) return "";
  size_t start = 0;
  for (;;) {
    const size_t end = shard.find('/', start);
    const std::string seg = shard.substr(start, end == std::string::npos ? end : end - start);
    if (seg.empty() || seg == "." || seg == "..") return "";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root + "/" + shard.substr(0, slash);
}

// Resolves one key or reference in `set` (called `where` in messages) and prints it; returns
// the exit code for this item.
int ResolveOne(const PackSet& set, const std::string& where, const std::string& item, bool json) {
  std::string key = item;
  std::string want_shard;
  if (item.rfind("zip://", 0) == 0) {
    auto ref = ParseRef(item);
    if (!ref.ok()) {
      PrintError("resolve", ref.status());
      return kExitError;
    }
    key = ref->key;
    want_shard = ref->shard;
  }
  auto node = set.catalog().Find(key);
  if (!node.ok()) {
    PrintError("resolve", node.status());
    return kExitError;
  }
  if (!node->has_value() || (*node)->is_dir()) {
    std::fprintf(stderr, "mkpack resolve: %s: no such member in %s\n", QuoteKey(key).c_str(),
                 where.c_str());
    return kExitProblems;
  }
  const Node& n = **node;
  std::string shard_ref = set.ShardRefPath(n.shard);
  Result<const ShardInfo*> shard_info = set.catalog().Shard(n.shard);
  if (!shard_info.ok()) {
    PrintError("resolve", shard_info.status());
    return kExitError;
  }
  const std::string& shard_name = (*shard_info)->name;
  // A reference names its shard relative to the dataset root; accept it when it ends with the
  // shard's file name (the root prefix may differ after a copy), reject a different shard.
  if (!want_shard.empty()) {
    bool same = want_shard == shard_ref || want_shard == shard_name ||
                (want_shard.size() > shard_name.size() &&
                 want_shard.compare(want_shard.size() - shard_name.size() - 1, std::string::npos,
                                    "/" + shard_name) == 0);
    if (!same) {
      std::fprintf(stderr, "mkpack resolve: %s: the reference names shard %s but %s holds the "
                   "key in %s (stale reference?)\n",
                   item.c_str(), want_shard.c_str(), where.c_str(), shard_ref.c_str());
      return kExitProblems;
    }
  }
  // Remote sets: one ranged GET of the local header, so what is printed is known to be right.
  Status st = set.CheckMember(n);
  if (!st.ok()) {
    PrintError("resolve", st);
    return kExitError;
  }
  std::string path = set.ShardFilePath(n.shard);
  if (!IsRemoteSet(where)) {
    // A loader opens this path from its own working directory: give it one that works anywhere.
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::canonical(path, ec);
    if (ec) abs = std::filesystem::absolute(path, ec).lexically_normal();
    if (!ec) path = abs.string();
  }
  if (json) {
    std::printf("{\"key\": %s, \"path\": %s, \"shard\": %s, \"offset\": %llu, \"size\": %llu, "
                "\"crc32\": \"%s\", \"ref\": %s}\n",
                JsonString(key).c_str(), JsonString(path).c_str(), JsonString(shard_ref).c_str(),
                (unsigned long long)n.data_offset, (unsigned long long)n.size,
                Hex32(n.crc32).c_str(), JsonString(set.Ref(key, n)).c_str());
  } else {
    std::printf("%s\t%llu\t%llu\t%s\n", path.c_str(), (unsigned long long)n.data_offset,
                (unsigned long long)n.size, Hex32(n.crc32).c_str());
  }
  return kExitOk;
}

}  // namespace

void RegisterResolve(CLI::App& app, int* exit_code) {
  struct Opts {
    std::string dir;
    std::vector<std::string> items;
    std::string root;
    bool json = false;
    RemoteCliOptions remote;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "resolve",
      "Print where a member's bytes are: shard file (its absolute path, or URL), data offset, "
      "size and CRC-32 (tab-separated: PATH OFFSET SIZE CRC32), for a key or a zip://KEY::SHARD "
      "reference.");
  cmd->add_option("dir", opts->dir,
                  "pack directory, or its https:// or s3:// URL (omitted with --root)");
  cmd->add_option("items", opts->items, "keys or blob references");
  cmd->add_option("--root", opts->root,
                  "dataset root (a directory or an https:// or s3:// URL) that zip://KEY::SHARD "
                  "references are relative to; then every argument is a reference");
  cmd->add_flag("--json", opts->json, "one JSON object per item");
  AddRemoteOptions(cmd, &opts->remote);
  cmd->callback([opts, exit_code] {
    std::vector<std::string> items = opts->items;
    if (!opts->root.empty()) {
      if (!opts->dir.empty()) items.insert(items.begin(), opts->dir);
    } else if (opts->dir.empty() || items.empty()) {
      PrintError("resolve", Status::InvalidArgument(
                                "give a pack directory and keys or references, or --root ROOT "
                                "and references"));
      *exit_code = kExitError;
      return;
    }
    if (items.empty()) {
      PrintError("resolve", Status::InvalidArgument("no references given"));
      *exit_code = kExitError;
      return;
    }
    if (opts->root.empty()) {
      auto ps = OpenPackSetForCli("resolve", opts->dir, opts->remote);
      if (!ps.ok()) {
        PrintError("resolve", ps.status());
        *exit_code = kExitError;
        return;
      }
      int rc = kExitOk;
      for (const std::string& item : items) {
        rc = std::max(rc, ResolveOne(**ps, opts->dir, item, opts->json));
      }
      *exit_code = rc;
      return;
    }
    // Against a root: each reference names its pack directory; each is opened once.
    std::map<std::string, std::unique_ptr<PackSet>> sets;
    int rc = kExitOk;
    for (const std::string& item : items) {
      auto ref = ParseRef(item);
      if (!ref.ok()) {
        PrintError("resolve", ref.status().WithPrefix("with --root every argument is a "
                                                      "zip://KEY::SHARD reference"));
        rc = kExitError;
        continue;
      }
      const std::string dir = PackDirUnderRoot(opts->root, ref->shard);
      if (dir.empty()) {
        PrintError("resolve", Status::InvalidArgument(
                                  item + ": the shard path names no pack directory inside the root"));
        rc = kExitError;
        continue;
      }
      auto it = sets.find(dir);
      if (it == sets.end()) {
        PackSetOptions po;
        // References printed back name shards as the input did ("a/media/pack-0000.zip").
        po.ref_prefix = ref->shard.substr(0, ref->shard.rfind('/'));
        auto ps = OpenPackSetForCli("resolve", dir, opts->remote, po);
        if (!ps.ok()) {
          PrintError("resolve", ps.status());
          rc = kExitError;
          continue;
        }
        it = sets.emplace(dir, std::move(ps).value()).first;
      }
      rc = std::max(rc, ResolveOne(*it->second, dir, item, opts->json));
    }
    *exit_code = rc;
  });
}

}  // namespace packfs::mkpack
