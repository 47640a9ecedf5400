// Remote pack sets: a zip pack set whose shards are HTTP(S) or S3 objects
// ("https://host/data/media", "s3://bucket/data/media"), served as a PackSet whose shards are
// RemoteShardSources (one ranged GET per read) while members keep their local header check.
//
// Opening fetches the catalog object `.packfs-catalog.sqlite` beside the shards into a cache
// directory (SQLite needs a file) and sends no request per shard: a shard's first GET checks its
// size (Content-Range) against the catalog's, and the ETag seen then is required (If-Match) of
// every later GET, so a stale catalog or a shard replaced on the server fails that shard's reads
// with EIO instead of serving other bytes, and mounting costs the same whatever the number of
// shards (one conditional GET of the catalog, one 4-byte range probe). Without a
// catalog, an s3:// set is listed (pack-*.zip) and indexed over ranged reads at open; an http(s)
// set cannot be listed and is refused with advice.
//
// Thread-safety: OpenRemotePackSet may be called from any thread; the returned PackSet is as
// thread-safe as any PackSet. It owns (shares) the HTTP client its shards read through.
#pragma once

#include <memory>
#include <string>

#include "core/base/status.h"
#include "core/read/pack_set.h"
#include "core/remote/http_client.h"
#include "core/remote/remote_reader.h"
#include "core/remote/s3.h"
#include "core/remote/url.h"

namespace packfs {

struct RemoteOptions {
  S3Config s3;        // used for s3:// locations only (endpoint, region, credentials)
  HttpOptions http;   // connections, retries, timeouts
  // Where fetched catalogs are kept; empty: DefaultRemoteCacheDir().
  std::string cache_dir;
  // Requests run at once while indexing shards (ranged reads) at open, for an s3:// set without
  // a catalog; further bounded by http.max_connections. 0: 16.
  int open_threads = 0;
  // A catalog object larger than this is refused when it is to be downloaded whole.
  size_t max_catalog_bytes = size_t{4} << 30;
  // Catalogs up to this size come whole with the mount's first request and are kept in
  // cache_dir; larger ones are read in place, page by page (see remote_catalog_pages.h). 0:
  // every catalog is downloaded whole. (--catalog-download-limit)
  uint64_t catalog_download_limit = uint64_t{1} << 20;
  // How shard reads become requests and where they are cached (--cache-size, --disk-cache,
  // --disk-cache-size). Used to create a reader when `reader` is null.
  RemoteReaderOptions read;
  // A reader shared by every remote source of a mount, so their memory stays within one bound.
  std::shared_ptr<RemoteReader> reader;
};

// $XDG_CACHE_HOME/packfs, else $HOME/.cache/packfs, else /tmp/packfs-<uid>.
std::string DefaultRemoteCacheDir();

// Opens the pack set at `location` (an http(s):// or s3:// URL of the pack directory). Blob
// references read "zip://KEY::<last path segment>/pack-0000.zip", as for a local directory of
// that name. Errors name the URL and say what to do (a missing catalog on http, a stale one).
Result<std::unique_ptr<PackSet>> OpenRemotePackSet(const std::string& location,
                                                   const RemoteOptions& options);

}  // namespace packfs
