// Filesystem: node attributes, lookup, listing, reads and xattrs over the served catalog.
//
// Inode numbers are catalog node ids. With one source they are that catalog's ids (root 1 =
// FUSE_ROOT_ID, stable for a given catalog file); with several they are the ids of the merged
// in-memory catalog (see filesystem_merge.cc). Nodes never change while mounted, so the FUSE layer
// keeps no lookup counts: forget is a no-op and any id can be resolved at any time.
#include "core/read/filesystem.h"

#include <fcntl.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/base/key.h"
#include "core/read/page_cache.h"
#include "core/read/shard_format.h"

namespace packfs {

Result<std::unique_ptr<Filesystem>> Filesystem::Open(
    std::vector<std::unique_ptr<PackSet>> sources, const FilesystemOptions& options) {
  if (sources.empty()) return Status::InvalidArgument("no source to mount");
  std::unique_ptr<Filesystem> fs(new Filesystem());
  fs->options_ = options;
  fs->sources_ = std::move(sources);
  for (const auto& src : fs->sources_) {
    for (const auto& w : src->warnings()) fs->warnings_.push_back(src->dir() + ": " + w);
    PACKFS_ASSIGN_OR_RETURN(int64_t newest, src->catalog().NewestShardMtime());
    fs->dir_mtime_ = std::max<int64_t>(fs->dir_mtime_, newest);
  }
  if (fs->sources_.size() == 1) {
    fs->catalog_ = &fs->sources_[0]->catalog();
    fs->shard_base_ = {0};
  } else {
    PACKFS_RETURN_IF_ERROR(fs->BuildMerged(options));
    fs->catalog_ = fs->merged_.get();
  }
  for (const auto& w : fs->warnings_) fs->errors_.Add("", "", w);
  const CatalogTotals& t = fs->catalog_->totals();
  fs->totals_ = FsTotals{t.files, t.directories, t.bytes, fs->catalog_->shard_count()};
  fs->shard_count_ = fs->catalog_->shard_count();
  fs->shard_seen_ = std::make_unique<std::atomic<bool>[]>(fs->shard_count_);
  if (options.verify_crc) fs->crc_ = std::make_unique<CrcTracker>(t.files + t.directories);
  // Only shard files (or local copies of remote shards) can be streamed: a mount of remote
  // sources without a disk cache starts no thread (and never reads its catalog for it).
  const bool any_files =
      std::any_of(fs->sources_.begin(), fs->sources_.end(),
                  [](const auto& src) { return src->shard_files() || src->local_copies(); });
  if (options.stream_dirs && any_files) {
    const Filesystem* self = fs.get();
    fs->stream_ = std::make_unique<DirStream>(
        [self](uint64_t dir) { return self->StreamExtents(dir); },
        options.stream_room ? options.stream_room : MemoryRoom, fs->stats_);
  }
  return fs;
}

Filesystem::~Filesystem() = default;

void Filesystem::NoteShardUsed(uint32_t shard) const {
  // Load first: after a shard's first read this is a shared read, not a write every thread
  // fights over.
  if (shard < shard_count_ && !shard_seen_[shard].load(std::memory_order_relaxed) &&
      !shard_seen_[shard].exchange(true)) {
    stats_.ShardUsed();
  }
}

Attr Filesystem::MakeAttr(const Node& node) const {
  Attr a;
  a.ino = node.id;
  a.uid = options_.uid;
  a.gid = options_.gid;
  if (node.is_dir()) {
    // nlink 1 is the Linux convention for "subdirectory count unknown" (find and fts then do not
    // use it to skip stat calls). Counting subdirectories would cost a listing per getattr.
    a.mode = S_IFDIR | (0555 & ~options_.umask);
    a.nlink = 1;
    a.mtime = node.mtime != 0 ? node.mtime : dir_mtime_;
  } else {
    uint32_t perm = node.mode != 0 ? (node.mode & 0555) : 0444;
    a.mode = S_IFREG | (perm & ~options_.umask);
    a.nlink = 1;
    a.size = node.size;
    a.blocks = (node.size + 511) / 512;
    a.mtime = node.mtime;
  }
  return a;
}

Result<Node> Filesystem::GetNode(uint64_t ino) const {
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, catalog_->Get(ino));
  if (!node) return Status::NotFound("no node with inode number " + std::to_string(ino));
  return std::move(*node);
}

