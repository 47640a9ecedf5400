// DirLister: a directory listed through the mount itself (see dir_lister.h).
#include "fuse/dir_lister.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/base/unique_fd.h"

namespace packfs {

DirLister::DirLister(std::string mountpoint, PathOf path_of)
    : mountpoint_(std::move(mountpoint)), path_of_(std::move(path_of)) {}

UniqueFd DirLister::OpenRoot() {
  if (clone_) {
    // open_tree gives an O_PATH descriptor: the directory is opened through it (which keeps the
    // clone alive until it is closed).
    UniqueFd tree(::open_tree(AT_FDCWD, mountpoint_.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (tree.get() >= 0) {
      return UniqueFd(::openat(tree.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }
    clone_ = false;  // no CAP_SYS_ADMIN (EPERM), or a kernel without it: the mountpoint itself
  }
  return UniqueFd(::open(mountpoint_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

Status DirLister::Recognise() {
  UniqueFd root = OpenRoot();
  if (root.get() < 0) return Status::IOError(mountpoint_ + ": " + ErrnoText(errno), errno);
  // The root's stats name the process that serves it.
  std::string stats(1 << 16, '\0');
  const ssize_t n = ::fgetxattr(root.get(), "user.packfs.stats", stats.data(), stats.size());
  const std::string pid = "\"pid\": " + std::to_string(::getpid()) + ",";
  if (n <= 0 || std::string_view(stats.data(), static_cast<size_t>(n)).find(pid) ==
                    std::string_view::npos) {
    return Status::NotFound(mountpoint_ + " is not this packfs mount (stacked over, or out of "
                            "this process's reach)");
  }
  struct stat st;
  if (::fstat(root.get(), &st) != 0) {
    return Status::IOError(mountpoint_ + ": " + ErrnoText(errno), errno);
  }
  dev_ = st.st_dev;
  return Status::OK();
}

Result<uint64_t> DirLister::List(uint64_t dir) {
  if (!recognised_) recognised_ = Recognise();
  PACKFS_RETURN_IF_ERROR(*recognised_);
  const std::optional<std::string> rel = path_of_(dir);
  if (!rel) return Status::NotFound("no directory #" + std::to_string(dir));
  const std::string path = rel->empty() ? mountpoint_ : mountpoint_ + "/" + *rel;
  UniqueFd root = OpenRoot();
  if (root.get() < 0) return Status::IOError(mountpoint_ + ": " + ErrnoText(errno), errno);
  UniqueFd fd(::openat(root.get(), rel->empty() ? "." : rel->c_str(),
                       O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return Status::IOError(path + ": " + ErrnoText(errno), errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::IOError(path + ": " + ErrnoText(errno), errno);
  if (st.st_dev != dev_) return Status::NotFound(path + " is not on this packfs mount");
  // Entries are fixed-size headers and names: what matters is reading to the end.
  std::vector<char> buf(64 << 10);
  uint64_t entries = 0;
  while (true) {
    const long got = ::syscall(SYS_getdents64, fd.get(), buf.data(), buf.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      return Status::IOError("listing " + path + ": " + ErrnoText(errno), errno);
    }
    if (got == 0) return entries;
    // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
    for (long at = 0; at + 19 < got;) {
      uint16_t reclen;
      std::memcpy(&reclen, buf.data() + at + 16, sizeof reclen);
      if (reclen == 0) break;
      const char* name = buf.data() + at + 19;
      if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0) ++entries;
      at += reclen;
    }
  }
}

}  // namespace packfs
