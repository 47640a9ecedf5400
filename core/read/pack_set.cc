// PackSet: opens a pack directory (catalog file or in-memory index), then serves member bytes
// through the bounded shard pool with a once-per-member local header check (see pack_set.h).
#include "core/read/pack_set.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/base/crc32.h"
#include "core/base/key.h"
#include "core/base/parallel_for.h"
#include "core/base/unique_fd.h"
#include "core/read/shard_format.h"
#include "core/read/shard_pool.h"

namespace packfs {

struct PackSet::Impl {
  // `catalog` is the PackSet's, which it keeps for as long as this.
  Impl(const Catalog& catalog, ShardPaths shard_paths, size_t max_open, std::string hint,
       uint64_t max_id, ShardOpener opener = nullptr)
      : paths(std::move(shard_paths)),
        refresh_hint(hint),
        pool(catalog, paths, max_open, std::move(hint), std::move(opener)),
        checked_words(max_id / 64 + 1),
        checked(new std::atomic<uint64_t>[checked_words]) {
    for (size_t i = 0; i < checked_words; ++i) checked[i].store(0, std::memory_order_relaxed);
  }

  ShardPaths paths;
  std::string refresh_hint;
  ShardPool pool;
  // One bit per node id: its local header was checked. Lock-free so the read path never waits;
  // a race only means two threads check the same header once each.
  size_t checked_words;
  std::unique_ptr<std::atomic<uint64_t>[]> checked;

  bool Checked(uint64_t id) const;
  void MarkChecked(uint64_t id);

