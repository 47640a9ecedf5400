// Remote catalogs: conditional fetch into the cache with a validator sidecar, and shard discovery
// by listing, catalog or probing (see remote_catalog.h).
#include "core/remote/remote_catalog.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "core/base/key.h"
#include "core/base/parallel_for.h"
#include "core/base/unique_fd.h"
#include "core/remote/url.h"

namespace packfs {

std::string RemoteCatalogCacheName(const std::string& location) {
  std::string base = "catalog";
  Result<Url> url = ParseUrl(location);
  if (url.ok()) base = UrlBaseName(*url);
  // Keep the readable part a plain file name.
  for (char& c : base) {
    if (c == '/' || static_cast<unsigned char>(c) < 0x20) c = '_';
  }
  if (base.size() > 64) base.resize(64);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(location.data(), location.size())));
  return base + "-" + hex + ".sqlite";
}

namespace {

// What the cache knows about its copy of a catalog: the server's validators and a fingerprint of
// the bytes they describe. The fingerprint ties the sidecar to the file: two fetches racing
// (rename of file and sidecar are separate steps) can leave a sidecar describing another copy,
// which then fails the check and costs a full download instead of serving an outdated catalog.
struct CacheMeta {
  std::string etag;
  std::string last_modified;
  uint64_t size = 0;
  uint64_t hash = 0;
};

uint64_t HashBytes(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::string FormatMeta(const CacheMeta& m) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(m.hash));
  return "etag\t" + m.etag + "\nlast-modified\t" + m.last_modified + "\nsize\t" +
         std::to_string(m.size) + "\nxxh3\t" + hex + "\n";
}

// Reads a sidecar; nullopt when missing or malformed (then the fetch is unconditional).
std::optional<CacheMeta> ReadMeta(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  CacheMeta m;
  bool have_size = false, have_hash = false;
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) return std::nullopt;
    const std::string name = line.substr(0, tab), value = line.substr(tab + 1);
    if (name == "etag") {
      m.etag = value;
    } else if (name == "last-modified") {
      m.last_modified = value;
    } else if (name == "size") {
      have_size = std::sscanf(value.c_str(), "%llu", reinterpret_cast<unsigned long long*>(&m.size)) == 1;
    } else if (name == "xxh3") {
      have_hash = std::sscanf(value.c_str(), "%llx", reinterpret_cast<unsigned long long*>(&m.hash)) == 1;
    }
  }
  if (!have_size || !have_hash || (m.etag.empty() && m.last_modified.empty())) return std::nullopt;
  return m;
}

// True when the file at `path` is the copy `meta` describes.
bool CopyMatches(const std::string& path, const CacheMeta& meta) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string bytes = std::move(ss).str();
  return bytes.size() == meta.size && HashBytes(bytes) == meta.hash;
}

int64_t MtimeNs(const std::string& last_modified) {
  const int64_t s = ParseHttpDate(last_modified);
  return s < 0 ? 0 : s * 1000000000;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    const int e = errno;
    return Status::IOError("cannot write " + tmp + ": " + ErrnoText(e), e);
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      ::unlink(tmp.c_str());
      return Status::IOError("cannot write " + tmp + ": " + ErrnoText(e), e);
    }
    done += static_cast<size_t>(n);
  }
  fd.reset();
  // Another process may rename its copy over ours meanwhile; an open SQLite handle keeps reading
  // the file it opened.
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Status::IOError("cannot write " + path + ": " + ErrnoText(e), e);
  }
  return Status::OK();
}

