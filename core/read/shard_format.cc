// Shard format dispatch between the zip and tar readers (see shard_format.h).
#include "core/read/shard_format.h"

#include <string>

#include "core/format/tar_reader.h"

namespace packfs {

ShardFormat ShardFormatOf(std::string_view file_name) {
  return IsTarShardName(file_name) ? ShardFormat::kTar : ShardFormat::kZip;
}

Result<ShardIndex> IndexShard(const ShardSource& src, std::string_view file_name) {
  if (ShardFormatOf(file_name) == ShardFormat::kZip) return ReadZipIndex(src);
  PACKFS_ASSIGN_OR_RETURN(TarIndex tar, ReadTarIndex(src));
  ShardIndex index;
  index.members.reserve(tar.members.size());
  for (TarMember& t : tar.members) {
    ShardMember m;
    m.name = std::move(t.name);
    m.local_header_offset = t.header_offset;
    m.data_offset = t.data_offset;
    m.size = t.size;
    m.mode = t.mode;
    m.mtime = t.mtime;
    index.members.push_back(std::move(m));
  }
  index.problems = std::move(tar.problems);
  index.fingerprint = tar.fingerprint;
  return index;
}

Result<uint64_t> ShardFingerprint(const ShardSource& src, std::string_view file_name) {
  if (ShardFormatOf(file_name) == ShardFormat::kZip) return ZipFingerprint(src);
  return TarFingerprint(src);
}

Status CheckShardMember(const ShardSource& src, std::string_view file_name, std::string_view key,
                        const Node& file) {
  if (ShardFormatOf(file_name) == ShardFormat::kTar) {
    Status st = CheckTarMember(src, file.local_header_offset, key, file.data_offset, file.size);
    return st.ok() ? st : Status::Corruption("tar header: " + st.message());
  }
  Result<uint64_t> data_offset = ReadLocalHeader(src, file.local_header_offset, key);
  if (!data_offset.ok()) return data_offset.status();
  if (*data_offset != file.data_offset) {
    return Status::Corruption("data starts at " + std::to_string(*data_offset) +
                              ", the catalog says " + std::to_string(file.data_offset));
  }
  if (file.data_offset > src.size() || file.size > src.size() - file.data_offset) {
    return Status::Corruption("the data runs past the end of the shard");
  }
  return Status::OK();
}

}  // namespace packfs