Result<Node> Filesystem::GetFile(uint64_t ino) const {
  bool looked_up = false;
  return GetFileForRead(ino, &looked_up);
}

Result<Node> Filesystem::GetFileForRead(uint64_t ino, bool* looked_up) const {
  std::optional<Node> recent = looked_up_.Get(ino);
  *looked_up = recent.has_value();
  if (recent) return std::move(*recent);
  PACKFS_ASSIGN_OR_RETURN(Node node, GetNode(ino));
  if (node.is_dir()) {
    return Status::IOError("'" + QuoteKey(KeyOrId(node)) + "' is a directory", EISDIR);
  }
  return node;
}

std::string Filesystem::KeyOrId(const Node& node) const {
  Result<std::string> key = catalog_->KeyOf(node);
  return key.ok() ? *key : "#" + std::to_string(node.id);
}

std::string Filesystem::DescribeNode(uint64_t ino) const {
  Result<Node> node = GetNode(ino);
  return node.ok() ? QuoteKey(KeyOrId(*node)) : "#" + std::to_string(ino);
}

void Filesystem::NoteError(uint64_t ino, const std::string& message) const {
  std::string path, shard;
  if (ino != 0) {
    Result<Node> node = GetNode(ino);
    if (node.ok()) {
      path = KeyOrId(*node);
      if (!node->is_dir()) {
        SourceNode src = ToSource(*node);
        shard = src.set->ShardRefPath(src.node.shard);
      }
    } else {
      path = "#" + std::to_string(ino);
    }
  }
  errors_.Add(std::move(path), std::move(shard), message);
}

Filesystem::SourceNode Filesystem::ToSource(const Node& merged) const {
  if (sources_.size() == 1) return SourceNode{sources_[0].get(), merged};
  // The source is the last one whose first global shard id is <= the node's shard.
  size_t s = static_cast<size_t>(
      std::upper_bound(shard_base_.begin(), shard_base_.end(), merged.shard) -
      shard_base_.begin() - 1);
  SourceNode out{sources_[s].get(), merged};
  out.node.shard = merged.shard - shard_base_[s];
  out.node.id = origins_[merged.id].id;
  out.node.parent = origins_[merged.id].parent;
  return out;
}

Result<std::optional<Attr>> Filesystem::Lookup(uint64_t parent, std::string_view name,
                                               uint64_t prefetch_max,
                                               uint64_t prefetch_span) const {
  // One query on the hot path (none in a directory held in memory: core/read/dir_names.h): only
  // a miss needs to know whether `parent` is a directory.
  std::optional<Node> child;
  Node held;
  switch (dir_names_.Find(parent, name, &held)) {
    case DirNames::Found::kChild:
      child = std::move(held);
      break;
    case DirNames::Found::kAbsent:
      return std::optional<Attr>();  // only directories are held
    case DirNames::Found::kNotHeld: {
      PACKFS_ASSIGN_OR_RETURN(child, catalog_->Lookup(parent, name));
      uint32_t count = 0;
      if (dir_names_.Count(parent, &count)) HoldDirNames(parent, count);
      break;
    }
  }
  if (child) {
    if (!child->is_dir()) looked_up_.Put(*child);
    Prefetch(*child, prefetch_max, prefetch_span);
    return std::optional<Attr>(MakeAttr(*child));
  }
  PACKFS_ASSIGN_OR_RETURN(Node dir, GetNode(parent));
  if (!dir.is_dir()) {
    return Status::IOError("'" + QuoteKey(KeyOrId(dir)) + "' is not a directory", ENOTDIR);
  }
  return std::optional<Attr>();
}

