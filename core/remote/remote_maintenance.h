// What `mkpack verify` and `mkpack catalog` do to a remote pack set (http(s):// or s3://): read
// every shard over ranged GETs and check it, or index the shards into a catalog and publish it.
// Stateless; the threads these start are joined before they return.
#pragma once

#include <string>

#include "core/base/status.h"
#include "core/catalog/catalog.h"
#include "core/read/verify.h"
#include "core/remote/remote_pack_set.h"

namespace packfs {

// VerifyPackDir for a remote set: the cached catalog (when the location has one; fetched
// conditionally) and the shards (listed on s3, named by the catalog or probed over http) are
// checked as locally, `threads` shards at once, each read front to back in 8 MiB ranged GETs.
// Problems name the shard's URL. Fails only when nothing can be checked (unreachable server, no
// shards, the catalog cannot be fetched for another reason than 404).
Result<VerifyReport> VerifyRemotePackSet(const std::string& location,
                                         const RemoteOptions& options, int threads);

struct RemoteCatalogBuild {
  CatalogData data;
  std::string location;     // normalized URL of the pack directory
  std::string catalog_url;  // where the catalog object belongs (an http(s) URL)
};

// Indexes every shard of the remote set over ranged reads (end records and central directory
// only), `threads` at once, into CatalogData with the shards' sizes (and Last-Modified times as
// mtimes where the server sends them). An existing remote catalog is ignored (shards are few
// ranged reads each).
Result<RemoteCatalogBuild> BuildRemoteCatalog(const std::string& location,
                                              const RemoteOptions& options, int threads);

// PUTs the catalog file at `path` as `.packfs-catalog.sqlite` beside the shards of an s3://
// location with the options' credentials, then HEADs it to check its size. Returns its URL.
Result<std::string> UploadRemoteCatalog(const std::string& location, const RemoteOptions& options,
                                        const std::string& path);

}  // namespace packfs