  // Per directory id, its last entry as RunEnd needs it: the shard and end of that file's bytes
  // (no shard when the entry is a directory or unknown). At most 4096 directories.
  struct LastEntry {
    uint32_t shard = UINT32_MAX;
    uint64_t end = 0;
  };
  std::mutex last_mu;
  std::unordered_map<uint64_t, LastEntry> last_entries;
};

namespace {

// A shard seen through bytes already read from it at `start`: reads inside them are served
// from memory, everything else from the shard. Lets the local header check of a member's first
// read use the pread that also fetched its data.
class PrefetchedSource final : public ShardSource {
 public:
  PrefetchedSource(const ShardSource& shard, uint64_t start, std::span<const uint8_t> bytes)
      : shard_(shard), start_(start), bytes_(bytes) {}
  const std::string& name() const override { return shard_.name(); }
  uint64_t size() const override { return shard_.size(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    if (offset >= start_ && offset - start_ <= bytes_.size() &&
        buf.size() <= bytes_.size() - (offset - start_)) {
      std::memcpy(buf.data(), bytes_.data() + (offset - start_), buf.size());
      return buf.size();
    }
    return shard_.ReadAt(offset, buf);
  }

 private:
  const ShardSource& shard_;
  uint64_t start_;
  std::span<const uint8_t> bytes_;
};

// A shard seen while checking one member's header: reads inside the member go through
// ReadMemberAt, so a remote shard fetches (and caches) the member whole — the extent the reads
// that follow need — instead of a separate block around the header (an extra request cold, an
// extra disk cache file warm).
class MemberReadSource final : public ShardSource {
 public:
  MemberReadSource(const ShardSource& shard, uint64_t begin, uint64_t end)
      : shard_(shard), begin_(begin), end_(end) {}
  const std::string& name() const override { return shard_.name(); }
  uint64_t size() const override { return shard_.size(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    if (offset >= begin_ && offset < end_ && buf.size() <= end_ - offset) {
      return shard_.ReadMemberAt(begin_, end_, offset, buf);
    }
    return shard_.ReadAt(offset, buf);
  }

 private:
  const ShardSource& shard_;
  uint64_t begin_;
  uint64_t end_;
};

std::string StripSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// Why the catalog no longer describes the directory ("" when it still does, as far as names
// and sizes tell; mtime-only differences are settled later by fingerprint). With `stat_sizes`
// the shards are stat'ed in parallel (on network storage each stat is a round trip); without,
// only the names are compared and the shard pool checks each size at first open.
std::string StaleReason(std::span<const ShardInfo> shards, const std::string& dir,
                        const std::vector<std::string>& names, const std::string& prefix,
                        bool stat_sizes) {
  std::vector<std::string> reasons;
  // Both lists are in name order; equal lists (the usual case) need no set.
  bool same = names.size() == shards.size();
  for (size_t i = 0; same && i < names.size(); ++i) same = names[i] == shards[i].name;
  if (!same) {
    std::unordered_set<std::string_view> listed;
    for (const ShardInfo& s : shards) listed.insert(s.name);
    for (const auto& n : names) {
      if (!listed.count(n)) reasons.push_back(prefix + "/" + n + " was added since it was built");
    }
  }
  std::vector<uint8_t> verdict(shards.size(), 0);  // 1: removed, 2: changed size
  UniqueFd dfd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ParallelFor(stat_sizes ? shards.size() : 0, 16, [&](size_t i) {
    struct stat st;
    // Relative to the directory: no walk of its path per shard.
    const int rc = dfd.valid() ? ::fstatat(dfd.get(), shards[i].name.c_str(), &st, 0)
                               : ::stat((dir + "/" + shards[i].name).c_str(), &st);
    verdict[i] = rc != 0 ? 1 : static_cast<uint64_t>(st.st_size) != shards[i].size ? 2 : 0;
  });
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string ref = prefix + "/" + shards[i].name;
    if (verdict[i] == 1) reasons.push_back(ref + " was removed since it was built");
    if (verdict[i] == 2) reasons.push_back(ref + " changed since it was built");
  }
  if (reasons.empty()) return "";
  std::string r = reasons[0];
  if (reasons.size() > 1) r += ", and " + std::to_string(reasons.size() - 1) + " more";
  return r;
}

// Whether no entry of `dir` was added, removed or renamed since `file` (inside it) was written:
// writing the catalog renames it into place, which stamps the directory's mtime and the file's
// ctime alike, and any later change to the directory's entries moves its mtime past that.
bool DirUnchangedSince(const std::string& dir, const std::string& file) {
  struct stat d, f;
  if (::stat(dir.c_str(), &d) != 0 || ::stat(file.c_str(), &f) != 0) return false;
  return std::make_pair(d.st_mtim.tv_sec, d.st_mtim.tv_nsec) <=
         std::make_pair(f.st_ctim.tv_sec, f.st_ctim.tv_nsec);
}

bool ListsExactly(std::span<const ShardInfo> shards, const std::vector<std::string>& names) {
  std::unordered_set<std::string> want(names.begin(), names.end());
  if (want.size() != shards.size()) return false;
  for (const ShardInfo& s : shards) {
    if (!want.count(s.name)) return false;
  }
  return true;
}

}  // namespace

PackSet::~PackSet() = default;

Result<std::unique_ptr<PackSet>> PackSet::Open(const std::string& dir,
                                               const PackSetOptions& opts) {
  return Open(dir, opts, {});
}

Result<std::unique_ptr<PackSet>> PackSet::Open(const std::string& dir_in,
                                               const PackSetOptions& opts,
                                               const std::vector<std::string>& shard_files) {
  const std::string dir = StripSlashes(dir_in);
  const std::string prefix = opts.ref_prefix.empty() ? PackDirBaseName(dir) : opts.ref_prefix;
  const std::string catalog_path =
      opts.catalog_path.empty() ? dir + "/" + kCatalogFileName : opts.catalog_path;
  const std::string refresh = "run `mkpack catalog " + dir + "` to refresh it";
  using Use = PackSetOptions::CatalogUse;

  Result<std::unique_ptr<Catalog>> cat = Status::NotFound("no catalog read");
  if (opts.catalog_use != Use::kNone) cat = Catalog::Open(catalog_path, /*lazy_shards=*/true);
  // A large set whose directory is unchanged since its catalog was written is served as the
  // catalog says, with no listing, no stat and no shard row read at open (each shard's row is
  // read, and its size checked, when it is first opened); any other set is compared with the
  // catalog's every row.
  const bool trusted = shard_files.empty() && cat.ok() &&
                       (*cat)->shard_count() > opts.check_shards_at_open &&
                       opts.catalog_path.empty() && DirUnchangedSince(dir, catalog_path);
  std::span<const ShardInfo> cat_shards;
  std::vector<std::string> names;
  if (!trusted) {
    if (cat.ok()) {
      PACKFS_ASSIGN_OR_RETURN(cat_shards, (*cat)->Shards());
    }
    PACKFS_ASSIGN_OR_RETURN(names, ListShardFiles(dir));
    if (!shard_files.empty()) names = shard_files;
    if (names.empty()) return Status::NotFound(dir + " holds no pack-*.zip shards or *.tar files");
  }

  std::unique_ptr<PackSet> ps(new PackSet());
  ps->dir_ = dir;
  ps->on_network_fs_ = OnNetworkFilesystem(dir);
  ps->shard_files_ = true;
  if (trusted) {
    ps->catalog_ = std::move(cat).value();
    ps->using_catalog_file_ = true;
  } else if (opts.catalog_use != Use::kNone) {
    if (cat.ok() && !shard_files.empty() && !ListsExactly(cat_shards, names)) {
      // A catalog of the whole directory does not describe a chosen subset of its shards.
    } else if (std::vector<MissingShard> missing =
                   cat.ok() ? FindMissingShards(cat_shards, names) : std::vector<MissingShard>();
               !missing.empty()) {
      // Serving the rest would hide those members without a word (as a plain refresh would
      // drop them): the set is incomplete, and only its owner can say whether that is wanted.
      const bool one = missing.size() == 1;
      return Status::Stale("catalog " + catalog_path + " lists " +
                           DescribeMissingShards(missing, prefix) +
                           (one ? ", which is" : ", which are") + " missing from " + dir +
                           ": restore " + (one ? "it" : "them") +
                           ", or run `mkpack catalog --forget-missing " + dir + "` to drop " +
                           (one ? "its" : "their") + " members from the catalog");
    } else if (cat.ok()) {
      std::string why = StaleReason(cat_shards, dir, names, prefix,
                                    cat_shards.size() <= opts.check_shards_at_open);
      if (why.empty()) {
        ps->catalog_ = std::move(cat).value();
        ps->using_catalog_file_ = true;
      } else if (opts.catalog_use == Use::kRequire) {
        return Status::Stale("catalog " + catalog_path + " is stale (" + why + "); " + refresh);
      } else {
        ps->warnings_.push_back("catalog is stale (" + why +
                                "); indexed the shards in memory — " + refresh);
      }
    } else if (opts.catalog_use == Use::kRequire) {
      return cat.status();
    } else if (cat.status().code() != Code::kNotFound) {
      ps->warnings_.push_back(cat.status().message() + "; indexed the shards in memory instead");
    }
  }
  if (!ps->catalog_) {
    PACKFS_ASSIGN_OR_RETURN(CatalogData data,
                            IndexShardFiles(dir, names, nullptr, opts.index_threads, nullptr));
    PACKFS_ASSIGN_OR_RETURN(ps->catalog_, Catalog::FromData(data));
  }
  for (const auto& p : ps->catalog_->problems()) ps->warnings_.push_back(p);

  const CatalogTotals& t = ps->catalog_->totals();
  ShardPaths paths(
      *ps->catalog_, [dir](const std::string& name) { return dir + "/" + name; }, prefix);
  ps->impl_ = std::make_unique<Impl>(
      *ps->catalog_, std::move(paths),
      opts.max_open_shards ? opts.max_open_shards : DefaultMaxOpenShards(), refresh,
      t.files + t.directories);
  return ps;
}

bool OnNetworkFilesystem(const std::string& path) {
  struct statfs st;
  if (::statfs(path.c_str(), &st) != 0) return false;
  switch (static_cast<uint64_t>(st.f_type) & 0xFFFFFFFFu) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFE534D42:  // SMB2
    case 0xFF534D42:  // CIFS
    case 0x00C36400:  // Ceph
    case 0x01021997:  // 9p
    case 0x5346414F:  // AFS
    case 0x6B414653:  // kAFS
    case 0x0BD00BD0:  // Lustre
    case 0x65735546:  // FUSE (sshfs, GlusterFS, s3fs, rclone, ...)
      return true;
    default:
      return false;
  }
}

Result<std::unique_ptr<PackSet>> PackSet::FromSources(std::string label, const CatalogData& data,
                                                     std::vector<std::string> file_paths,
                                                     std::vector<std::string> ref_paths,
                                                     ShardOpener opener) {
  if (file_paths.size() != data.shards.size() || ref_paths.size() != data.shards.size()) {
    return Status::InvalidArgument("PackSet::FromSources: one file and ref path per shard");
  }
  std::unique_ptr<PackSet> ps(new PackSet());
  ps->dir_ = std::move(label);
  ps->raw_members_ = true;
  PACKFS_ASSIGN_OR_RETURN(ps->catalog_, Catalog::FromData(data));
  for (const auto& p : ps->catalog_->problems()) ps->warnings_.push_back(p);
  const CatalogTotals& t = ps->catalog_->totals();
  ps->impl_ = std::make_unique<Impl>(*ps->catalog_,
                                     ShardPaths(std::move(file_paths), std::move(ref_paths)),
                                     DefaultMaxOpenShards(), "remount to see the current files",
                                     t.files + t.directories, std::move(opener));
  return ps;
}

Result<std::unique_ptr<PackSet>> PackSet::FromCatalog(
    std::string label, std::unique_ptr<Catalog> catalog,
    std::function<std::string(const std::string&)> file_of, std::string ref_prefix,
    ShardOpener opener, std::string refresh_hint, bool local_copies) {
  if (catalog == nullptr || !file_of || !opener) {
    return Status::InvalidArgument("PackSet::FromCatalog: needs a catalog, file_of and an opener");
  }
  std::unique_ptr<PackSet> ps(new PackSet());
  ps->dir_ = std::move(label);
  ps->local_copies_ = local_copies;
  ps->catalog_ = std::move(catalog);
  for (const auto& p : ps->catalog_->problems()) ps->warnings_.push_back(p);
  const CatalogTotals& t = ps->catalog_->totals();
  ShardPaths paths(*ps->catalog_, std::move(file_of), std::move(ref_prefix));
  ps->impl_ = std::make_unique<Impl>(*ps->catalog_, std::move(paths),
                                     DefaultMaxOpenShards(), std::move(refresh_hint),
                                     t.files + t.directories, std::move(opener));
  return ps;
}

namespace {

// A member's bytes seen as a source of their own, read through its pack set.
class PackMemberSource final : public ShardSource {
 public:
  PackMemberSource(const PackSet& set, std::string key, const Node& file)
      : set_(set), key_(std::move(key)), file_(file) {}
  const std::string& name() const override { return key_; }
  uint64_t size() const override { return file_.size; }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    if (offset >= file_.size || buf.empty()) return size_t{0};
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), file_.size - offset));
    PACKFS_RETURN_IF_ERROR(set_.CheckMember(file_));
    PACKFS_ASSIGN_OR_RETURN(ShardLease shard, set_.OpenShard(file_.shard));
    PACKFS_ASSIGN_OR_RETURN(size_t got,
                            shard->ReadAt(file_.data_offset + offset, buf.subspan(0, n)));
    if (got != n) {
      return Status::Stale(set_.ShardRefPath(file_.shard) + ": short read of member " +
                           QuoteKey(key_) + " (the shard shrank?)");
    }
    return n;
  }
  Result<std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>> MapToFile(
      uint64_t offset, uint64_t length) const override {
    using Mapped = std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>;
    if (offset > file_.size || length > file_.size - offset) return Mapped();
    PACKFS_RETURN_IF_ERROR(set_.CheckMember(file_));
    PACKFS_ASSIGN_OR_RETURN(ShardLease shard, set_.OpenShard(file_.shard));
    if (file_.data_offset + offset + length > shard->size()) return Mapped();
    if (shard->fd() >= 0) return Mapped(std::make_pair(shard, file_.data_offset + offset));
    return shard->MapToFile(file_.data_offset + offset, length);
  }

 private:
  const PackSet& set_;
  std::string key_;
  Node file_;
};

}  // namespace

