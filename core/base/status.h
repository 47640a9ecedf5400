// Status and Result<T>: the one error currency of packfs.
// A Status carries a code, the errno a filesystem reply should use, and a message that names the
// file (shard, member) and what to do. Values are immutable and cheap to move; thread-compatible.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace packfs {

enum class Code {
  kOk = 0,
  kNotFound,         // no such key, file or directory
  kCorruption,       // on-disk structure is damaged or inconsistent
  kNotSupported,     // valid but not servable (compressed, encrypted, sparse, ...)
  kInvalidArgument,  // bad user input (options, keys, references)
  kIOError,          // the operating system or storage failed
  kAlreadyExists,    // refusing to overwrite
  kStale,            // a shard changed since the catalog was built
};

class Status {
 public:
  Status() = default;  // OK

  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, ENOENT, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, EIO, std::move(msg)); }
  static Status NotSupported(std::string msg) {
    return Status(Code::kNotSupported, EIO, std::move(msg));
  }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, EINVAL, std::move(msg));
  }
  // `err` is the errno observed (kept so that e.g. ENOSPC or EACCES reach the user unchanged).
  static Status IOError(std::string msg, int err = EIO) {
    return Status(Code::kIOError, err == 0 ? EIO : err, std::move(msg));
  }
  static Status AlreadyExists(std::string msg) {
    return Status(Code::kAlreadyExists, EEXIST, std::move(msg));
  }
  static Status Stale(std::string msg) { return Status(Code::kStale, EIO, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // Positive errno for a FUSE reply; 0 when ok().
  int err() const { return err_; }
  const std::string& message() const { return message_; }
  // "corruption: <message>" style text for logs; "OK" when ok().
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>".
  Status WithPrefix(const std::string& prefix) const {
    if (ok()) return *this;
    return Status(code_, err_, prefix + ": " + message_);
  }

 private:
  Status(Code code, int err, std::string msg) : code_(code), err_(err), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  int err_ = 0;
  std::string message_;
};

// Either a value or a non-OK Status. Accessing value() of an error aborts (a programming error).
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) std::abort();  // an OK status carries no value
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

// Errno text for messages ("No such file or directory").
std::string ErrnoText(int err);

}  // namespace packfs

#define PACKFS_CONCAT_INNER(a, b) a##b
#define PACKFS_CONCAT(a, b) PACKFS_CONCAT_INNER(a, b)

#define PACKFS_RETURN_IF_ERROR(expr)            \
  do {                                          \
    ::packfs::Status _packfs_st = (expr);       \
    if (!_packfs_st.ok()) return _packfs_st;    \
  } while (0)

#define PACKFS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define PACKFS_ASSIGN_OR_RETURN(lhs, expr) \
  PACKFS_ASSIGN_OR_RETURN_IMPL(PACKFS_CONCAT(_packfs_res_, __LINE__), lhs, expr)
