// Safe extraction of a pack set: openat/mkdirat with O_NOFOLLOW, CRC-checked copies.
#include "core/read/unpack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "core/base/crc32.h"
#include "core/base/key.h"
#include "core/base/parallel_for.h"
#include "core/base/unique_fd.h"
#include "core/read/shard_format.h"

namespace packfs {

namespace {

struct Item {
  std::string key;
  Node node;
};

// Opens (creating as needed) the directory `rel` under root without following symlinks.
Result<UniqueFd> OpenDirChain(int root_fd, const std::string& out_dir, std::string_view rel) {
  UniqueFd cur(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (!cur.valid()) return Status::IOError("dup failed", errno);
  size_t start = 0;
  while (start < rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string_view::npos) end = rel.size();
    std::string comp(rel.substr(start, end - start));
    int fd = ::openat(cur.get(), comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      if (::mkdirat(cur.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) {
        int e = errno;
        return Status::IOError("cannot create directory " + out_dir + "/" +
                                   std::string(rel.substr(0, end)) + ": " + ErrnoText(e),
                               e);
      }
      fd = ::openat(cur.get(), comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      int e = errno;
      std::string where = out_dir + "/" + std::string(rel.substr(0, end));
      if (e == ELOOP || e == ENOTDIR) {
        return Status::InvalidArgument(where + " is a symlink or not a directory; refusing to "
                                       "write through it (remove it or unpack elsewhere)");
      }
      return Status::IOError("cannot open directory " + where + ": " + ErrnoText(e), e);
    }
    cur.reset(fd);
    start = end + 1;
  }
  return cur;
}

bool IsAllZero(const uint8_t* p, size_t n) {
  return n > 0 && p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

Result<UnpackReport> UnpackPackSet(const PackSet& set, const std::string& out_dir,
                                   const UnpackOptions& opts) {
  PACKFS_ASSIGN_OR_RETURN(std::span<const ShardInfo> shards, set.catalog().Shards());
  if (!shards.empty() && ShardFormatOf(shards[0].name) == ShardFormat::kTar) {
    return Status::InvalidArgument(
        set.dir() + " holds tar shards (" + shards[0].name + "): extract them with `tar -xf` "
        "(mkpack unpack checks zip members' CRC-32, which tar does not record)");
  }
  std::vector<Item> items;
  items.reserve(set.catalog().totals().files);
  PACKFS_RETURN_IF_ERROR(set.catalog().ForEachFile([&](const std::string& key, const Node& n) {
    items.push_back({key, n});
    return Status::OK();
  }));
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.key < b.key; });

  if (::mkdir(out_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    int e = errno;
    return Status::IOError("cannot create " + out_dir + ": " + ErrnoText(e), e);
  }
  UniqueFd root(::open(out_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) {
    int e = errno;
    return Status::IOError("cannot open " + out_dir + ": " + ErrnoText(e), e);
  }
  if (!opts.force) {
    for (const Item& it : items) {
      if (Exists(out_dir + "/" + it.key)) {
        return Status::AlreadyExists(out_dir + "/" + it.key +
                                     " already exists; nothing was written (use --force to "
                                     "overwrite)");
      }
    }
  }

  UnpackReport report;
  std::mutex mu;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  Status fatal;

  auto worker = [&] {
    std::string cached_dir = "\x01";  // never a real key prefix
    UniqueFd dir_fd;
    std::vector<uint8_t> buf(1u << 20);
    for (size_t i = next++; i < items.size() && !stop; i = next++) {
      const Item& it = items[i];
      size_t slash = it.key.rfind('/');
      std::string parent = slash == std::string::npos ? "" : it.key.substr(0, slash);
      std::string base = slash == std::string::npos ? it.key : it.key.substr(slash + 1);
      auto fail = [&](const Status& st, bool is_fatal) {
        std::lock_guard<std::mutex> lock(mu);
        if (is_fatal) {
          if (fatal.ok()) fatal = st;
          stop = true;
        } else {
          report.problems.push_back(st.message());
        }
      };
      if (parent != cached_dir) {
        auto d = OpenDirChain(root.get(), out_dir, parent);
        if (!d.ok()) {
          fail(d.status(), d.status().code() == Code::kIOError);
          continue;
        }
        dir_fd = std::move(d).value();
        cached_dir = parent;
      }
      if (opts.force) {
        struct stat st;
        if (::fstatat(dir_fd.get(), base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
          if (S_ISDIR(st.st_mode)) {
            fail(Status::InvalidArgument(out_dir + "/" + it.key + " is a directory; not replaced"),
                 false);
            continue;
          }
          ::unlinkat(dir_fd.get(), base.c_str(), 0);
        }
      }
      mode_t mode = it.node.mode & 0777 ? (it.node.mode & 0777) : 0644;
      UniqueFd out(::openat(dir_fd.get(), base.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
      if (!out.valid()) {
        int e = errno;
        fail(Status::IOError("cannot create " + out_dir + "/" + it.key + ": " + ErrnoText(e), e),
             e != EEXIST);
        continue;
      }
      uint32_t crc = 0;
      uint64_t pos = 0;
      Status st;
      while (pos < it.node.size) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), it.node.size - pos));
        auto n = set.Read(it.node, pos, std::span<uint8_t>(buf.data(), want));
        if (!n.ok()) { st = n.status(); break; }
        if (*n == 0) {
          st = Status::Corruption(set.ShardRefPath(it.node.shard) + ": member " + QuoteKey(it.key) +
                                  ": data ends early");
          break;
        }
        crc = Crc32(crc, buf.data(), *n);
        // Runs of zeros become holes (the file is sized by ftruncate below), so a sparse source
        // unpacks sparse, as `cp --sparse=auto` would.
        if (!IsAllZero(buf.data(), *n)) {
          size_t off = 0;
          while (off < *n) {
            ssize_t w = ::pwrite(out.get(), buf.data() + off, *n - off,
                                 static_cast<off_t>(pos + off));
            if (w < 0) {
              if (errno == EINTR) continue;
              int e = errno;
              st = Status::IOError("cannot write " + out_dir + "/" + it.key + ": " + ErrnoText(e), e);
              break;
            }
            off += static_cast<size_t>(w);
          }
        }
        if (!st.ok()) break;
        pos += *n;
      }
      if (st.ok() && ::ftruncate(out.get(), static_cast<off_t>(it.node.size)) != 0) {
        int e = errno;
        st = Status::IOError("cannot size " + out_dir + "/" + it.key + ": " + ErrnoText(e), e);
      }
      if (st.ok() && crc != it.node.crc32) {
        st = Status::Corruption(set.ShardRefPath(it.node.shard) + ": member " + QuoteKey(it.key) +
                                ": CRC-32 mismatch (data damaged); file not written");
      }
      if (!st.ok()) {
        out.reset();
        ::unlinkat(dir_fd.get(), base.c_str(), 0);
        fail(st, st.code() == Code::kIOError);
        continue;
      }
      struct timespec times[2];
      times[0].tv_sec = times[1].tv_sec = it.node.mtime;
      times[0].tv_nsec = times[1].tv_nsec = 0;
      ::futimens(out.get(), times);
      std::lock_guard<std::mutex> lock(mu);
      report.files++;
      report.bytes += it.node.size;
    }
  };
  RunWorkers(opts.threads, items.size(), worker);
  if (!fatal.ok()) return fatal;
  for (const auto& p : set.catalog().problems()) report.problems.push_back(p);
  return report;
}

}  // namespace packfs
