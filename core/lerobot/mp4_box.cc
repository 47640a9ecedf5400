// MP4 box headers and the box writer.
#include "core/lerobot/mp4_box.h"

#include <array>

namespace packfs {

std::string FourCCText(uint32_t type) {
  std::string s(4, '?');
  for (int i = 0; i < 4; ++i) {
    char c = static_cast<char>((type >> (24 - 8 * i)) & 0xff);
    if (c >= 0x20 && c < 0x7f) s[static_cast<size_t>(i)] = c;
  }
  return s;
}

Result<BoxHeader> ReadBoxHeader(const ShardSource& src, uint64_t offset, uint64_t end) {
  if (end > src.size() || offset > end || end - offset < 8) {
    return Status::Corruption(src.name() + ": MP4 box header at offset " + std::to_string(offset) +
                              " runs past the end of its parent (byte " + std::to_string(end) +
                              ")");
  }
  std::array<uint8_t, 16> buf{};
  size_t want = end - offset >= 16 ? 16 : 8;
  PACKFS_RETURN_IF_ERROR(ReadExactly(src, offset, std::span(buf.data(), want), "an MP4 box header"));
  BeReader r(std::span<const uint8_t>(buf.data(), want));
  BoxHeader h;
  h.offset = offset;
  uint64_t size = r.U32();
  h.type = r.U32();
  h.header_size = 8;
  if (size == 1) {
    if (want < 16) {
      return Status::Corruption(src.name() + ": MP4 box '" + FourCCText(h.type) + "' at offset " +
                                std::to_string(offset) + " has a 64-bit size cut off by its parent");
    }
    size = r.U64();
    h.header_size = 16;
  } else if (size == 0) {
    size = end - offset;
  }
  if (size < h.header_size || size > end - offset) {
    return Status::Corruption(src.name() + ": MP4 box '" + FourCCText(h.type) + "' at offset " +
                              std::to_string(offset) + " claims " + std::to_string(size) +
                              " bytes but only " + std::to_string(end - offset) +
                              " remain in its parent (truncated or damaged file)");
  }
  h.size = size;
  return h;
}

Result<std::vector<Box>> ChildBoxes(std::span<const uint8_t> payload, const std::string& file,
                                    const char* what) {
  std::vector<Box> out;
  size_t pos = 0;
  while (pos < payload.size()) {
    size_t left = payload.size() - pos;
    if (left < 8) {
      // Some muxers pad a container with up to 7 zero bytes; anything else is damage.
      bool zeros = true;
      for (size_t i = pos; i < payload.size(); ++i) zeros = zeros && payload[i] == 0;
      if (zeros) break;
      return Status::Corruption(file + ": " + std::to_string(left) +
                                " stray bytes at the end of MP4 box '" + what + "'");
    }
    BeReader r(payload.subspan(pos));
    uint64_t size = r.U32();
    uint32_t type = r.U32();
    size_t header = 8;
    if (size == 1) {
      size = r.U64();
      header = 16;
      if (!r.ok()) {
        return Status::Corruption(file + ": MP4 box '" + FourCCText(type) + "' inside '" + what +
                                  "' has a cut-off 64-bit size");
      }
    } else if (size == 0) {
      size = left;
    }
    if (size < header || size > left) {
      return Status::Corruption(file + ": MP4 box '" + FourCCText(type) + "' inside '" + what +
                                "' claims " + std::to_string(size) + " bytes but only " +
                                std::to_string(left) + " remain (truncated or damaged moov)");
    }
    Box b;
    b.type = type;
    b.whole = payload.subspan(pos, static_cast<size_t>(size));
    b.payload = b.whole.subspan(header);
    out.push_back(b);
    pos += static_cast<size_t>(size);
  }
  return out;
}

const Box* FindBox(const std::vector<Box>& boxes, uint32_t type) {
  for (const auto& b : boxes) {
    if (b.type == type) return &b;
  }
  return nullptr;
}

void BoxWriter::End(size_t start) {
  uint64_t size = out_->size() - start;
  // Every box packfs writes is far below 4 GiB (moov tables of one episode); mdat is written by
  // the slicer itself with a 64-bit header when needed.
  for (size_t i = 0; i < 4; ++i) {
    (*out_)[start + i] = static_cast<uint8_t>(size >> (24 - 8 * i));
  }
}

}  // namespace packfs