std::shared_ptr<const ShardSource> PackSet::MemberSource(const std::string& key,
                                                         const Node& file) const {
  return std::make_shared<PackMemberSource>(*this, key, file);
}

std::string PackSet::ShardRefPath(uint32_t shard) const {
  return impl_->paths.Ref(shard);
}

std::string PackSet::ShardFilePath(uint32_t shard) const {
  return impl_->paths.File(shard);
}

std::string PackSet::Ref(const std::string& key, const Node& file) const {
  return FormatRef(key, ShardRefPath(file.shard));
}

Result<ShardLease> PackSet::OpenShard(uint32_t shard) const { return impl_->pool.Get(shard); }

size_t PackSet::open_shard_count() const { return impl_->pool.open_count(); }

bool PackSet::Impl::Checked(uint64_t id) const {
  return id / 64 < checked_words &&
         (checked[id / 64].load(std::memory_order_acquire) & (uint64_t{1} << (id % 64))) != 0;
}

void PackSet::Impl::MarkChecked(uint64_t id) {
  if (id / 64 < checked_words) {
    checked[id / 64].fetch_or(uint64_t{1} << (id % 64), std::memory_order_release);
  }
}

uint64_t PackSet::RunEnd(const Node& file) const {
  std::optional<Impl::LastEntry> last;
  {
    std::lock_guard<std::mutex> lock(impl_->last_mu);
    auto it = impl_->last_entries.find(file.parent);
    if (it != impl_->last_entries.end()) last = it->second;
  }
  if (!last) {
    // A directory's entries hold consecutive ids in name order. A hint only: a failed query
    // leaves the run unknown rather than failing the read.
    last = Impl::LastEntry{};
    Result<std::optional<Node>> dir = catalog_->Get(file.parent);
    if (dir.ok() && *dir && (*dir)->child_count > 0) {
      Result<std::optional<Node>> entry =
          catalog_->Get((*dir)->first_child + (*dir)->child_count - 1);
      if (entry.ok() && *entry && !(*entry)->is_dir()) {
        last->shard = (*entry)->shard;
        last->end = (*entry)->data_offset + (*entry)->size;
      }
    }
    std::lock_guard<std::mutex> lock(impl_->last_mu);
    if (impl_->last_entries.size() >= 4096) impl_->last_entries.clear();
    impl_->last_entries[file.parent] = *last;
  }
  return last->shard == file.shard && last->end >= file.data_offset + file.size ? last->end : 0;
}