void Filesystem::HoldDirNames(uint64_t dir_id, uint32_t lookups) const {
  Result<Node> dir = GetNode(dir_id);
  if (!dir.ok() || !dir->is_dir() || !dir_names_.Due(lookups, dir->child_count)) return;
  std::vector<Node> children;
  children.reserve(dir->child_count);
  if (!catalog_->Range(dir->first_child, dir->first_child + dir->child_count, &children).ok()) {
    return;  // best effort: the catalog answers this directory's lookups as before
  }
  if (children.size() == dir->child_count) dir_names_.Hold(dir_id, std::move(children));
}

Result<Attr> Filesystem::GetAttr(uint64_t ino) const {
  PACKFS_ASSIGN_OR_RETURN(Node node, GetNode(ino));
  return MakeAttr(node);
}

Status Filesystem::ReadDir(uint64_t ino, uint64_t offset, size_t max_entries,
                           std::vector<DirEntry>* out) const {
  out->clear();
  PACKFS_ASSIGN_OR_RETURN(Node dir, GetNode(ino));
  if (!dir.is_dir()) {
    return Status::IOError("'" + QuoteKey(KeyOrId(dir)) + "' is not a directory", ENOTDIR);
  }
  // Positions: 0 is ".", 1 is "..", 2 + i is the i-th child in name order.
  uint64_t pos = offset;
  if (pos == 0 && out->size() < max_entries) {
    out->push_back(DirEntry{".", MakeAttr(dir), 1});
    pos = 1;
  }
  if (pos == 1 && out->size() < max_entries) {
    Attr parent_attr = MakeAttr(dir);
    if (dir.parent != dir.id) {
      PACKFS_ASSIGN_OR_RETURN(Node parent, GetNode(dir.parent));
      parent_attr = MakeAttr(parent);
    }
    out->push_back(DirEntry{"..", parent_attr, 2});
    pos = 2;
  }
  if (pos < 2 || out->size() >= max_entries) return Status::OK();
  uint64_t first = pos - 2;
  if (first >= dir.child_count) return Status::OK();
  std::vector<Node> children;
  children.reserve(std::min<uint64_t>(dir.child_count - first, max_entries - out->size()));
  PACKFS_RETURN_IF_ERROR(catalog_->List(dir, first, max_entries - out->size(), &children));
  out->reserve(out->size() + children.size());
  for (size_t i = 0; i < children.size(); ++i) {
    out->push_back(DirEntry{std::move(children[i].name), MakeAttr(children[i]), pos + i + 1});
  }
  return Status::OK();
}

bool Filesystem::ChecksCrc(const Node& file) const {
  if (crc_ == nullptr || file.shard >= shard_count_) return false;
  // Zip members of a zip set carry a CRC-32; tar members and synthesized sets' files do not.
  const size_t s = static_cast<size_t>(
      std::upper_bound(shard_base_.begin(), shard_base_.end(), file.shard) -
      shard_base_.begin() - 1);
  if (sources_[s]->raw_members()) return false;
  Result<const ShardInfo*> info = catalog_->Shard(file.shard);
  return info.ok() && ShardFormatOf((*info)->name) == ShardFormat::kZip;
}

std::string Filesystem::Reading(const Node& file, const SourceNode& src) const {
  return "reading '" + QuoteKey(KeyOrId(file)) + "' from " + src.set->ShardRefPath(src.node.shard);
}

Status Filesystem::CrcFailure(const Node& file, const SourceNode& src,
                              const std::string& why) const {
  return Status::Corruption(Reading(file, src) + ": " + why +
                            "; the shard is damaged: run `mkpack verify " + src.set->dir() +
                            "` and restore " + src.set->ShardRefPath(src.node.shard) +
                            " from a good copy");
}

Result<ReadExtent> Filesystem::PrepareRead(uint64_t ino, uint64_t offset, size_t size) const {
  PACKFS_ASSIGN_OR_RETURN(Node file, GetFile(ino));
  return PrepareResolved(file, ToSource(file), offset, size);
}

