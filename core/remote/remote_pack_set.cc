// Remote pack sets: catalog fetch and cache, shard URLs (identities checked by each shard's
// first GET), S3 listing and indexing over ranged reads, and the PackSet built from them (see
// remote_pack_set.h).
#include "core/remote/remote_pack_set.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "core/base/key.h"
#include "core/base/parallel_for.h"
#include "core/base/unique_fd.h"
#include "core/catalog/catalog.h"
#include "core/read/shard_format.h"
#include "core/remote/remote_catalog.h"
#include "core/remote/remote_catalog_pages.h"
#include "core/remote/remote_store.h"

namespace packfs {
namespace {

// Opens the catalog with one request: a catalog within the download limit is fetched into the
// cache (an unchanged one costs a 304 and reuses the cached copy), a larger one is read in place
// from its first bytes on. NotFound when the location has none.
Result<std::unique_ptr<Catalog>> FetchCatalog(const RemoteStore& store,
                                              const std::string& location,
                                              const RemoteOptions& options) {
  const std::string dir = options.cache_dir.empty() ? DefaultRemoteCacheDir() : options.cache_dir;
  PACKFS_ASSIGN_OR_RETURN(CachedCatalog cached,
                          FetchCatalogToCache(store, location, dir, options.max_catalog_bytes,
                                              options.catalog_download_limit));
  if (cached.larger) {
    RemoteCatalogHead head{cached.url, cached.size, cached.etag, std::move(cached.head)};
    return OpenCatalogInPlace(std::shared_ptr<const HttpClient>(store.http()), std::move(head),
                              location + "/" + kCatalogFileName,
                              CatalogPageOptions(options.read, dir));
  }
  const std::string& path = cached.path;
  Result<std::unique_ptr<Catalog>> cat = Catalog::Open(path);
  if (!cat.ok()) {
    return cat.status().WithPrefix(location + "/" + kCatalogFileName + " (cached as " + path +
                                   ")");
  }
  return cat;
}

// Lists the pack-*.zip objects under an s3:// location and indexes them over ranged reads;
// `etags` gets each shard's ETag from the listing.
Result<std::unique_ptr<Catalog>> ListAndIndex(const RemoteStore& store, const std::string& base,
                                              const std::string& location, int threads,
                                              std::vector<std::string>* etags) {
  const Url& url = store.location();
  std::string prefix = url.path;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  PACKFS_ASSIGN_OR_RETURN(std::vector<S3Object> objects, store.s3()->List(url.host, prefix));
  std::vector<std::pair<int64_t, S3Object>> found;
  for (S3Object& o : objects) {
    const std::string name = o.key.substr(prefix.size());
    const int64_t index = ParseShardFileName(name);
    if (index >= 0) found.emplace_back(index, std::move(o));
  }
  if (found.empty()) {
    return Status::NotFound(location + " holds no " + kCatalogFileName +
                            " and no pack-*.zip shards");
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ShardContent> contents(found.size());
  std::vector<Status> errors(found.size());
  etags->resize(found.size());
  ParallelFor(found.size(), threads, [&](size_t i) {
    const S3Object& o = found[i].second;
    const std::string name = o.key.substr(prefix.size());
    std::unique_ptr<RemoteShardSource> src = store.s3()->SourceFor(url.host, o, base + "/" + name);
    (*etags)[i] = src->etag();
    Result<ShardIndex> index = IndexShard(*src, name);
    if (!index.ok()) {
      errors[i] = index.status();
      return;
    }
    contents[i].info.name = name;
    contents[i].info.size = o.size;
    contents[i].info.fingerprint = index->fingerprint;
    contents[i].index = std::move(index).value();
  });
  for (const Status& e : errors) PACKFS_RETURN_IF_ERROR(e);
  PACKFS_ASSIGN_OR_RETURN(CatalogData data, BuildNodes(std::move(contents)));
  return Catalog::FromData(data);
}

}  // namespace

std::string DefaultRemoteCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/packfs";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/packfs";
  return "/tmp/packfs-" + std::to_string(::getuid());
}

Result<std::unique_ptr<PackSet>> OpenRemotePackSet(const std::string& location_in,
                                                   const RemoteOptions& options) {
  std::string location = location_in;
  while (location.size() > 1 && location.back() == '/') location.pop_back();
  PACKFS_ASSIGN_OR_RETURN(std::shared_ptr<RemoteStore> store,
                          RemoteStore::Create(location, options.s3, options.http));
  location = store->location().ToString();
  const std::string base = UrlBaseName(store->location());
  const int threads = options.open_threads > 0 ? options.open_threads : 16;

  std::vector<std::string> etags;  // listed without a catalog: from the listing
  std::unique_ptr<Catalog> catalog;
  std::string hint;
  Result<std::unique_ptr<Catalog>> fetched = FetchCatalog(*store, location, options);
  if (fetched.ok()) {
    catalog = std::move(fetched).value();
    // One request, whatever the number of shards: a server without ranges fails every read.
    // Nothing else is done per shard at mount (a catalog read in place loads a shard's row when
    // the shard is first opened): each shard's URL is made, and its identity checked, by its
    // first GET (see RemoteShardSource::FromCatalog), so mounting costs the same for 10 shards
    // or 100,000.
    if (catalog->shard_count() > 0) {
      PACKFS_ASSIGN_OR_RETURN(const ShardInfo* first, catalog->Shard(0));
      PACKFS_ASSIGN_OR_RETURN(std::string url, store->UrlOf(first->name));
      PACKFS_RETURN_IF_ERROR(ProbeRangeSupport(*store->http(), url, {}));
    }
    hint = "the pack set at " + location + " changed on the server; remount it (run `mkpack " +
           "catalog` there and upload the new " + kCatalogFileName + " if its shards changed)";
  } else if (fetched.status().code() != Code::kNotFound) {
    return fetched.status();
  } else if (store->s3() == nullptr) {
    return Status::NotFound(
        location + " has no " + kCatalogFileName + ": a pack set served over HTTP needs its " +
        "catalog beside the shards (an HTTP server cannot list them); run `mkpack catalog DIR` " +
        "on the pack directory and publish " + kCatalogFileName + " with the shards");
  } else {
    PACKFS_ASSIGN_OR_RETURN(catalog, ListAndIndex(*store, base, location, threads, &etags));
    hint = "the pack set at " + location + " changed on the server; remount it";
  }

  auto client = std::shared_ptr<const HttpClient>(store->http());
  std::shared_ptr<RemoteReader> reader = options.reader;
  if (!reader) {
    PACKFS_ASSIGN_OR_RETURN(reader, RemoteReader::Create(options.read));
  }
  // Listed (S3 without a catalog): size and ETag are known. From a catalog: its size and
  // fingerprint, and the ETag the shard's first GET finds, kept for the mount in `pins`.
  ShardOpener opener;
  if (!etags.empty()) {
    opener = [client, reader,
              etags = std::move(etags)](const ShardToOpen& shard) -> Result<ShardLease> {
      return ShardLease(RemoteShardSource::FromKnown(client, shard.path, shard.ref,
                                                     shard.info.size, etags[shard.id], reader));
    };
  } else {
    opener = [client, reader, store, location,
              pins = std::make_shared<EtagPins>()](const ShardToOpen& shard) -> Result<ShardLease> {
      if (shard.path.empty()) {  // url_of failed: say why
        Result<std::string> url = store->UrlOf(shard.info.name);
        return (url.ok() ? Status::InvalidArgument("no URL") : url.status())
            .WithPrefix("the catalog of " + location + " lists shard " + shard.info.name);
      }
      return ShardLease(RemoteShardSource::FromCatalog(client, shard.path, shard.ref,
                                                       shard.info.size, shard.info.fingerprint,
                                                       pins, shard.id, reader));
    };
  }
  // A URL is made when its shard is opened (empty when the name makes none: the opener says why).
  auto url_of = [store](const std::string& name) {
    Result<std::string> url = store->UrlOf(name);
    return url.ok() ? *url : std::string();
  };
  const bool disk_cached = reader->disk() != nullptr;
  return PackSet::FromCatalog(location, std::move(catalog), std::move(url_of), base,
                              std::move(opener), std::move(hint), disk_cached);
}

}  // namespace packfs
