// Page decompression for Parquet: one function per codec behind Decompress, each decoding into a
// buffer of exactly the size the page header declares (Parquet always knows it).
//
// The bomb guard: before allocating, a declared size is compared with the most each codec can
// produce from the compressed bytes at hand. Snappy's longest copy (64 bytes for a 3-byte op)
// stays under 32x; DEFLATE's longest match (258 bytes for at best 1 bit) stays under 1032x, gzip
// framing only lowers it; an LZ4 sequence grows its match by 255 bytes per extension byte, so
// under 256x; a zstd RLE block turns 4 bytes (3 of header, 1 value) into at most 128 KiB, 32768x.
// Anything above is not a page any writer made, and is refused without touching the allocator.
#include "core/lerobot/parquet_codecs.h"

#include <libdeflate.h>
#include <lz4.h>
#include <snappy.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <cerrno>
#include <memory>

#include "core/lerobot/parquet_thrift.h"

namespace packfs::parquet {
namespace {

// Codec numbers of parquet.thrift's CompressionCodec.

constexpr uint64_t MaxExpansion(int32_t codec) {
  switch (codec) {
    case kSnappy: return 32;
    case kGzip: return 1032;
    case kLz4Raw: return 256;
    case kZstd: return 32768;
    default: return 1;
  }
}

Status SizeMismatch(int32_t codec, int64_t declared) {
  return Status::Corruption(CodecName(codec) + " data does not decode to the " +
                            std::to_string(declared) + " bytes its page header declares");
}

Status Snappy(std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  const char* src = reinterpret_cast<const char*>(in.data());
  size_t len = 0;
  if (!snappy::GetUncompressedLength(src, in.size(), &len) || len != out->size()) {
    return SizeMismatch(kSnappy, static_cast<int64_t>(out->size()));
  }
  if (!snappy::RawUncompress(src, in.size(), reinterpret_cast<char*>(out->data()))) {
    return Status::Corruption("bad SNAPPY data");
  }
  return Status::OK();
}

// GZIP pages are gzip members (RFC 1952), possibly several back to back; a zlib stream (RFC 1950)
// is accepted too, as Arrow's reader does, since some writers emit one under the GZIP name.
Status Gzip(std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> d(
      libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
  if (!d) return Status::IOError("out of memory for a GZIP decompressor", ENOMEM);
  const bool zlib = in.size() >= 2 && !(in[0] == 0x1f && in[1] == 0x8b);
  size_t in_pos = 0;
  size_t out_pos = 0;
  do {
    size_t used_in = 0;
    size_t used_out = 0;
    const void* src = in.data() + in_pos;
    void* dst = out->data() + out_pos;
    const size_t avail = out->size() - out_pos;
    const libdeflate_result r =
        zlib ? libdeflate_zlib_decompress_ex(d.get(), src, in.size() - in_pos, dst, avail,
                                             &used_in, &used_out)
             : libdeflate_gzip_decompress_ex(d.get(), src, in.size() - in_pos, dst, avail,
                                             &used_in, &used_out);
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
      return SizeMismatch(kGzip, static_cast<int64_t>(out->size()));
    }
    if (r != LIBDEFLATE_SUCCESS || used_in == 0) return Status::Corruption("bad GZIP data");
    in_pos += used_in;
    out_pos += used_out;
  } while (in_pos < in.size() && !zlib);
  if (in_pos != in.size() || out_pos != out->size()) {
    return SizeMismatch(kGzip, static_cast<int64_t>(out->size()));
  }
  return Status::OK();
}

Status Zstd(std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  if (!ctx) return Status::IOError("out of memory for a ZSTD decompressor", ENOMEM);
  const size_t n = ZSTD_decompressDCtx(ctx.get(), out->data(), out->size(), in.data(), in.size());
  if (ZSTD_isError(n)) {
    if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall) {
      return SizeMismatch(kZstd, static_cast<int64_t>(out->size()));
    }
    return Status::Corruption(std::string("bad ZSTD data (") + ZSTD_getErrorName(n) + ")");
  }
  if (n != out->size()) return SizeMismatch(kZstd, static_cast<int64_t>(out->size()));
  return Status::OK();
}

Status Lz4Raw(std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  // Both sizes are below 2 GiB: page sizes are i32 in the page header.
  const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()),
                                    reinterpret_cast<char*>(out->data()),
                                    static_cast<int>(in.size()), static_cast<int>(out->size()));
  if (n < 0) return Status::Corruption("bad LZ4_RAW data (or more than the declared size)");
  if (static_cast<size_t>(n) != out->size()) {
    return SizeMismatch(kLz4Raw, static_cast<int64_t>(out->size()));
  }
  return Status::OK();
}

}  // namespace

std::string CodecName(int32_t codec) {
  static constexpr const char* kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                           "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  if (codec >= 0 && codec < 8) return kNames[codec];
  return "#" + std::to_string(codec);
}

Result<std::span<const uint8_t>> Decompress(std::span<const uint8_t> body, int32_t codec,
                                            int64_t uncompressed_size, uint64_t max_bytes,
                                            std::vector<uint8_t>* storage) {
  if (codec == kUncompressed) return body;
  if (codec != kSnappy && codec != kGzip && codec != kZstd && codec != kLz4Raw) {
    return Status::NotSupported("compression codec " + CodecName(codec) +
                                " is not supported (only UNCOMPRESSED, SNAPPY, GZIP, ZSTD and "
                                "LZ4_RAW)");
  }
  if (uncompressed_size < 0 || body.size() > INT32_MAX) {
    return Status::Corruption("bad " + CodecName(codec) + " page sizes");
  }
  const uint64_t size = static_cast<uint64_t>(uncompressed_size);
  if (size > body.size() * MaxExpansion(codec) + 64) {
    return Status::Corruption(CodecName(codec) + " page of " + std::to_string(body.size()) +
                              " bytes declares " + std::to_string(size) +
                              " bytes uncompressed, more than the codec can expand to " +
                              "(a damaged page or a decompression bomb)");
  }
  if (size > max_bytes) {
    return Status::NotSupported(CodecName(codec) + " page declares " + std::to_string(size) +
                                " bytes uncompressed, over the limit of " +
                                std::to_string(max_bytes) + " bytes per page");
  }
  storage->assign(size, 0);
  Status st;
  switch (codec) {
    case kSnappy: st = Snappy(body, storage); break;
    case kGzip: st = Gzip(body, storage); break;
    case kZstd: st = Zstd(body, storage); break;
    default: st = Lz4Raw(body, storage); break;
  }
  PACKFS_RETURN_IF_ERROR(st);
  return std::span<const uint8_t>(*storage);
}

}  // namespace packfs::parquet
