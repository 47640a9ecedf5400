// A pack set shown under a directory prefix (see prefixed_set.h).
//
// Why every file is a source of its own rather than the set's shards under prefixed keys: a zip
// or tar member's local header names its key, and the set checks that name before serving it, so
// a prefixed key over the same shard would fail that check; a prefix inside Filesystem's merge
// would have to be stripped again wherever a source is asked about a member by key. Reading each
// file through set->MemberSource keeps the check, under the member's own key, in the set that
// owns the shards. A LeRobot dataset holds few files (hundreds), so one source per file is cheap.
#include "core/read/prefixed_set.h"

#include "core/base/key.h"

namespace packfs {

Result<std::unique_ptr<PackSet>> OpenPrefixedSet(std::shared_ptr<const PackSet> set,
                                                 const std::string& prefix) {
  if (prefix.size() < 2 || prefix.back() != '/' ||
      !ValidateKey(prefix.substr(0, prefix.size() - 1)).ok()) {
    return Status::InvalidArgument("prefix '" + QuoteKey(prefix) +
                                   "' is not a relative directory path ending in '/'");
  }
  // Shard i of the result is file (keys[i], nodes[i]) of `set`.
  auto keys = std::make_shared<std::vector<std::string>>();
  auto nodes = std::make_shared<std::vector<Node>>();
  std::vector<ShardContent> shards;
  std::vector<std::string> files, refs;
  PACKFS_RETURN_IF_ERROR(set->catalog().ForEachFile([&](const std::string& key, const Node& n) {
    ShardContent c;
    c.info.name = prefix + key;
    c.info.size = n.size;
    c.info.member_count = 1;
    ShardMember m;
    m.name = prefix + key;
    m.size = n.size;
    m.mode = n.mode;
    m.mtime = n.mtime;
    c.index.members.push_back(std::move(m));
    shards.push_back(std::move(c));
    files.push_back(set->ShardFilePath(n.shard));
    refs.push_back(set->ShardRefPath(n.shard) + " (" + key + ")");
    keys->push_back(key);
    nodes->push_back(n);
    return Status::OK();
  }));
  PACKFS_ASSIGN_OR_RETURN(CatalogData data, BuildNodes(std::move(shards)));
  data.problems = set->warnings();
  data.problem_shards.clear();
  ShardOpener opener = [set, keys, nodes](const ShardToOpen& shard) -> Result<ShardLease> {
    if (shard.id >= keys->size()) {
      return Status::Corruption("prefixed set: no file " + std::to_string(shard.id));
    }
    return ShardLease(set->MemberSource((*keys)[shard.id], (*nodes)[shard.id]));
  };
  return PackSet::FromSources(set->dir() + " (under " + prefix + ")", data, std::move(files),
                              std::move(refs), std::move(opener));
}

}  // namespace packfs
