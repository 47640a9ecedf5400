// Mount option parsing.
#include "fuse/mount_options.h"

#include <charconv>
#include <string>

#include "core/base/byte_size.h"

namespace packfs {
namespace {

Result<uint32_t> ParseNumber(std::string_view name, std::string_view value, int base) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v, base);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    return Status::InvalidArgument("mount option " + std::string(name) + "=" +
                                   std::string(value) + ": not a valid number");
  }
  return v;
}

bool Dropped(std::string_view opt) {
  // Handled by mount(8)/fstab, or implied: packfs mounts are always read-only.
  static constexpr std::string_view kDropped[] = {
      "defaults", "auto", "noauto", "nofail", "_netdev", "user", "users", "nouser",
      "owner",    "group", "ro",    "rw",     "nofail", "loop"};
  for (std::string_view d : kDropped) {
    if (opt == d) return true;
  }
  return opt.starts_with("x-") || opt.starts_with("comment=");
}

// libfuse splits option lists at unescaped commas.
std::string EscapeOptionValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == ',' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

Status ParseMountOptions(std::string_view list, MountOptions* out) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view opt = list.substr(pos, comma - pos);
    pos = comma + 1;
    if (opt.empty()) continue;
    size_t eq = opt.find('=');
    std::string_view name = opt.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "" : opt.substr(eq + 1);
    if (name == "uid" || name == "gid" || name == "umask" || name == "threads" ||
        name == "active_threads" || name == "max_read") {
      PACKFS_ASSIGN_OR_RETURN(uint32_t v, ParseNumber(name, value, name == "umask" ? 8 : 10));
      if (name == "uid") out->uid = v;
      if (name == "gid") out->gid = v;
      if (name == "umask") out->umask = v & 07777;
      if (name == "max_read") {
        if (v < 4096) return Status::InvalidArgument("max_read must be at least 4096");
        out->max_read = v;
      }
      if (name == "threads") {
        if (v == 0 || v > 1024) return Status::InvalidArgument("threads must be 1..1024");
        out->threads = static_cast<int>(v);
      }
      if (name == "active_threads") {
        if (v > 1024) return Status::InvalidArgument("active_threads must be 0..1024");
        out->active_threads = static_cast<int>(v);
      }
    } else if (name == "catalog") {
      out->catalog = std::string(value);
    } else if (name == "log") {
      if (value.empty()) return Status::InvalidArgument("mount option log= needs a file name");
      out->log = std::string(value);
    } else if (name == "on_collision" || name == "on-collision") {
      out->on_collision = std::string(value);
    } else if (opt == "nozerocopy") {
      out->zero_copy = false;
    } else if (opt == "nosplice") {
      out->splice = false;
    } else if (opt == "noprefetch") {
      out->prefetch = false;
    } else if (opt == "nostream") {
      out->stream = false;
    } else if (opt == "nowalk") {
      out->walk = false;
    } else if (opt == "nolist") {
      out->list = false;
    } else if (opt == "exact_gets") {
      out->block_gets = false;
    } else if (name == "push") {
      Result<uint64_t> v = ParseByteSize(value);
      if (!v.ok()) return v.status().WithPrefix("-o push");
      if (*v > (64u << 20)) return Status::InvalidArgument("-o push: at most 64M");
      out->push_window = *v;
    } else if (name == "read_ahead") {
      Result<uint64_t> v = ParseByteSize(value);
      if (!v.ok()) return v.status().WithPrefix("-o read_ahead");
      if (*v > (64u << 20)) return Status::InvalidArgument("-o read_ahead: at most 64M");
      out->read_ahead = static_cast<uint32_t>(*v);
    } else if (opt == "nopush") {
      out->push_window = 0;
    } else if (opt == "nocrc") {
      out->crc = false;
    } else if (opt == "io_uring") {
      out->io_uring = true;
    } else if (opt == "noio_uring") {
      out->io_uring = false;
    } else if (opt == "open") {
      out->no_open = false;
    } else if (opt == "debug") {
      out->debug = true;
    } else if (opt == "nonempty") {
      // fuse2's option; libfuse 3 mounts over non-empty directories and refuses the option.
      out->nonempty = true;
    } else if (!Dropped(opt)) {
      out->fuse_options.emplace_back(opt);
    }
  }
  return Status::OK();
}

std::string FuseOptionString(const MountOptions& opts, const std::string& fsname,
                             uint32_t max_read) {
  std::string s = "ro,default_permissions,subtype=packfs,fsname=" + EscapeOptionValue(fsname);
  for (const auto& o : opts.fuse_options) s += "," + o;
  s += ",max_read=" + std::to_string(max_read);
  return s;
}

}  // namespace packfs
