// Internal to the catalog: the SQL schema shared by the writer (catalog_writer.cc) and the reader
// (catalog.cc), and the bulk loader that fills a fresh database from CatalogData. Not a public
// interface; include only from core/catalog*.cc.
#pragma once

#include <string>

#include "core/catalog/catalog.h"
#include "core/catalog/sqlite_util.h"

namespace packfs::catalog_internal {

// Identifies our files among other SQLite databases (PRAGMA application_id, "pkfs").
inline constexpr int32_t kApplicationId = 0x706b6673;

// Columns of a node row, in the order ReadNode expects.
inline constexpr const char* kNodeColumns =
    "id, parent, name, type, first_child, child_count, shard, local_header_offset, data_offset, "
    "size, crc32, mode, mtime";

// Schema 2 finds a child by name through a sparse index, `fences`: one row for every
// kFenceStride-th child of each directory (positions 0, kFenceStride, ...), keyed by (parent,
// name). A lookup takes the last fence at or before the name, then scans at most kFenceStride
// consecutive ids (children hold consecutive ids in name order). It costs about two bytes per
// member where schema 1's full (parent, name) index cost 28, for ~15% more CPU per lookup.
inline constexpr uint64_t kFenceStride = 16;


// Fills an empty database (already opened read-write) with `data` in schema 2: schema, rows, then
// fences, in one transaction. Sets the bulk-load pragmas itself; `exclusive` keeps the file locked for
// the connection's life (right for a private temporary file, wrong for a shared memdb).
// Writes a random meta 'catalog_id' so readers can tell two catalog files apart.
Status FillDatabase(sql::Db& db, const CatalogData& data, bool exclusive);

// Reads the node at the current row of a statement selecting kNodeColumns.
Node ReadNode(const sql::Stmt& s, const NodeCodec& codec);

// "file:" URI for a path, percent-encoding what SQLite's URI parser would interpret.
std::string FileUri(const std::string& path);

}  // namespace packfs::catalog_internal
