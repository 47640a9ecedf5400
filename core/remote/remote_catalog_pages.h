// A remote set's catalog read in place: SQLite reads its pages through RemoteDb (the
// "packfs-remote" VFS) from ranged GETs of the catalog object, through a reader of its own with
// small blocks and memory and disk caches, so mounting a set costs the same whatever its catalog's
// size: opening reads the header, schema, meta and shard rows; a lookup reads the pages on its path
// (1-2 GETs cold, none warm); a listing reads its directory's rows, with read-ahead when long.
//
// The object read is one version: the ETag its first answer carried is required (If-Match) by
// every later GET, so a catalog replaced on the server fails the queries that need new pages
// (EIO, with the advice to remount) instead of mixing two versions' pages. Its pages are cached by
// URL and ETag, on disk too, so a later mount of an unchanged set reads them locally; a server
// that sends no ETag gets a memory cache only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/base/status.h"
#include "core/catalog/catalog.h"
#include "core/remote/http_client.h"
#include "core/remote/remote_reader.h"

namespace packfs {

// The catalog object's first bytes, as the mount's first request brought them.
struct RemoteCatalogHead {
  std::string url;
  uint64_t size = 0;
  std::string etag;   // empty when the server sent none
  std::string bytes;  // the object's first bytes (served from memory, never fetched again)
};

// How the pages of a catalog read in place are fetched and cached (see CatalogPageOptions).
// `shard_read` is the mount's reader configuration: its disk cache directory, when set, holds the
// catalog's pages too; otherwise they go to `cache_dir`/catalog-pages (at most 1 GiB).
RemoteReaderOptions CatalogPageOptions(const RemoteReaderOptions& shard_read,
                                       const std::string& cache_dir);

// Opens the catalog at head.url in place. `label` names it in messages. Fails like Catalog::Open
// (Corruption for a file that is not a catalog), or with the request's error.
Result<std::unique_ptr<Catalog>> OpenCatalogInPlace(std::shared_ptr<const HttpClient> client,
                                                    RemoteCatalogHead head, std::string label,
                                                    const RemoteReaderOptions& pages);

}  // namespace packfs