Status PackSet::CheckMember(const Node& file) const {
  if (raw_members_ || impl_->Checked(file.id)) return Status::OK();
  PACKFS_ASSIGN_OR_RETURN(ShardLease src, OpenShard(file.shard));
  return CheckMemberAgainst(file, *src);
}

namespace {

// Room for `n` bytes in `scratch` to be read from shard offset `from`, at the same offset within
// a page as `from`. The kernel copies page cache into user memory with `rep movsb`, which on
// these machines (AMD EPYC) runs at 1.6-2.3 GB/s instead of 8.4-9.7 when the destination lies
// 1-32 bytes past the source modulo 4 KiB (measured with pread of 1 MiB): exactly the case of a
// malloc'd buffer (16 bytes past a page) and page-aligned member data, which made every copied
// read of a large member 5x slower than the copy needs. Matching offsets are the fast case, and
// keep the reply's copy (from here into the mount's page-aligned page cache) fast as well.
std::span<uint8_t> PageMatched(std::vector<uint8_t>* scratch, uint64_t from, size_t n) {
  constexpr size_t kPage = 4096;
  if (scratch->size() < n + kPage - 1) scratch->resize(n + kPage - 1);
  const auto base = reinterpret_cast<uintptr_t>(scratch->data());
  const size_t pad = static_cast<size_t>((from - base) & (kPage - 1));
  return std::span<uint8_t>(scratch->data() + pad, n);
}

// Whether the kernel's copy from shard offset `from` to `to` avoids that slow case.
bool FastCopy(uint64_t from, const void* to) {
  const auto past = static_cast<size_t>((reinterpret_cast<uintptr_t>(to) - from) & 4095);
  return past == 0 || past > 32;
}

}  // namespace

