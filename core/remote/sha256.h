// SHA-256 of a byte string (OpenSSL), as lowercase hex: the payload hash AWS SigV4 wants in
// x-amz-content-sha256 for requests with a body. Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace packfs {

std::string Sha256Hex(std::string_view data);

}  // namespace packfs
