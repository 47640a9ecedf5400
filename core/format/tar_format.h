// Tar on-disk constants shared by the tar reader and its callers (POSIX.1-2001 ustar/pax, GNU tar
// extensions). Field offsets are within one 512-byte header block.
#pragma once

#include <cstddef>
#include <cstdint>

namespace packfs::tar {

inline constexpr size_t kBlockSize = 512;

// ustar header fields: offset and length.
inline constexpr size_t kNameOff = 0, kNameLen = 100;
inline constexpr size_t kModeOff = 100, kModeLen = 8;
inline constexpr size_t kSizeOff = 124, kSizeLen = 12;
inline constexpr size_t kMtimeOff = 136, kMtimeLen = 12;
inline constexpr size_t kChksumOff = 148, kChksumLen = 8;
inline constexpr size_t kTypeOff = 156;
inline constexpr size_t kLinkOff = 157, kLinkLen = 100;
inline constexpr size_t kMagicOff = 257;  // "ustar\0" + "00" (POSIX) or "ustar " + " \0" (GNU)
inline constexpr size_t kPrefixOff = 345, kPrefixLen = 155;  // POSIX ustar only; GNU uses it
                                                             // for atime/ctime/sparse maps

// Type flags.
inline constexpr char kRegular = '0';
inline constexpr char kRegularOld = '\0';
inline constexpr char kHardLink = '1';
inline constexpr char kSymlink = '2';
inline constexpr char kCharDev = '3';
inline constexpr char kBlockDev = '4';
inline constexpr char kDirectory = '5';
inline constexpr char kFifo = '6';
inline constexpr char kContiguous = '7';     // treated as a regular file by every reader
inline constexpr char kPaxLocal = 'x';       // pax records for the next member
inline constexpr char kPaxGlobal = 'g';      // pax records for all following members
inline constexpr char kGnuLongName = 'L';    // ././@LongLink: the next member's name
inline constexpr char kGnuLongLink = 'K';    // ././@LongLink: the next member's link name
inline constexpr char kGnuSparse = 'S';
inline constexpr char kGnuDumpDir = 'D';     // directory listing (incremental dumps)
inline constexpr char kGnuMultiVolume = 'M';
inline constexpr char kGnuVolumeLabel = 'V';

// Bytes a member's data occupies in the archive (rounded up to whole blocks); saturates instead of
// wrapping for absurd sizes so callers' bounds checks still fail.
inline constexpr uint64_t PaddedSize(uint64_t size) {
  return size > UINT64_MAX - (kBlockSize - 1) ? UINT64_MAX
                                              : (size + kBlockSize - 1) / kBlockSize * kBlockSize;
}

}  // namespace packfs::tar
