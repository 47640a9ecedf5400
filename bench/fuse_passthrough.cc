// fuse_passthrough: the smallest FUSE file system bench/ can measure packfs against — a
// read-only low-level passthrough of a directory of loose files, cached the way packfs is (no
// OPEN or FLUSH requests, kernel page cache kept, entries and attributes valid for a day,
// READDIRPLUS). A READ is one pread of the loose file. Its warm rate is the kernel's FUSE path
// with no request at all, the limit of any FUSE mount there; its cold rate is what a LOOKUP and
// a READ over /dev/fuse cost around one pread of a loose file. Not a product: no error beyond
// errno, no writes, no xattrs.
//
//   fuse_passthrough SOURCE MOUNTPOINT [--foreground] [--threads N]
//
// Mounts, daemonizes once mounted (unless --foreground) and serves until unmounted. In the
// foreground it prints the requests it served by kind at exit: a warm pass must add none.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr double kTimeout = 86400.0;

// Inode numbers are the source's own (st_ino), but the root's, which is FUSE_ROOT_ID.
struct Tree {
  std::string root;
  uint64_t root_ino = 0;
  std::mutex mu;
  std::unordered_map<uint64_t, std::string> paths;  // FUSE inode -> source path
  std::atomic<uint64_t> lookups{0}, getattrs{0}, reads{0}, readdirs{0}, others{0};

  std::string PathOf(fuse_ino_t ino) {
    if (ino == FUSE_ROOT_ID) return root;
    std::lock_guard<std::mutex> lock(mu);
    auto it = paths.find(ino);
    return it == paths.end() ? std::string() : it->second;
  }
  // The entry for `path` (lstat): its inode remembered, attributes filled.
  int Entry(const std::string& path, fuse_entry_param* e) {
    std::memset(e, 0, sizeof *e);
    if (::lstat(path.c_str(), &e->attr) != 0) return errno;
    fuse_ino_t ino = e->attr.st_ino == root_ino ? FUSE_ROOT_ID : e->attr.st_ino;
    e->attr.st_ino = ino;
    e->ino = ino;
    e->attr_timeout = kTimeout;
    e->entry_timeout = kTimeout;
    if (ino != FUSE_ROOT_ID) {
      std::lock_guard<std::mutex> lock(mu);
      paths.emplace(ino, path);
    }
    return 0;
  }
};

Tree* TreeOf(fuse_req_t req) { return static_cast<Tree*>(fuse_req_userdata(req)); }

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Tree* t = TreeOf(req);
  ++t->lookups;
  const std::string dir = t->PathOf(parent);
  if (dir.empty()) return (void)fuse_reply_err(req, ENOENT);
  fuse_entry_param e;
  if (int err = t->Entry(dir + "/" + name, &e)) return (void)fuse_reply_err(req, err);
  fuse_reply_entry(req, &e);
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  Tree* t = TreeOf(req);
  ++t->getattrs;
  const std::string path = t->PathOf(ino);
  fuse_entry_param e;
  if (path.empty()) return (void)fuse_reply_err(req, ENOENT);
  if (int err = t->Entry(path, &e)) return (void)fuse_reply_err(req, err);
  fuse_reply_attr(req, &e.attr, kTimeout);
}

// No OPEN: the kernel then sends none again, keeps the page cache and sends no RELEASE.
void Open(fuse_req_t req, fuse_ino_t, fuse_file_info*) {
  ++TreeOf(req)->others;
  fuse_reply_err(req, ENOSYS);
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  Tree* t = TreeOf(req);
  ++t->reads;
  const std::string path = t->PathOf(ino);
  const int fd = path.empty() ? -1 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return (void)fuse_reply_err(req, path.empty() ? ENOENT : errno);
  std::unique_ptr<char[]> buf(new char[size]);
  const ssize_t n = ::pread(fd, buf.get(), size, off);
  const int err = errno;
  ::close(fd);
  if (n < 0) return (void)fuse_reply_err(req, err);
  fuse_reply_buf(req, buf.get(), static_cast<size_t>(n));
}

// A directory's entries, read once at OPENDIR (its handle), served by READDIRPLUS.
struct Listing {
  std::string path;
  std::vector<std::string> names;
};