bool PackSet::MayBringFollowers(const Node& file, uint64_t reader) const {
  if (file.is_dir() || raw_members_) return false;
  if (shard_files_) return true;
  Result<ShardLease> src = OpenShard(file.shard);
  return src.ok() && (*src)->MayLendFollowers(file.data_offset + file.size, reader);
}

Result<std::span<const uint8_t>> PackSet::ReadThrough(
    const Node& file, uint64_t offset, std::span<const Node> followers,
    std::vector<uint8_t>* scratch, std::vector<std::span<const uint8_t>>* out, bool fetch) const {
  out->assign(followers.size(), std::span<const uint8_t>());
  if (file.is_dir() || raw_members_) return Status::InvalidArgument("not a zip or tar member");
  if (offset >= file.size) return std::span<const uint8_t>();
  PACKFS_ASSIGN_OR_RETURN(ShardLease src, OpenShard(file.shard));
  if (src->fd() < 0 && followers.empty()) return Status::InvalidArgument("not a local shard");
  const uint64_t at = file.data_offset + offset;
  const uint64_t file_end = file.data_offset + file.size;
  const bool file_checked = impl_->Checked(file.id);
  const uint64_t begin = file_checked ? at : std::min(at, file.local_header_offset);
  uint64_t end = file_end;
  for (const Node& f : followers) {
    if (f.shard != file.shard || f.local_header_offset < end || f.is_dir()) {
      return Status::InvalidArgument("followers must follow the member in its shard");
    }
    end = f.data_offset + f.size;
  }
  if (end > src->size()) {
    return Status::Stale(ShardRefPath(file.shard) + ": the catalog places members up to offset " +
                         std::to_string(end) + " but the shard ends at " +
                         std::to_string(src->size()) + " (the shard shrank?); " +
                         impl_->refresh_hint);
  }
  const size_t total = static_cast<size_t>(end - begin);
  const std::span<uint8_t> buf = PageMatched(scratch, begin, total);
  if (src->fd() < 0) {
    return ReadThroughCached(file, offset, followers, *src, begin, buf, out, fetch);
  }
  PACKFS_ASSIGN_OR_RETURN(size_t got, src->ReadAt(begin, buf));
  const std::span<const uint8_t> bytes(buf.data(), got);
  PrefetchedSource prefetched(*src, begin, bytes);
  if (!file_checked) PACKFS_RETURN_IF_ERROR(CheckMemberAgainst(file, prefetched));
  if (got < file_end - begin) {
    return ShortRead(file, at);
  }
  const bool has_crc = HasCrc(file.shard);
  for (size_t i = 0; i < followers.size(); ++i) {
    const Node& f = followers[i];
    if (f.data_offset + f.size > begin + got) break;
    std::span<const uint8_t> data = bytes.subspan(f.data_offset - begin, f.size);
    if (FollowerIntact(f, prefetched, data, has_crc)) (*out)[i] = data;
  }
  return bytes.subspan(at - begin, file_end - at);
}

