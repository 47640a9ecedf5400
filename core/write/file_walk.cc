// Directory walk and file-list parsing for mkpack pack.
#include "core/write/file_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "core/base/key.h"

namespace packfs {
namespace {

PackInput MakeInput(std::string key, std::string path, const struct stat& st) {
  PackInput in;
  in.key = std::move(key);
  in.path = std::move(path);
  in.size = static_cast<uint64_t>(st.st_size);
  in.mtime = static_cast<int64_t>(st.st_mtim.tv_sec);
  return in;
}

// Unsafe names found so far: every one is counted, the first kUnsafeNamed described, so a tree
// with many bad names is fixed in one pass rather than one failed run per name.
constexpr size_t kUnsafeNamed = 20;
struct UnsafeNames {
  size_t count = 0;
  std::vector<std::string> described;

  void Add(std::string what) {
    if (count++ < kUnsafeNamed) described.push_back(std::move(what));
  }
  // OK when none; otherwise one InvalidArgument listing them, ending with `advice`.
  Status ToStatus(const std::string& advice) const {
    if (count == 0) return Status::OK();
    std::string msg = count == 1 ? "1 file has an unsafe key"
                                 : std::to_string(count) + " files have unsafe keys";
    msg += " (" + advice + "); nothing was written:";
    for (const std::string& d : described) msg += "\n  " + d;
    if (count > described.size()) {
      msg += "\n  and " + std::to_string(count - described.size()) + " more";
    }
    return Status::InvalidArgument(msg);
  }
};

// Walks `dir` (path `path`, key prefix `prefix`) with openat so no per-file path is resolved
// from the root again. Files with unsafe keys are collected in *unsafe, not packed.
Status WalkDir(int dirfd, const std::string& path, const std::string& prefix,
               const WalkOptions& opts, InputList* out, UnsafeNames* unsafe) {
  DIR* d = ::fdopendir(dirfd);
  if (d == nullptr) {
    int e = errno;
    ::close(dirfd);
    return Status::IOError("cannot list directory " + path + ": " + ErrnoText(e), e);
  }
  struct Closer {
    DIR* d;
    ~Closer() { ::closedir(d); }
  } closer{d};
  std::vector<std::pair<std::string, bool>> subdirs;  // name, is dir
  while (true) {
    errno = 0;
    struct dirent* de = ::readdir(d);
    if (de == nullptr) {
      if (errno != 0) {
        int e = errno;
        return Status::IOError("cannot list directory " + path + ": " + ErrnoText(e), e);
      }
      break;
    }
    std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    std::string child_path = path + "/" + name;
    struct stat st;
    if (::fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      int e = errno;
      return Status::IOError("cannot stat " + child_path + ": " + ErrnoText(e), e);
    }
    if (S_ISLNK(st.st_mode)) {
      if (!opts.follow_symlinks || ::fstatat(dirfd, de->d_name, &st, 0) != 0 ||
          !S_ISREG(st.st_mode)) {
        ++out->skipped_symlinks;
        continue;
      }
    }
    std::string key = prefix.empty() ? name : prefix + "/" + name;
    if (S_ISDIR(st.st_mode)) {
      subdirs.emplace_back(name, true);
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      ++out->skipped_special;
      continue;
    }
    Status ks = ValidateKey(key);
    if (!ks.ok()) {
      unsafe->Add(QuoteKey(child_path) + ": " + ks.message());
      continue;
    }
    out->inputs.push_back(MakeInput(std::move(key), std::move(child_path), st));
  }
  for (const auto& [name, is_dir] : subdirs) {
    int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    std::string child_path = path + "/" + name;
    if (fd < 0) {
      int e = errno;
      return Status::IOError("cannot open directory " + child_path + ": " + ErrnoText(e), e);
    }
    PACKFS_RETURN_IF_ERROR(
        WalkDir(fd, child_path, prefix.empty() ? name : prefix + "/" + name, opts, out, unsafe));
  }
  return Status::OK();
}

}  // namespace

Result<InputList> WalkTree(const std::string& root, const WalkOptions& opts) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return Status::IOError("cannot open source directory " + root + ": " + ErrnoText(e), e);
  }
  InputList out;
  std::string base = root;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  UnsafeNames unsafe;
  PACKFS_RETURN_IF_ERROR(WalkDir(fd, base, "", opts, &out, &unsafe));
  PACKFS_RETURN_IF_ERROR(unsafe.ToStatus(
      "rename them, or list them with --files-from as key<TAB>path"));
  std::sort(out.inputs.begin(), out.inputs.end(),
            [](const PackInput& a, const PackInput& b) { return a.key < b.key; });
  return out;
}

Result<InputList> ReadFileList(const std::string& text, const std::string& root,
                               MissingPolicy missing) {
  InputList out;
  std::string base = root;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  std::unordered_map<std::string, size_t> line_of_key;
  UnsafeNames unsafe;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (line.empty()) continue;
    std::string where = "file list line " + std::to_string(line_no);
    std::string key, rel;
    size_t tab = line.rfind('\t');
    if (tab != std::string::npos) {
      key = line.substr(0, tab);
      rel = line.substr(tab + 1);
      if (rel.empty()) return Status::InvalidArgument(where + ": no path after the tab");
    } else {
      rel = line;
      if (rel[0] != '/') {
        key = rel;
      } else if (!base.empty() && rel.size() > base.size() + 1 &&
                 rel.compare(0, base.size(), base) == 0 && rel[base.size()] == '/') {
        key = rel.substr(base.size() + 1);
      } else {
        return Status::InvalidArgument(where + ": absolute path " + QuoteKey(rel) +
                                       " is not under the source directory; write key<TAB>path");
      }
    }
    Status ks = ValidateKey(key);
    if (!ks.ok()) {
      unsafe.Add(where + ": key " + QuoteKey(key) + ": " + ks.message());
      continue;
    }
    std::string path = (rel[0] == '/' || base.empty()) ? rel : base + "/" + rel;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      int e = errno;
      if (e == ENOENT && missing == MissingPolicy::kSkip) {
        out.missing.push_back(path);
        continue;
      }
      return Status::IOError(where + ": cannot stat " + path + ": " + ErrnoText(e) +
                                 (e == ENOENT ? " (use --missing skip to pack the rest)" : ""),
                             e);
    }
    if (!S_ISREG(st.st_mode)) {
      return Status::InvalidArgument(where + ": " + path + " is not a regular file");
    }
    auto [it, inserted] = line_of_key.emplace(key, line_no);
    if (!inserted) {
      return Status::InvalidArgument(where + ": key " + QuoteKey(key) + " repeats line " +
                                     std::to_string(it->second));
    }
    out.inputs.push_back(MakeInput(std::move(key), std::move(path), st));
  }
  PACKFS_RETURN_IF_ERROR(unsafe.ToStatus("give them safe keys with the key<TAB>path form"));
  return out;
}

}  // namespace packfs
