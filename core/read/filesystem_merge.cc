// Filesystem::BuildMerged: one tree over several sources.
//
// Several sources are merged into an in-memory catalog made with BuildNodes + Catalog::FromData,
// the same code path `--catalog none` uses, so lookup, listing order, readdir offsets and inode
// numbering behave exactly as with one source. The shards of source s get global ids
// shard_base_[s] + local id (BuildNodes numbers shards by vector order, and every shard of every
// source is pushed, in order, even when all its members lost a collision). A merged file node
// carries its member's offsets; origins_[merged id] remembers the member's node id and parent in
// its own source catalog, so the source PackSet can check and serve it as one of its own nodes
// (its per-node caches stay keyed by its own ids).
//
// Why not resolve lazily across the source catalogs: readdir offsets and inode numbers must be
// stable positions in one name-ordered listing, and a key present in two sources must be found
// at mount (the collision report). Both need every key once, so merging costs one pass over all
// members at mount and memory proportional to the member count (origins_: 16 bytes per node).
// A single source keeps the lazy, catalog-backed path.
#include <algorithm>
#include <unordered_map>

#include "core/base/key.h"
#include "core/read/filesystem.h"

namespace packfs {
namespace {

struct Pick {
  size_t source = 0;
  Node node;  // in the source's own catalog
};

// Hash of (global shard, local header offset): identifies a member across the merge.
struct MemberPos {
  uint32_t shard;
  uint64_t lho;
  bool operator==(const MemberPos&) const = default;
};
struct MemberPosHash {
  size_t operator()(const MemberPos& p) const {
    return std::hash<uint64_t>()(p.lho * 0x9E3779B97F4A7C15ULL ^ p.shard);
  }
};

}  // namespace

Status Filesystem::BuildMerged(const FilesystemOptions& options) {
  std::unordered_map<std::string, Pick> picks;
  std::vector<std::string> collisions;
  uint64_t collision_count = 0;
  for (size_t s = 0; s < sources_.size(); ++s) {
    const PackSet& set = *sources_[s];
    PACKFS_RETURN_IF_ERROR(set.catalog().ForEachFile([&](const std::string& key, const Node& n) {
      auto [it, inserted] = picks.try_emplace(key, Pick{s, n});
      if (inserted) return Status::OK();
      ++collision_count;
      if (collisions.size() < 20) {
        collisions.push_back("'" + QuoteKey(key) + "' is in " + sources_[it->second.source]->dir() +
                             " and in " + set.dir());
      }
      if (options.on_collision == FilesystemOptions::OnCollision::kLast) it->second = Pick{s, n};
      return Status::OK();
    }));
  }
  if (collision_count > 0 && options.on_collision == FilesystemOptions::OnCollision::kError) {
    std::string msg = std::to_string(collision_count) + " key(s) are in more than one source:";
    for (const auto& c : collisions) msg += "\n  " + c;
    if (collision_count > collisions.size()) msg += "\n  ...";
    msg += "\nchoose which copy wins with --on-collision first|last, or mount them separately";
    return Status::InvalidArgument(msg);
  }

  std::vector<ShardContent> shards;
  shard_base_.clear();
  for (size_t s = 0; s < sources_.size(); ++s) {
    shard_base_.push_back(static_cast<uint32_t>(shards.size()));
    PACKFS_ASSIGN_OR_RETURN(std::span<const ShardInfo> source_shards,
                            sources_[s]->catalog().Shards());
    for (const ShardInfo& info : source_shards) {
      ShardContent content;
      content.info = info;
      // Shard names must be unique in one catalog; the source directory tells them apart.
      content.info.name = sources_[s]->dir() + "/" + info.name;
      shards.push_back(std::move(content));
    }
  }
  std::unordered_map<MemberPos, Origin, MemberPosHash> origin_of;
  origin_of.reserve(picks.size());
  for (auto& [key, pick] : picks) {
    const Node& n = pick.node;
    uint32_t global = shard_base_[pick.source] + n.shard;
    if (global >= shards.size()) {
      return Status::Corruption(sources_[pick.source]->dir() + ": member '" + QuoteKey(key) +
                                "' names shard " + std::to_string(n.shard) +
                                " which the catalog does not list");
    }
    shards[global].index.members.push_back(MemberFromNode(key, n));
    origin_of[MemberPos{global, n.local_header_offset}] = Origin{n.id, n.parent};
  }
  picks.clear();
  for (auto& shard : shards) {
    std::sort(shard.index.members.begin(), shard.index.members.end(),
              [](const ShardMember& a, const ShardMember& b) {
                return a.local_header_offset < b.local_header_offset;
              });
  }
  PACKFS_ASSIGN_OR_RETURN(CatalogData data, BuildNodes(std::move(shards)));
  origins_.assign(data.nodes.size() + 1, Origin{});
  for (const Node& n : data.nodes) {
    if (n.is_dir()) continue;
    auto it = origin_of.find(MemberPos{n.shard, n.local_header_offset});
    if (it == origin_of.end()) {
      return Status::Corruption("merging sources: member '" + n.name + "' lost its origin");
    }
    origins_[n.id] = it->second;
  }
  PACKFS_ASSIGN_OR_RETURN(merged_, Catalog::FromData(data));
  return Status::OK();
}

}  // namespace packfs
