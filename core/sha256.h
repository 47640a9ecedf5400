// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: the payload hash AWS SigV4 wants in
// x-amz-content-sha256 for requests with a body. Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace packfs {

std::string Sha256Hex(std::string_view data);

}  // namespace packfs
