// Remote verify, catalog build and catalog upload (see remote_maintenance.h).
#include "core/remote/remote_maintenance.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/read/shard_format.h"
#include "core/remote/remote_catalog.h"
#include "core/remote/remote_source.h"
#include "core/remote/remote_store.h"

namespace packfs {
namespace {


std::string CacheDirOf(const RemoteOptions& options) {
  return options.cache_dir.empty() ? DefaultRemoteCacheDir() : options.cache_dir;
}

int OpenThreads(const RemoteOptions& options, int threads) {
  if (threads > 0) return threads;
  return options.open_threads > 0 ? options.open_threads : 16;
}

Result<std::unique_ptr<RemoteStore>> StoreFor(std::string location, const RemoteOptions& options) {
  while (location.size() > 1 && location.back() == '/') location.pop_back();
  return RemoteStore::Create(location, options.s3, options.http);
}

}  // namespace

Result<VerifyReport> VerifyRemotePackSet(const std::string& location_in,
                                         const RemoteOptions& options, int threads) {
  PACKFS_ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> store, StoreFor(location_in, options));
  const std::string location = store->location().ToString();
  VerifyInput in;
  in.prefix = UrlBaseName(store->location());
  in.refresh_command = "mkpack catalog " + location;

  std::unique_ptr<Catalog> catalog;
  Result<CachedCatalog> cached =
      FetchCatalogToCache(*store, location, CacheDirOf(options), options.max_catalog_bytes);
  if (cached.ok()) {
    in.catalog_present = true;
    Result<std::unique_ptr<Catalog>> cat = Catalog::Open(cached->path);
    if (cat.ok()) {
      catalog = std::move(cat).value();
      in.catalog = catalog.get();
    } else {
      in.catalog_error = cat.status().WithPrefix(location + "/" + kCatalogFileName).message();
    }
  } else if (cached.status().code() != Code::kNotFound) {
    return cached.status().WithPrefix(location);
  }

  const int n = OpenThreads(options, threads);
  PACKFS_ASSIGN_OR_RETURN(std::vector<RemoteShard> shards,
                          DiscoverRemoteShards(*store, catalog.get(), n));
  // Without ranges every read of every shard would fail: one line now instead of a problem per
  // shard and per catalog entry.
  PACKFS_RETURN_IF_ERROR(ProbeRangeSupport(*store->http(), shards.front().url, shards.front().etag)
                             .WithPrefix(location));
  for (const RemoteShard& s : shards) in.names.push_back(s.name);
  std::shared_ptr<const HttpClient> client = store->http();
  in.open = [&](size_t i) -> Result<std::unique_ptr<ShardSource>> {
    const RemoteShard& s = shards[i];
    // Named by URL: that is what the user can fetch, compare or re-upload. The ETag seen when
    // the shard was found is required of every read, so a shard replaced mid-run is reported
    // as changed rather than as damaged.
    return std::unique_ptr<ShardSource>(
        RemoteShardSource::FromKnown(client, s.url, s.url, s.size, s.etag));
  };
  return VerifyShards(in, n);
}

Result<RemoteCatalogBuild> BuildRemoteCatalog(const std::string& location_in,
                                              const RemoteOptions& options, int threads) {
  PACKFS_ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> store, StoreFor(location_in, options));
  RemoteCatalogBuild out;
  out.location = store->location().ToString();
  PACKFS_ASSIGN_OR_RETURN(out.catalog_url, store->UrlOf(kCatalogFileName));
  const int n = OpenThreads(options, threads);
  // Over http the shards are probed by name, not taken from an old catalog: the catalog being
  // rebuilt may be the stale thing.
  PACKFS_ASSIGN_OR_RETURN(std::vector<RemoteShard> shards,
                          DiscoverRemoteShards(*store, nullptr, n));
  PACKFS_RETURN_IF_ERROR(ProbeRangeSupport(*store->http(), shards.front().url, shards.front().etag)
                             .WithPrefix(out.location));
  std::shared_ptr<const HttpClient> client = store->http();
  std::vector<ShardContent> contents(shards.size());
  std::vector<Status> errors(shards.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < shards.size(); i = next++) {
      const RemoteShard& s = shards[i];
      auto src = RemoteShardSource::FromKnown(client, s.url, s.url, s.size, s.etag);
      Result<ShardIndex> index = IndexShard(*src, s.name);
      if (!index.ok()) {
        errors[i] = index.status();
        continue;
      }
      contents[i].info.name = s.name;
      contents[i].info.size = s.size;
      contents[i].info.mtime_ns = s.mtime_ns;
      contents[i].info.fingerprint = index->fingerprint;
      contents[i].index = std::move(index).value();
    }
  };
  {
    std::vector<std::jthread> pool;
    const size_t k = std::min<size_t>(static_cast<size_t>(n), std::max<size_t>(shards.size(), 1));
    for (size_t t = 1; t < k; ++t) pool.emplace_back(worker);
    worker();
  }  // joined here
  for (const Status& e : errors) PACKFS_RETURN_IF_ERROR(e);
  PACKFS_ASSIGN_OR_RETURN(out.data, BuildNodes(std::move(contents)));
  return out;
}

Result<std::string> UploadRemoteCatalog(const std::string& location_in,
                                        const RemoteOptions& options, const std::string& path) {
  PACKFS_ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> store, StoreFor(location_in, options));
  PACKFS_ASSIGN_OR_RETURN(std::string url, store->UrlOf(kCatalogFileName));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string bytes = std::move(ss).str();
  Result<std::string> etag = store->http()->Put(url, bytes);
  if (!etag.ok()) {
    return etag.status().WithPrefix("uploading the catalog (kept in " + path +
                                    "; upload it by hand as " + url + ")");
  }
  Result<HttpObjectInfo> info = store->http()->Head(url);
  if (!info.ok()) return info.status().WithPrefix("checking the uploaded catalog");
  if (info->size != bytes.size()) {
    return Status::IOError(url + " is " + std::to_string(info->size) + " bytes after the upload, " +
                           "the catalog has " + std::to_string(bytes.size()) +
                           "; upload " + path + " again");
  }
  return url;
}

}  // namespace packfs
