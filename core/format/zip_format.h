// Zip on-disk constants shared by the reader and the writer (APPNOTE.TXT 6.3.x section numbers).
#pragma once

#include <cstdint>

namespace packfs::zip {

inline constexpr uint32_t kLocalSig = 0x04034b50;        // 4.3.7 local file header
inline constexpr uint32_t kCentralSig = 0x02014b50;      // 4.3.12 central directory header
inline constexpr uint32_t kEocdSig = 0x06054b50;         // 4.3.16 end of central directory
inline constexpr uint32_t kZip64EocdSig = 0x06064b50;    // 4.3.14 zip64 end of central directory
inline constexpr uint32_t kZip64LocatorSig = 0x07064b50; // 4.3.15 zip64 end of central dir locator
inline constexpr uint32_t kDataDescriptorSig = 0x08074b50;

inline constexpr uint32_t kLocalHeaderSize = 30;
inline constexpr uint32_t kCentralHeaderSize = 46;
inline constexpr uint32_t kEocdSize = 22;
inline constexpr uint32_t kZip64EocdSize = 56;
inline constexpr uint32_t kZip64LocatorSize = 20;
inline constexpr uint32_t kMaxCommentSize = 0xFFFF;

inline constexpr uint16_t kMethodStored = 0;
inline constexpr uint16_t kFlagEncrypted = 0x0001;
inline constexpr uint16_t kFlagDataDescriptor = 0x0008;
inline constexpr uint16_t kFlagStrongEncryption = 0x0040;
inline constexpr uint16_t kFlagUtf8 = 0x0800;

inline constexpr uint16_t kExtraZip64 = 0x0001;
inline constexpr uint16_t kExtraTimestamp = 0x5455;  // "UT" extended timestamp (Info-ZIP)
// Alignment padding in the local header, as Android's zipalign writes it: u16 alignment, zeros.
inline constexpr uint16_t kExtraAlignment = 0xD935;

inline constexpr uint16_t kVersionMadeByUnix = 3 << 8;  // upper byte: host system (3 = Unix)
inline constexpr uint16_t kVersionNeeded20 = 20;
inline constexpr uint16_t kVersionNeeded45 = 45;        // ZIP64

inline constexpr uint32_t k32Max = 0xFFFFFFFFu;
inline constexpr uint16_t k16Max = 0xFFFFu;

}  // namespace packfs::zip