Result<std::span<const uint8_t>> PackSet::ReadThroughCached(
    const Node& file, uint64_t offset, std::span<const Node> followers, const ShardSource& src,
    uint64_t begin, std::span<uint8_t> buf, std::vector<std::span<const uint8_t>>* out,
    bool fetch) const {
  // The file is read as any read of it is (ReadMemberAt: its request, if it needs one, is the
  // only one made); its bytes go first in `buf`, which holds the shard from `begin`.
  const uint64_t at = file.data_offset + offset;
  const uint64_t file_end = file.data_offset + file.size;
  const std::span<uint8_t> head = buf.first(static_cast<size_t>(file_end - begin));
  PACKFS_ASSIGN_OR_RETURN(
      size_t got, src.ReadMemberAt(file.local_header_offset, file_end, begin, head, RunEnd(file)));
  if (got != head.size()) {
    return ShortRead(file, at);
  }
  if (!impl_->Checked(file.id)) {
    PACKFS_RETURN_IF_ERROR(CheckMemberAgainst(file, PrefetchedSource(src, begin, head)));
  }
  const bool has_crc = HasCrc(file.shard);
  // Then the followers the shard holds now, on local disk (its disk cache) or in memory, in
  // order, up to the first it does not. A walk fetches them instead: read in shard order, they
  // are a walk to the remote reader too, which reads ahead of them in large parts.
  std::vector<Extent> lent;
  for (size_t i = 0; i < followers.size(); ++i) {
    const Node& f = followers[i];
    const uint64_t f_end = f.data_offset + f.size;
    const std::span<uint8_t> member =
        buf.subspan(f.local_header_offset - begin, f_end - f.local_header_offset);
    if (fetch) {
      Result<size_t> read =
          src.ReadMemberAt(f.local_header_offset, f_end, f.local_header_offset, member, RunEnd(f));
      if (!read.ok() || *read != member.size()) break;  // left to its own READ to report
    } else if (!src.ReadCachedRange(f.local_header_offset, member)) {
      lent.clear();
      if (!src.LendCachedMember(f.local_header_offset, f_end, &lent)) break;
      size_t filled = 0;
      for (const Extent& e : lent) {
        if (e->size() > member.size() - filled) break;
        std::memcpy(member.data() + filled, e->data(), e->size());
        filled += e->size();
      }
      if (filled != member.size()) break;  // (not what was asked: left to its own READ)
    }
    std::span<const uint8_t> data = member.subspan(f.data_offset - f.local_header_offset);
    if (FollowerIntact(f, PrefetchedSource(src, f.local_header_offset, member), data, has_crc)) {
      (*out)[i] = data;
    }
  }
  return std::span<const uint8_t>(head.subspan(at - begin));
}

