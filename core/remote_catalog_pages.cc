// A remote catalog read in place through RemoteDb (see remote_catalog_pages.h).
#include "core/remote_catalog_pages.h"

#include <algorithm>
#include <cstring>

#include "core/remote_vfs.h"

namespace packfs {
namespace {

// The catalog object, one version of it: its first bytes from memory, the rest by ranged GETs
// that require the ETag of the first answer.
class CatalogObject final : public RangeFetcher {
 public:
  CatalogObject(std::shared_ptr<const HttpClient> client, RemoteCatalogHead head)
      : client_(std::move(client)), head_(std::move(head)),
        key_(head_.url + "\n" +
             (head_.etag.empty() ? "catalog of " + std::to_string(head_.size) + " bytes"
                                 : head_.etag)) {}

  const std::string& cache_key() const override { return key_; }
  bool persistent() const override { return !head_.etag.empty(); }
  uint64_t size() const override { return head_.size; }

  Status Fetch(uint64_t offset, std::span<uint8_t> buf,
               const std::function<void(size_t)>& progress = nullptr) const override {
    const std::string& first = head_.bytes;
    size_t known = 0;
    if (offset < first.size()) {
      known = static_cast<size_t>(std::min<uint64_t>(buf.size(), first.size() - offset));
      std::memcpy(buf.data(), first.data() + offset, known);
    }
    if (known == buf.size()) return Status::OK();
    std::function<void(size_t)> shifted;
    if (progress) shifted = [&progress, known](size_t n) { progress(known + n); };
    HttpRangeAnswer answer;
    Result<size_t> got = client_->GetRange(head_.url, offset + known, buf.subspan(known),
                                            head_.etag, shifted, &answer);
    if (!got.ok()) {
      if (got.status().code() != Code::kStale) return got.status();
      return got.status().WithPrefix("the catalog changed on the server since the mount; " +
                                     std::string("remount to use the new one"));
    }
    if ((answer.total_known && answer.total != head_.size) || *got != buf.size() - known) {
      return Status::Stale(head_.url + " is no longer the " + std::to_string(head_.size) +
                           "-byte catalog the mount opened; remount to use the new one");
    }
    return Status::OK();
  }

 private:
  std::shared_ptr<const HttpClient> client_;
  RemoteCatalogHead head_;
  std::string key_;
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
  o.sequential_before_window = 256 << 10;
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
  auto object = std::make_shared<const CatalogObject>(std::move(client), std::move(head));
  PACKFS_ASSIGN_OR_RETURN(in_place->db, RemoteDb::Open(object, in_place->reader));
  const RemoteDb* db = in_place->db.get();
  const std::string uri = db->uri();
  return Catalog::OpenUri(uri, std::move(label), size, in_place,
                          [db] { return db->last_error(); });
}

}  // namespace packfs
