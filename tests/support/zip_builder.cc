// Hand-built zip archives for reader tests (see zip_builder.h).
#include "tests/support/zip_builder.h"

#include "core/base/byte_reader.h"
#include "core/base/crc32.h"
#include "core/format/zip_format.h"

namespace packfs::testing {
namespace {

using namespace packfs::zip;

std::string Le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

std::string Record(uint16_t id, const std::string& body) {
  return Le(id, 2) + Le(body.size(), 2) + body;
}

std::string Timestamp(const ZipBuilderEntry& e) {
  if (!e.ut_mtime) return "";
  return Record(kExtraTimestamp, std::string(1, '\x01') + Le(static_cast<uint32_t>(*e.ut_mtime), 4));
}

}  // namespace

std::string FakeEocd(uint16_t entries, uint32_t cd_size, uint32_t cd_offset, uint16_t comment_len) {
  return Le(kEocdSig, 4) + Le(0, 2) + Le(0, 2) + Le(entries, 2) + Le(entries, 2) + Le(cd_size, 4) +
         Le(cd_offset, 4) + Le(comment_len, 2);
}

BuiltZip BuildZip(const std::vector<ZipBuilderEntry>& entries, const ZipBuilderOptions& opt) {
  BuiltZip out;
  std::vector<uint8_t>& b = out.bytes;
  ByteWriter w(&b);
  w.Bytes(opt.junk_prefix);
  const uint64_t base = opt.junk_prefix.size();

  std::vector<uint64_t> rel_offsets;
  for (const ZipBuilderEntry& e : entries) {
    const uint32_t crc = Crc32(0, e.data.data(), e.data.size());
    const uint64_t rel = b.size() - base;
    rel_offsets.push_back(rel);
    out.local_offsets.push_back(b.size());
    const uint16_t flags = static_cast<uint16_t>(e.flags | (e.data_descriptor ? kFlagDataDescriptor : 0));
    std::string extra;
    if (e.zip64_local) {
      extra += Record(kExtraZip64, Le(e.data_descriptor ? 0 : e.data.size(), 8) +
                                       Le(e.data_descriptor ? 0 : e.data.size(), 8));
    }
    extra += Timestamp(e);
    extra += e.local_extra;
    const std::string name = e.local_name.value_or(e.name);
    w.U32(kLocalSig);
    w.U16(e.zip64_local ? kVersionNeeded45 : kVersionNeeded20);
    w.U16(flags);
    w.U16(e.local_method.value_or(e.method));
    w.U16(e.dos_time);
    w.U16(e.dos_date);
    if (e.data_descriptor) {
      w.U32(0);
      w.U32(e.zip64_local ? k32Max : 0);
      w.U32(e.zip64_local ? k32Max : 0);
    } else {
      w.U32(crc);
      w.U32(e.zip64_local ? k32Max : static_cast<uint32_t>(e.data.size()));
      w.U32(e.zip64_local ? k32Max : static_cast<uint32_t>(e.data.size()));
    }
    w.U16(static_cast<uint16_t>(name.size()));
    w.U16(static_cast<uint16_t>(extra.size()));
    w.Bytes(name);
    w.Bytes(extra);
    out.data_offsets.push_back(b.size());
    w.Bytes(e.data);
    if (e.data_descriptor) {
      if (e.descriptor_signature) w.U32(kDataDescriptorSig);
      w.U32(crc);
      if (e.zip64_local) {
        w.U64(e.data.size());
        w.U64(e.data.size());
      } else {
        w.U32(static_cast<uint32_t>(e.data.size()));
        w.U32(static_cast<uint32_t>(e.data.size()));
      }
    }
    w.Bytes(e.gap_after);
  }

  const uint64_t cd_start = b.size();
  out.cd_offset = cd_start;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ZipBuilderEntry& e = entries[i];
    const uint32_t crc = e.central_crc.value_or(Crc32(0, e.data.data(), e.data.size()));
    const uint64_t size = e.central_size.value_or(e.data.size());
    const uint64_t csize = e.central_csize.value_or(e.data.size());
    const uint64_t offset = e.central_offset.value_or(rel_offsets[i]);
    std::string extra;
    if (e.zip64_central) {
      extra += Record(kExtraZip64, Le(size, 8) + Le(csize, 8) + Le(offset, 8));
    }
    extra += Timestamp(e);
    extra += e.central_extra;
    const uint16_t flags = static_cast<uint16_t>(e.flags | (e.data_descriptor ? kFlagDataDescriptor : 0));
    w.U32(kCentralSig);
    w.U16(e.version_made_by);
    w.U16(e.zip64_central ? kVersionNeeded45 : kVersionNeeded20);
    w.U16(flags);
    w.U16(e.method);
    w.U16(e.dos_time);
    w.U16(e.dos_date);
    w.U32(crc);
    w.U32(e.zip64_central ? k32Max : static_cast<uint32_t>(csize));
    w.U32(e.zip64_central ? k32Max : static_cast<uint32_t>(size));
    w.U16(static_cast<uint16_t>(e.name.size()));
    w.U16(static_cast<uint16_t>(extra.size()));
    w.U16(0);  // comment
    w.U16(0);  // disk
    w.U16(0);  // internal attributes
    w.U32(e.external_attr);
    w.U32(e.zip64_central ? k32Max : static_cast<uint32_t>(offset));
    w.Bytes(e.name);
    w.Bytes(extra);
  }
  out.cd_size = b.size() - cd_start;
  const uint64_t n = opt.declared_entries.value_or(entries.size());
  const uint64_t cd_rel = cd_start - base;

  if (opt.zip64_end) {
    const uint64_t z64_rel = b.size() - base;
    w.U32(kZip64EocdSig);
    w.U64(kZip64EocdSize - 12 + opt.zip64_extensible_data.size());
    w.U16(0x031E);
    w.U16(kVersionNeeded45);
    w.U32(0);
    w.U32(0);
    w.U64(n);
    w.U64(n);
    w.U64(out.cd_size);
    w.U64(cd_rel);
    w.Bytes(opt.zip64_extensible_data);
    w.U32(kZip64LocatorSig);
    w.U32(0);
    w.U64(opt.locator_offset.value_or(z64_rel));
    w.U32(1);
  }
  out.eocd_offset = b.size();
  w.U32(kEocdSig);
  w.U16(opt.eocd_disk.value_or(0));
  w.U16(0);
  uint16_t n16 = opt.zip64_end || n > 0xFFFF ? k16Max : static_cast<uint16_t>(n);
  if (opt.wrap_entry_count && !opt.zip64_end) n16 = static_cast<uint16_t>(n);
  w.U16(n16);
  w.U16(n16);
  w.U32(opt.zip64_end ? k32Max : static_cast<uint32_t>(out.cd_size));
  w.U32(opt.zip64_end ? k32Max : static_cast<uint32_t>(cd_rel));
  w.U16(static_cast<uint16_t>(opt.comment.size()));
  w.Bytes(opt.comment);
  return out;
}

}  // namespace packfs::testing
