// A remote catalog read in place through RemoteDb (see remote_catalog_pages.h).
#include "core/remote/remote_catalog_pages.h"

#include <algorithm>
#include <cstring>

#include "core/remote/remote_source.h"
#include "core/remote/remote_vfs.h"

namespace packfs {
namespace {

// The catalog object, one version of it: its first bytes from memory, the rest through the
// object a shard source of known size and ETag reads (ranged GETs requiring that ETag).
class CatalogObject final : public RangeFetcher {
 public:
  CatalogObject(std::shared_ptr<const HttpClient> client, RemoteCatalogHead head, std::string name)
      : object_(RemoteShardSource::FromKnown(std::move(client), head.url, std::move(name),
                                             head.size, head.etag)
                    ->fetcher()),
        first_(std::move(head.bytes)) {}

  const std::string& cache_key() const override { return object_->cache_key(); }
  bool persistent() const override { return object_->persistent(); }
  uint64_t size() const override { return object_->size(); }

  Status Fetch(uint64_t offset, std::span<uint8_t> buf,
               const std::function<void(size_t)>& progress = nullptr) const override {
    size_t known = 0;
    if (offset < first_.size()) {
      known = static_cast<size_t>(std::min<uint64_t>(buf.size(), first_.size() - offset));
      std::memcpy(buf.data(), first_.data() + offset, known);
    }
    if (known == buf.size()) return Status::OK();
    std::function<void(size_t)> shifted;
    if (progress) shifted = [&progress, known](size_t n) { progress(known + n); };
    Status st = object_->Fetch(offset + known, buf.subspan(known), shifted);
    if (st.code() == Code::kStale) {
      return Status::Stale("the catalog changed on the server since the mount; remount to use "
                           "the new one: " + st.message());
    }
    return st;
  }

 private:
  std::shared_ptr<const RangeFetcher> object_;
  std::string first_;
};

// What the catalog keeps alive: the reader outlives the registration of the object.
struct InPlace {
  std::shared_ptr<RemoteReader> reader;
  std::unique_ptr<RemoteDb> db;
};

}  // namespace

RemoteReaderOptions CatalogPageOptions(const RemoteReaderOptions& shard_read,
                                       const std::string& cache_dir) {
  RemoteReaderOptions o;
  // 64 KiB blocks: four 16 KiB catalog pages, so a cold lookup costs one small GET per page it
  // misses (and often finds its neighbours in the same block) at about a round trip's price.
  o.block_size = 64 << 10;
  // A quarter of the shard cache, at most 64 MiB: the pages of a 1M-member catalog (50 MB)
  // fit, a larger one's hot pages do.
  o.memory_bytes = std::clamp<uint64_t>(shard_read.memory_bytes / 4, 1 << 20, uint64_t{64} << 20);
  // The file is one large "member": a listing's scan reads its pages after each other and, past
  // 256 KiB in order, gets a read-ahead window (256 KiB doubling to 8 MiB); opening (a few pages
  // near the start) and lookups read only what they touch.
  o.whole_member_limit = 0;
  o.walk_window = 0;
  o.block_member_limit = 0;
  o.sequential_before_window = 256 << 10;
  // SQLite reads a scan's pages in order, one at a time: a read more than a block past the last
  // is a jump (another shard row, another directory), not the same scan.
  o.sequential_slack = o.block_size;
  o.min_window = 256 << 10;
  o.max_window = 8 << 20;
  o.max_part = 1 << 20;
  o.prefetch_threads = 4;
  if (!shard_read.disk_dir.empty()) {
    o.disk_dir = shard_read.disk_dir;
    o.disk_bytes = shard_read.disk_bytes;
  } else if (!cache_dir.empty()) {
    o.disk_dir = cache_dir + "/catalog-pages";
    o.disk_bytes = uint64_t{1} << 30;
  }
  return o;
}

Result<std::unique_ptr<Catalog>> OpenCatalogInPlace(std::shared_ptr<const HttpClient> client,
                                                    RemoteCatalogHead head, std::string label,
                                                    const RemoteReaderOptions& pages) {
  auto in_place = std::make_shared<InPlace>();
  PACKFS_ASSIGN_OR_RETURN(in_place->reader, RemoteReader::Create(pages));
  const uint64_t size = head.size;
  auto object = std::make_shared<const CatalogObject>(std::move(client), std::move(head), label);
  PACKFS_ASSIGN_OR_RETURN(in_place->db, RemoteDb::Open(object, in_place->reader));
  const RemoteDb* db = in_place->db.get();
  const std::string uri = db->uri();
  return Catalog::OpenUri(uri, std::move(label), size, in_place,
                          [db] { return db->last_error(); });
}

}  // namespace packfs