Result<ReadReply> Filesystem::ServeRead(uint64_t ino, uint64_t offset, size_t size,
                                        size_t zero_copy_min, std::vector<uint8_t>* scratch,
                                        std::span<uint8_t> into) const {
  bool looked_up = false;
  PACKFS_ASSIGN_OR_RETURN(Node file, GetFileForRead(ino, &looked_up));
  const SourceNode src = ToSource(file);
  ReadHint(file, src, offset, looked_up);
  return ServeResolved(file, src, offset, size, zero_copy_min, scratch, into);
}

Result<ReadReply> Filesystem::ServeResolved(const Node& file, const SourceNode& src,
                                            uint64_t offset, size_t size, size_t zero_copy_min,
                                            std::vector<uint8_t>* scratch,
                                            std::span<uint8_t> into) const {
  ReadReply reply;
  if (offset >= file.size || size == 0) return reply;
  ShardLease open;
  if (size >= zero_copy_min) {
    PACKFS_ASSIGN_OR_RETURN(ReadExtent ext, PrepareResolved(file, src, offset, size));
    if (ext.lease && ext.lease->fd() >= 0 && !ext.copy_to_check) {
      reply.window = std::move(ext);
      return reply;
    }
    // A shard without a file descriptor (remote, or a synthesized file the range does not map
    // into), or bytes whose CRC-32 is still to be checked: lent from the memory a remote shard
    // holds them in, else copied, through the shard just opened.
    open = std::move(ext.lease);
    PACKFS_ASSIGN_OR_RETURN(bool lent,
                            LendChecked(file, src, offset, size, &open, &reply.pieces));
    if (lent) return reply;
  }
  PACKFS_ASSIGN_OR_RETURN(reply.bytes,
                          CopyChecked(file, src, offset, size, scratch, &open, into));
  return reply;
}

Result<ReadExtent> Filesystem::PrepareResolved(const Node& file, const SourceNode& src,
                                               uint64_t offset, size_t size) const {
  ReadExtent ext;
  if (offset >= file.size || size == 0) return ext;
  if (ChecksCrc(file)) {
    switch (crc_->verdict(file.id)) {
      case CrcTracker::Verdict::kBad:
        return CrcFailure(file, src, "its bytes failed their CRC-32 check before");
      case CrcTracker::Verdict::kUnknown:
        ext.length = static_cast<size_t>(std::min<uint64_t>(size, file.size - offset));
        ext.copy_to_check = true;
        return ext;
      case CrcTracker::Verdict::kGood:
        break;
    }
  }
  Status checked = src.set->CheckMember(src.node);
  if (!checked.ok()) return checked.WithPrefix(Reading(file, src));
  Result<ShardLease> lease = src.set->OpenShard(src.node.shard);
  if (!lease.ok()) return lease.status().WithPrefix(Reading(file, src));
  NoteShardUsed(file.shard);
  ext.lease = std::move(*lease);
  ext.shard_offset = file.data_offset + offset;
  ext.length = static_cast<size_t>(std::min<uint64_t>(size, file.size - offset));
  if (ext.shard_offset + ext.length > ext.lease->size()) {
    // The catalog said the shard holds these bytes; a shorter file means it changed under us.
    return Status::Stale(Reading(file, src) + ": shard ends at " +
                         std::to_string(ext.lease->size()) +
                         " but the member needs bytes up to " +
                         std::to_string(ext.shard_offset + ext.length));
  }
  if (ext.lease->fd() < 0) {
    // A synthesized file (a sliced MP4): a range inside one of its extents is still a window of
    // a real file, so it goes out zero-copy too; anything else takes the copying path.
    auto mapped = ext.lease->MapToFile(ext.shard_offset, ext.length);
    if (!mapped.ok()) return mapped.status().WithPrefix(Reading(file, src));
    if (*mapped) {
      ext.lease = std::move((*mapped)->first);
      ext.shard_offset = (*mapped)->second;
    }
  }
  return ext;
}

Result<std::span<const uint8_t>> Filesystem::ReadCopy(uint64_t ino, uint64_t offset, size_t size,
                                                      std::vector<uint8_t>* scratch) const {
  PACKFS_ASSIGN_OR_RETURN(Node file, GetFile(ino));
  if (offset >= file.size || size == 0) return std::span<const uint8_t>();
  return CopyChecked(file, ToSource(file), offset, size, scratch);
}