Result<CachedCatalog> FetchCatalogToCache(const RemoteStore& store, const std::string& location,
                                          const std::string& cache_dir, size_t max_bytes,
                                          uint64_t first_bytes) {
  std::error_code ec;
  std::filesystem::create_directories(cache_dir, ec);
  if (ec) {
    return Status::IOError("cannot create the cache directory " + cache_dir + ": " +
                               ec.message() + " (choose another with --cache-dir)",
                           ec.value());
  }
  CachedCatalog out;
  out.path = cache_dir + "/" + RemoteCatalogCacheName(location);
  const std::string meta_path = out.path + ".meta";
  // A catalog last read in place leaves its ETag and size here instead (its pages are cached by
  // URL and ETag, see remote_catalog_pages.h); at most one of the two sidecars exists.
  const std::string in_place_path = out.path + ".in-place";
  std::optional<CacheMeta> meta = ReadMeta(meta_path);
  if (meta && !CopyMatches(out.path, *meta)) meta.reset();
  std::optional<CacheMeta> in_place;
  if (!meta && first_bytes > 0) in_place = ReadMeta(in_place_path);
  if (in_place && in_place->etag.empty()) in_place.reset();
  const std::optional<CacheMeta>& held = meta ? meta : in_place;

  PACKFS_ASSIGN_OR_RETURN(std::string url, store.UrlOf(kCatalogFileName));
  Result<HttpConditionalGet> got =
      held ? store.http()->GetIfChanged(url, max_bytes, held->etag, held->last_modified,
                                        first_bytes)
           : store.http()->GetIfChanged(url, max_bytes, "", "", first_bytes);
  if (!got.ok()) return got.status().WithPrefix(kCatalogFileName);
  if (got->not_modified && !in_place) return out;
  if (got->not_modified || got->body.size() < got->total) {
    out.path.clear();
    out.larger = true;
    out.url = url;
    if (got->not_modified) {  // the pages read last time are current: no byte fetched now
      out.size = in_place->size;
      out.etag = in_place->etag;
      return out;
    }
    out.size = got->total;
    out.etag = got->etag;
    out.head = std::move(got->body);
    ::unlink(meta_path.c_str());
    if (out.etag.empty()) {
      ::unlink(in_place_path.c_str());  // no ETag: its pages are not kept either
    } else {
      (void)WriteFileAtomically(in_place_path,
                                FormatMeta({out.etag, got->last_modified, out.size, 0}));
    }
    return out;
  }
  ::unlink(in_place_path.c_str());

  PACKFS_RETURN_IF_ERROR(WriteFileAtomically(out.path, got->body)
                             .WithPrefix("caching the catalog of " + location));
  out.downloaded = true;
  CacheMeta fresh{got->etag, got->last_modified, got->body.size(), HashBytes(got->body)};
  if (fresh.etag.empty() && fresh.last_modified.empty()) {
    ::unlink(meta_path.c_str());  // nothing to revalidate with: the next open downloads again
  } else {
    // A sidecar that cannot be written only costs the next open a full download.
    (void)WriteFileAtomically(meta_path, FormatMeta(fresh));
  }
  return out;
}

Result<std::vector<RemoteShard>> DiscoverRemoteShards(const RemoteStore& store,
                                                      const Catalog* catalog, int threads) {
  const std::string location = store.location().ToString();
  std::vector<RemoteShard> out;
  if (store.s3() != nullptr) {
    const Url& url = store.location();
    std::string prefix = url.path;
    if (!prefix.empty() && prefix.back() != '/') prefix += '/';
    PACKFS_ASSIGN_OR_RETURN(std::vector<S3Object> objects, store.s3()->List(url.host, prefix));
    std::vector<std::pair<int64_t, RemoteShard>> found;
    for (const S3Object& o : objects) {
      RemoteShard s;
      s.name = o.key.substr(prefix.size());
      const int64_t index = ParseShardFileName(s.name);
      if (index < 0) continue;
      s.url = store.s3()->ObjectUrl(url.host, o.key);
      s.size = o.size;
      s.etag = o.etag;
      found.emplace_back(index, std::move(s));
    }
    std::sort(found.begin(), found.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& f : found) out.push_back(std::move(f.second));
  } else if (catalog != nullptr) {
    PACKFS_ASSIGN_OR_RETURN(std::span<const ShardInfo> shards, catalog->Shards());
    for (const ShardInfo& s : shards) out.push_back(RemoteShard{s.name, "", 0, "", 0});
  } else {
    // No listing over plain HTTP: mkpack numbers shards from 0 without gaps, so the first
    // missing name ends the set.
    for (uint64_t i = 0;; ++i) {
      RemoteShard s;
      s.name = ShardFileName(i);
      PACKFS_ASSIGN_OR_RETURN(s.url, store.UrlOf(s.name));
      Result<HttpObjectInfo> info = store.http()->Head(s.url);
      if (!info.ok() && info.status().code() == Code::kNotFound) break;
      if (!info.ok()) return info.status();
      s.size = info->size;
      s.etag = info->etag;
      s.mtime_ns = MtimeNs(info->last_modified);
      out.push_back(std::move(s));
    }
    if (out.empty()) {
      return Status::NotFound(location + " has no " + kCatalogFileName + " and no " +
                              ShardFileName(0) + " (an HTTP server cannot be listed, so mkpack " +
                              "looks for pack-0000.zip, pack-0001.zip, ... in turn)");
    }
    return out;
  }
  if (out.empty()) {
    return Status::NotFound(location + " holds no pack-*.zip shards");
  }
  // Catalog names over HTTP: a HEAD each for size and ETag.
  std::vector<Status> errors(out.size());
  ParallelFor(out.size(), threads, [&](size_t i) {
    RemoteShard& s = out[i];
    if (!s.url.empty()) return;
    Result<std::string> url = store.UrlOf(s.name);
    if (!url.ok()) {
      errors[i] = url.status().WithPrefix("the catalog of " + location + " lists " + s.name);
      return;
    }
    s.url = *url;
    Result<HttpObjectInfo> info = store.http()->Head(s.url);
    if (!info.ok()) {
      errors[i] = info.status().WithPrefix(s.name + " (listed in the catalog of " + location + ")");
      return;
    }
    s.size = info->size;
    s.etag = info->etag;
    s.mtime_ns = MtimeNs(info->last_modified);
  });
  for (const Status& e : errors) PACKFS_RETURN_IF_ERROR(e);
  return out;
}

}  // namespace packfs
