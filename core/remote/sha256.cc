// SHA-256 through OpenSSL's libcrypto (the library libcurl already links on Debian).
#include "core/remote/sha256.h"

#include <openssl/evp.h>

namespace packfs {

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest only fails on allocation failure inside OpenSSL; a wrong hash would only make
  // the server refuse the request's signature, so an empty result is safe to return.
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

}  // namespace packfs