Status PackSet::ShortRead(const Node& file, uint64_t at) const {
  return Status::Stale(ShardRefPath(file.shard) + ": short read of member data at offset " +
                       std::to_string(at) + " (the shard shrank?); " + impl_->refresh_hint);
}

bool PackSet::HasCrc(uint32_t shard) const {
  Result<const ShardInfo*> info = catalog_->Shard(shard);
  return !info.ok() || ShardFormatOf((*info)->name) != ShardFormat::kTar;
}

bool PackSet::FollowerIntact(const Node& follower, const ShardSource& seen,
                             std::span<const uint8_t> data, bool has_crc) const {
  if (!impl_->Checked(follower.id) && !CheckMemberAgainst(follower, seen).ok()) return false;
  return !has_crc || Crc32(0, data.data(), data.size()) == follower.crc32;
}

Status PackSet::CheckMemberAgainst(const Node& file, const ShardSource& shard) const {
  PACKFS_ASSIGN_OR_RETURN(std::string key, catalog_->KeyOf(file));
  const MemberReadSource src(shard, file.local_header_offset, file.data_offset + file.size);
  Result<const ShardInfo*> shard_info = catalog_->Shard(file.shard);
  Status st = CheckShardMember(src, shard_info.ok() ? (*shard_info)->name : "", key, file);
  if (!st.ok()) {
    return Status::Stale(ShardRefPath(file.shard) + ": member " + QuoteKey(key) +
                         ": local header does not match the catalog (shard changed?): " +
                         st.message() + "; " + impl_->refresh_hint);
  }
  impl_->MarkChecked(file.id);
  return Status::OK();
}