Result<std::span<const uint8_t>> Filesystem::CopyChecked(const Node& file, const SourceNode& src,
                                                         uint64_t offset, size_t size,
                                                         std::vector<uint8_t>* scratch,
                                                         const ShardLease* open,
                                                         std::span<uint8_t> into) const {
  PACKFS_RETURN_IF_ERROR(CrcNotBad(file, src));
  Result<std::span<const uint8_t>> got =
      src.set->ReadCopy(src.node, offset, size, scratch, open, into);
  if (!got.ok()) {
    return got.status().WithPrefix(Reading(file, src));
  }
  NoteShardUsed(file.shard);
  PACKFS_RETURN_IF_ERROR(ObserveCrc(file, src, offset, *got));
  return got;
}

Result<bool> Filesystem::LendChecked(const Node& file, const SourceNode& src, uint64_t offset,
                                     size_t size, ShardLease* open,
                                     std::vector<Extent>* out) const {
  PACKFS_RETURN_IF_ERROR(CrcNotBad(file, src));
  Result<std::optional<size_t>> got = src.set->Lend(src.node, offset, size, open, out);
  if (!got.ok()) {
    return got.status().WithPrefix(Reading(file, src));
  }
  if (!*got) return false;
  NoteShardUsed(file.shard);
  uint64_t at = offset;
  for (const Extent& e : *out) {
    PACKFS_RETURN_IF_ERROR(ObserveCrc(file, src, at, *e));
    at += e->size();
  }
  return true;
}

Status Filesystem::CrcNotBad(const Node& file, const SourceNode& src) const {
  if (ChecksCrc(file) && crc_->verdict(file.id) == CrcTracker::Verdict::kBad) {
    return CrcFailure(file, src, "its bytes failed their CRC-32 check before");
  }
  return Status::OK();
}

Status Filesystem::ObserveCrc(const Node& file, const SourceNode& src, uint64_t offset,
                              std::span<const uint8_t> bytes) const {
  if (!ChecksCrc(file)) return Status::OK();
  const CrcTracker::Outcome seen = crc_->Observe(file.id, file.size, file.crc32, offset, bytes);
  if (seen.verdict != CrcTracker::Verdict::kBad) return Status::OK();
  char why[96];
  std::snprintf(why, sizeof why, "CRC-32 mismatch: its bytes hash to %08x, the zip records %08x",
                seen.actual, file.crc32);
  return CrcFailure(file, src, why);
}

Result<size_t> Filesystem::Read(uint64_t ino, uint64_t offset, std::span<uint8_t> buf) const {
  std::vector<uint8_t> scratch;
  PACKFS_ASSIGN_OR_RETURN(std::span<const uint8_t> got,
                          ReadCopy(ino, offset, buf.size(), &scratch));
  if (!got.empty()) std::memcpy(buf.data(), got.data(), got.size());
  return got.size();
}

uint64_t Filesystem::ChildCount(uint64_t dir) const {
  Result<Node> node = GetNode(dir);
  return node.ok() && node->is_dir() ? node->child_count : 0;
}

std::optional<std::string> Filesystem::DirPath(uint64_t dir) const {
  Result<Node> node = GetNode(dir);
  if (!node.ok() || !node->is_dir()) return std::nullopt;
  Result<std::string> key = catalog_->KeyOf(*node);
  if (!key.ok()) return std::nullopt;
  return *key;
}

Filesystem::ChildSpan Filesystem::Children(uint64_t dir) const {
  ChildSpan span;
  Result<Node> node = GetNode(dir);
  if (!node.ok() || !node->is_dir()) return span;
  span.first = node->first_child;
  span.count = node->child_count;
  bool first_file = true;
  (void)catalog_->ForRange(span.first, span.first + span.count, [&](Node&& n) {
    if (n.is_dir()) return true;
    if (first_file) {
      first_file = false;
      const PackSet* set = ToSource(n).set;
      span.local_members = set->shard_files() && !set->raw_members() && !set->on_network_fs();
      span.remote_members = !set->shard_files() && !set->raw_members();
      // Not walked: the rest of the rows is not worth reading.
      if (!span.local_members && !span.remote_members) return false;
    }
    span.bytes += n.size;
    return true;
  });
  return span;
}

