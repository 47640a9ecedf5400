// Loose directories as pack sets: one raw shard per regular file (see loose_dir.h).
#include "core/read/loose_dir.h"

#include "core/write/file_walk.h"

namespace packfs {

Result<std::unique_ptr<PackSet>> OpenLooseDirectory(const std::string& dir_in,
                                                    const std::string& ref_prefix) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  PACKFS_ASSIGN_OR_RETURN(InputList list, WalkTree(dir, WalkOptions{}));
  const std::string prefix = ref_prefix.empty() ? PackDirBaseName(dir) : ref_prefix;
  std::vector<ShardContent> shards;
  std::vector<std::string> files, refs;
  shards.reserve(list.inputs.size());
  for (const PackInput& in : list.inputs) {
    PACKFS_ASSIGN_OR_RETURN(FileStat st, StatFile(in.path));
    ShardContent c;
    c.info.name = in.key;
    c.info.size = st.size;
    c.info.mtime_ns = st.mtime_ns;
    c.info.member_count = 1;
    ShardMember m;
    m.name = in.key;
    m.size = st.size;
    m.mode = 0100444;
    m.mtime = in.mtime;
    c.index.members.push_back(std::move(m));
    shards.push_back(std::move(c));
    files.push_back(in.path);
    refs.push_back(prefix + "/" + in.key);
  }
  PACKFS_ASSIGN_OR_RETURN(CatalogData data, BuildNodes(std::move(shards)));
  if (list.skipped_symlinks) {
    data.problems.push_back(dir + ": skipped " + std::to_string(list.skipped_symlinks) +
                            " symbolic link(s)");
  }
  if (list.skipped_special) {
    data.problems.push_back(dir + ": skipped " + std::to_string(list.skipped_special) +
                            " special file(s)");
  }
  // Each file is checked against what the walk saw: a loose file replaced under a live mount
  // must not serve bytes the catalog's size does not describe.
  auto opener = [](const ShardToOpen& shard) -> Result<ShardLease> {
    Result<std::unique_ptr<FileShardSource>> f = FileShardSource::Open(shard.path, shard.ref);
    if (!f.ok()) {
      return Status::Stale(f.status().message() + " (it changed since the mount; remount)");
    }
    const FileStat& st = (*f)->stat();
    if (st.size != shard.info.size || st.mtime_ns != shard.info.mtime_ns) {
      return Status::Stale(shard.ref + " changed since the mount (size " +
                           std::to_string(st.size) + ", was " +
                           std::to_string(shard.info.size) + "); remount to see it");
    }
    return ShardLease(std::move(f).value());
  };
  return PackSet::FromSources(dir, data, std::move(files), std::move(refs), std::move(opener));
}

}  // namespace packfs