Result<std::span<const uint8_t>> PackSet::ReadCopy(const Node& file, uint64_t offset, size_t size,
                                                   std::vector<uint8_t>* scratch,
                                                   const ShardLease* open,
                                                   std::span<uint8_t> into) const {
  if (file.is_dir()) return Status::InvalidArgument("cannot read a directory");
  if (offset >= file.size || size == 0) return std::span<const uint8_t>();
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size, file.size - offset));
  ShardLease src;
  if (open != nullptr && *open) {
    src = *open;
  } else {
    PACKFS_ASSIGN_OR_RETURN(src, OpenShard(file.shard));
  }
  const uint64_t at = file.data_offset + offset;
  // The member's bytes, local header included (raw members have none: data_offset is 0).
  const uint64_t member_end = file.data_offset + file.size;
  const uint64_t run_end = src->fd() < 0 ? RunEnd(file) : 0;  // (a hint for remote shards)
  const bool checked = raw_members_ || impl_->Checked(file.id);
  if (checked || file.local_header_offset > at || at - file.local_header_offset > kHeadedReadGap) {
    if (!checked) PACKFS_RETURN_IF_ERROR(CheckMemberAgainst(file, *src));
    const std::span<uint8_t> buf =
        into.size() >= n && FastCopy(at, into.data()) ? into.first(n) : PageMatched(scratch, at, n);
    PACKFS_ASSIGN_OR_RETURN(
        size_t got, src->ReadMemberAt(file.local_header_offset, member_end, at, buf, run_end));
    if (got != n) return ShortRead(file, at);
    return std::span<const uint8_t>(buf);
  }
  // First read of this member, close to its start: one pread covers the local header and the
  // bytes asked for, so a cold small file costs one disk request, not two. The header check then
  // reads from memory (anything outside the bytes read goes to the shard as usual).
  const uint64_t head = at - file.local_header_offset;
  const size_t total = static_cast<size_t>(head) + n;
  const std::span<uint8_t> buf = PageMatched(scratch, file.local_header_offset, total);
  PACKFS_ASSIGN_OR_RETURN(size_t got, src->ReadMemberAt(file.local_header_offset, member_end,
                                                        file.local_header_offset, buf, run_end));
  PrefetchedSource prefetched(*src, file.local_header_offset, buf.first(got));
  PACKFS_RETURN_IF_ERROR(CheckMemberAgainst(file, prefetched));
  if (got != total) return ShortRead(file, at);
  return std::span<const uint8_t>(buf.subspan(head, n));
}

Result<std::optional<size_t>> PackSet::Lend(const Node& file, uint64_t offset, size_t size,
                                            ShardLease* open, std::vector<Extent>* out) const {
  if (file.is_dir()) return Status::InvalidArgument("cannot read a directory");
  if (!raw_members_ && !impl_->Checked(file.id)) return std::optional<size_t>();
  if (offset >= file.size || size == 0) return std::optional<size_t>(0);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size, file.size - offset));
  if (!*open) {
    PACKFS_ASSIGN_OR_RETURN(*open, OpenShard(file.shard));
  }
  const uint64_t at = file.data_offset + offset;
  const size_t before = out->size();
  PACKFS_ASSIGN_OR_RETURN(
      std::optional<size_t> got,
      (*open)->LendMemberAt(file.local_header_offset, file.data_offset + file.size, at, n, out,
                            (*open)->fd() < 0 ? RunEnd(file) : 0));
  if (got && *got != n) {
    out->resize(before);
    return ShortRead(file, at);
  }
  return got;
}

Result<size_t> PackSet::Read(const Node& file, uint64_t offset, std::span<uint8_t> buf) const {
  std::vector<uint8_t> scratch;
  PACKFS_ASSIGN_OR_RETURN(std::span<const uint8_t> got,
                          ReadCopy(file, offset, buf.size(), &scratch));
  if (!got.empty()) std::memcpy(buf.data(), got.data(), got.size());
  return got.size();
}

}  // namespace packfs
