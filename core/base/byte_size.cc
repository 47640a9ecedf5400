// ParseByteSize (see byte_size.h).
#include "core/base/byte_size.h"

#include <cstdlib>
#include <string>

namespace packfs {

Result<uint64_t> ParseByteSize(std::string_view text) {
  const std::string s(text);
  auto bad = [&] {
    return Status::InvalidArgument("not a byte size: '" + s +
                                   "' (e.g. 4294967296, 512M, 4GiB, 1.5G)");
  };
  // Digits and a decimal point only: strtod alone would also take blanks, signs, exponents,
  // hex, "inf" and "nan".
  const size_t digits = s.find_first_not_of("0123456789.");
  const std::string number = s.substr(0, digits);
  std::string unit = digits == std::string::npos ? "" : s.substr(digits);
  char* end = nullptr;
  const double v = number.empty() ? 0 : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size()) return bad();
  if (unit.size() == 3 && unit.substr(1) == "iB") unit.resize(1);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "K" || unit == "k") scale = 1024.0;
  if (unit == "M") scale = 1024.0 * 1024;
  if (unit == "G") scale = 1024.0 * 1024 * 1024;
  if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  // 1.8e19 < 2^64: the conversion below cannot overflow.
  if (scale == 0 || !(v * scale >= 1) || v * scale >= 1.8e19) return bad();
  return static_cast<uint64_t>(v * scale);
}

}  // namespace packfs