uint64_t Filesystem::max_ino() const {
  const CatalogTotals& t = catalog_->totals();
  return t.files + t.directories;
}

Result<ReadReply> Filesystem::ReadThrough(
    uint64_t ino, uint64_t offset, size_t size, uint64_t window, size_t zero_copy_min,
    const std::function<bool(uint64_t dir)>& in_dir, FollowerClaims& claims, uint64_t reader,
    std::vector<uint8_t>* scratch, std::vector<Follower>* followers, uint64_t* dir,
    std::span<uint8_t> into) const {
  followers->clear();
  bool looked_up = false;
  PACKFS_ASSIGN_OR_RETURN(Node file, GetFileForRead(ino, &looked_up));
  *dir = file.parent;
  if (offset >= file.size || size == 0) return ReadReply{};
  SourceNode src = ToSource(file);
  ReadHint(file, src, offset, looked_up);
  auto copy = [&]() {
    return ServeResolved(file, src, offset, size, zero_copy_min, scratch, into);
  };
  // Shards on a network file system: the reply would wait for the followers' fetch, a round trip
  // and up to `window` bytes over the network, to save READs that cost a local round trip (sshfs
  // at 1 ms, 8 readers, after a listing: 2.1k instead of 1.45k files/s at random, 3.7k instead of
  // 2.5k walking a directory, without followers).
  if (offset + size < file.size || file.size - offset > window || src.set->raw_members() ||
      src.set->on_network_fs()) {
    return copy();
  }
  PACKFS_RETURN_IF_ERROR(CrcNotBad(file, src));
  // The last wanted inode among the next siblings bounds the catalog query; none wanted, none made.
  const uint64_t last_candidate = std::min(ino + kMaxFollowers, max_ino());
  uint64_t last_wanted = 0;
  // The source first: a remote walk that lends nothing now (several readers) needs no more.
  const bool walker = reader == kDirWalker;
  if ((walker || src.set->MayBringFollowers(src.node, reader)) && in_dir(file.parent)) {
    for (uint64_t i = ino + 1; i <= last_candidate; ++i) {
      if (claims.Wanted(i)) last_wanted = i;
    }
  }
  std::vector<Node> chosen;  // source nodes
  std::vector<uint64_t> inos;  // taken
  auto give_back = [&] {
    for (uint64_t i : inos) claims.GiveBack(i);
  };
  if (last_wanted != 0) {
    const uint64_t start = file.data_offset + offset;
    uint64_t prev_end = file.data_offset + file.size;
    // Rows are read only up to the first one past the window.
    Status rows = catalog_->ForRange(ino + 1, last_wanted + 1, [&](Node&& n) {
      if (n.is_dir() || n.parent != file.parent || n.shard != file.shard) return false;
      if (n.local_header_offset < prev_end || n.local_header_offset - prev_end > 64 * 1024) {
        return false;
      }
      if (n.data_offset + n.size - start > window) return false;
      prev_end = n.data_offset + n.size;
      if (n.size == 0) return true;
      // Past a file another read has taken, the files are that read's: reading them again
      // would read that stretch of the shard twice for nothing (readers in shard order).
      const FollowerClaims::Take take = claims.TakeFollower(n.id);
      if (take == FollowerClaims::Take::kStop) return false;
      if (take == FollowerClaims::Take::kSkip) return true;
      SourceNode sn = ToSource(n);
      if (sn.set != src.set) {
        claims.GiveBack(n.id);
        return false;
      }
      inos.push_back(n.id);
      chosen.push_back(std::move(sn.node));
      return true;
    });
    if (!rows.ok()) {
      give_back();
      return rows;
    }
  }
  if (!chosen.empty() &&
      !WindowPays(src, file.data_offset + offset,
                  chosen.back().data_offset + chosen.back().size)) {
    give_back();
    chosen.clear();
    inos.clear();
  }
  std::vector<std::span<const uint8_t>> data;
  Result<std::span<const uint8_t>> got =
      src.set->ReadThrough(src.node, offset, chosen, scratch, &data, walker);
  if (!got.ok()) {
    give_back();
    if (got.status().code() == Code::kInvalidArgument) return copy();  // not a local member
    return got.status().WithPrefix(Reading(file, src));
  }
  NoteShardUsed(file.shard);
  if (Status st = ObserveCrc(file, src, offset, *got); !st.ok()) {
    give_back();
    return st;
  }
  // Followers come from the file's shard, and each was checked whole against its CRC-32.
  const bool crc_checked = !inos.empty() && ChecksCrc(file);
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i].empty()) {  // short read, or its local header or CRC-32 did not match
      claims.GiveBack(inos[i]);
      continue;
    }
    followers->push_back(Follower{inos[i], data[i]});
    if (crc_checked) crc_->MarkGood(inos[i]);
  }
  ReadReply reply;
  reply.bytes = *got;
  return reply;
}