void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Tree* t = TreeOf(req);
  ++t->others;
  auto l = std::make_unique<Listing>();
  l->path = t->PathOf(ino);
  DIR* d = l->path.empty() ? nullptr : ::opendir(l->path.c_str());
  if (d == nullptr) return (void)fuse_reply_err(req, l->path.empty() ? ENOENT : errno);
  while (dirent* de = ::readdir(d)) {
    if (std::strcmp(de->d_name, ".") != 0 && std::strcmp(de->d_name, "..") != 0) {
      l->names.emplace_back(de->d_name);
    }
  }
  ::closedir(d);
  fi->fh = reinterpret_cast<uint64_t>(l.release());
  fi->cache_readdir = 1;
  fi->keep_cache = 1;
  fuse_reply_open(req, fi);
}

void ReadDirPlus(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  Tree* t = TreeOf(req);
  ++t->readdirs;
  const Listing* l = reinterpret_cast<const Listing*>(fi->fh);
  std::vector<char> buf(size);
  size_t used = 0;
  for (size_t i = static_cast<size_t>(off); i < l->names.size(); ++i) {
    fuse_entry_param e;
    if (t->Entry(l->path + "/" + l->names[i], &e) != 0) continue;
    const size_t n = fuse_add_direntry_plus(req, buf.data() + used, size - used,
                                            l->names[i].c_str(), &e, static_cast<off_t>(i + 1));
    if (n > size - used) {
      // Not sent: the kernel forgets nothing it was not told of (no lookup count taken).
      break;
    }
    used += n;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete reinterpret_cast<Listing*>(fi->fh);
  fuse_reply_err(req, 0);
}

void Init(void*, fuse_conn_info* conn) {
  conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_CACHE_SYMLINKS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;  // always plus: the kernel gets every inode
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;   // attributes never change: no size checks
}

int Usage() {
  std::fprintf(stderr, "usage: fuse_passthrough SOURCE MOUNTPOINT [--foreground] [--threads N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  bool foreground = false;
  unsigned threads = 8;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--foreground") == 0) {
      foreground = true;
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = static_cast<unsigned>(std::atoi(argv[++i]));
    } else {
      return Usage();
    }
  }
  Tree tree;
  char* real = ::realpath(argv[1], nullptr);
  struct stat st;
  if (real == nullptr || ::stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "fuse_passthrough: %s: not a directory\n", argv[1]);
    return 2;
  }
  tree.root = real;
  std::free(real);
  tree.root_ino = st.st_ino;

  fuse_lowlevel_ops ops{};
  ops.init = Init;
  ops.lookup = Lookup;
  ops.getattr = GetAttr;
  ops.open = Open;
  ops.read = Read;
  ops.opendir = OpenDir;
  ops.readdirplus = ReadDirPlus;
  ops.releasedir = ReleaseDir;

  char arg0[] = "fuse_passthrough";
  char opt[] = "-o";
  char opts[] = "ro,default_permissions,fsname=fuse_passthrough";
  char* fargv[] = {arg0, opt, opts, nullptr};
  fuse_args args = FUSE_ARGS_INIT(3, fargv);
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, &tree);
  if (se == nullptr) return 1;
  int rc = 1;
  if (fuse_session_mount(se, argv[2]) == 0) {
    if (fuse_daemonize(foreground ? 1 : 0) == 0 && fuse_set_signal_handlers(se) == 0) {
      fuse_loop_config* config = fuse_loop_cfg_create();
      fuse_loop_cfg_set_max_threads(config, threads);
      fuse_loop_cfg_set_idle_threads(config, threads);
      rc = fuse_session_loop_mt(se, config) == 0 ? 0 : 1;
      fuse_loop_cfg_destroy(config);
      fuse_remove_signal_handlers(se);
    }
    fuse_session_unmount(se);
  }
  fuse_session_destroy(se);
  std::fprintf(stderr,
               "fuse_passthrough: lookup %llu getattr %llu read %llu readdirplus %llu other %llu\n",
               static_cast<unsigned long long>(tree.lookups.load()),
               static_cast<unsigned long long>(tree.getattrs.load()),
               static_cast<unsigned long long>(tree.reads.load()),
               static_cast<unsigned long long>(tree.readdirs.load()),
               static_cast<unsigned long long>(tree.others.load()));
  return rc;
}
