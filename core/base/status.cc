// Status text rendering.
#include "core/base/status.h"

#include <cstring>

namespace packfs {

std::string Status::ToString() const {
  const char* kind = "OK";
  switch (code_) {
    case Code::kOk: return "OK";
    case Code::kNotFound: kind = "not found"; break;
    case Code::kCorruption: kind = "corrupt"; break;
    case Code::kNotSupported: kind = "not supported"; break;
    case Code::kInvalidArgument: kind = "invalid argument"; break;
    case Code::kIOError: kind = "I/O error"; break;
    case Code::kAlreadyExists: kind = "already exists"; break;
    case Code::kStale: kind = "stale"; break;
  }
  return std::string(kind) + ": " + message_;
}

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  const char* s = strerror_r(err, buf, sizeof buf);
  return std::string(s);
}

}  // namespace packfs