Result<std::optional<std::string>> Filesystem::GetXattr(uint64_t ino,
                                                        std::string_view name) const {
  PACKFS_ASSIGN_OR_RETURN(Node node, GetNode(ino));
  if (node.is_dir()) {
    if (node.id == kRootId && name == kXattrStats) return std::optional<std::string>(StatsJson());
    if (node.id == kRootId && name == kXattrErrors) {
      return std::optional<std::string>(errors_.ToJson());
    }
    return std::optional<std::string>();
  }
  SourceNode src = ToSource(node);
  std::string value;
  if (src.set->raw_members() && (name == kXattrRef || name == kXattrCrc32)) {
    return std::optional<std::string>();  // a loose or synthesized file: no zip member behind it
  }
  if (name == kXattrRef) {
    PACKFS_ASSIGN_OR_RETURN(std::string key, catalog_->KeyOf(node));
    value = src.set->Ref(key, src.node);
  } else if (name == kXattrShard) {
    value = src.set->ShardFilePath(src.node.shard);
  } else if (name == kXattrOffset) {
    value = std::to_string(node.data_offset);
  } else if (name == kXattrSize) {
    value = std::to_string(node.size);
  } else if (name == kXattrCrc32) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", node.crc32);
    value = hex;
  } else {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::move(value));
}

Result<std::vector<std::string>> Filesystem::ListXattr(uint64_t ino) const {
  PACKFS_ASSIGN_OR_RETURN(Node node, GetNode(ino));
  if (node.is_dir()) {
    if (node.id == kRootId) return std::vector<std::string>{kXattrStats, kXattrErrors};
    return std::vector<std::string>{};
  }
  if (ToSource(node).set->raw_members()) {
    return std::vector<std::string>{kXattrShard, kXattrOffset, kXattrSize};
  }
  return std::vector<std::string>{kXattrRef, kXattrShard, kXattrOffset, kXattrSize, kXattrCrc32};
}

std::string Filesystem::StatsJson() const {
  size_t open_shards = 0;
  for (const auto& src : sources_) open_shards += src->open_shard_count();
  std::string extra = "\"open_shards\": " + std::to_string(open_shards) +
                      ", \"sources\": " + std::to_string(sources_.size()) +
                      ", \"files\": " + std::to_string(totals_.files) +
                      ", \"shards\": " + std::to_string(totals_.shards);
  if (crc_) {
    const CrcTracker::Counters c = crc_->counters();
    extra += ", \"crc32\": {\"good\": " + std::to_string(c.good) +
             ", \"bad\": " + std::to_string(c.bad) +
             ", \"forgotten\": " + std::to_string(c.forgotten) + "}";
  }
  const DirNames::Counters d = dir_names_.counters();
  extra += ", \"lookups_in_memory\": {\"dirs\": " + std::to_string(d.dirs) +
           ", \"nodes\": " + std::to_string(d.nodes) +
           ", \"answered\": " + std::to_string(d.answered) + "}";
  if (options_.extra_stats) extra += ", " + options_.extra_stats();
  return stats_.ToJson(extra);
}

}  // namespace packfs
