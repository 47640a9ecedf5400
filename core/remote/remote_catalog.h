// Remote catalogs and shard lists: the cached copy of a remote set's `.packfs-catalog.sqlite`,
// refreshed with a conditional GET (If-None-Match / If-Modified-Since) so an unchanged catalog
// costs one 304 and no download, and the discovery of a remote set's shards (catalog, S3 listing
// or probing pack-NNNN.zip names over HTTP) that `mkpack verify` and `mkpack catalog` use.
// Stateless functions; safe to call from any thread. Concurrent fetches of one location into one
// cache directory are safe: every file is replaced by rename and checked against its sidecar.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/catalog/catalog.h"
#include "core/remote/remote_store.h"

namespace packfs {

struct CachedCatalog {
  std::string path;         // the catalog file in the cache directory ("" when `larger`)
  bool downloaded = false;  // false: the server answered 304 and the cached copy was kept
  // With first_bytes: the catalog is larger than that and was not downloaded. What the answer
  // told instead: the object's URL, size, ETag (may be empty) and first bytes (none after a
  // 304 for the ETag of the last catalog read in place).
  bool larger = false;
  std::string url;
  uint64_t size = 0;
  std::string etag;
  std::string head;
};

// The cache file name of `location`'s catalog: "<base name>-<16 hex digits of its hash>.sqlite".
std::string RemoteCatalogCacheName(const std::string& location);

// Brings `location`'s catalog object into `cache_dir` (created if missing) under
// RemoteCatalogCacheName(location). When the cache holds a copy whose sidecar ("<file>.meta":
// ETag, Last-Modified, size and XXH3 of the copy) still matches the file, the GET is conditional;
// a changed catalog is written to a temporary file and renamed over the old one, so readers that
// have the old one open keep reading it. NotFound when the location has no catalog.
// With first_bytes > 0 the one GET asks for that many bytes only: a catalog no larger is cached
// as above, a larger one comes back `larger`, to be read in place; its ETag and size are kept in
// the sidecar "<file>.in-place", so the next fetch is conditional too, and a 304 then comes back
// `larger` with no first bytes (its pages are cached by URL and ETag).
Result<CachedCatalog> FetchCatalogToCache(const RemoteStore& store, const std::string& location,
                                          const std::string& cache_dir, size_t max_bytes,
                                          uint64_t first_bytes = 0);

// Writes `bytes` to `path` through a temporary file beside it and rename(2).
Status WriteFileAtomically(const std::string& path, std::string_view bytes);

// One shard object of a remote set.
struct RemoteShard {
  std::string name;  // "pack-0003.zip"
  std::string url;   // full http(s) URL
  uint64_t size = 0;
  std::string etag;
  int64_t mtime_ns = 0;  // from Last-Modified when known, else 0
};

// The zip shards of the set at store.location(), in index order, each with size and ETag:
// s3:// sets are listed; http(s) sets take the names `catalog` lists (when given) and otherwise
// probe pack-0000.zip, pack-0001.zip, ... with HEADs until the first 404 (an HTTP server cannot
// list). Sizes come from the listing or a HEAD per shard (`threads` at once). NotFound when there
// are none.
Result<std::vector<RemoteShard>> DiscoverRemoteShards(const RemoteStore& store,
                                                      const Catalog* catalog, int threads);

}  // namespace packfs
