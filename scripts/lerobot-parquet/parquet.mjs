// Writes and reads the parquet files of synthetic LeRobot v3.0 test datasets for
// scripts/make-lerobot-dataset.py and its tests.
//
//   node parquet.mjs write SPEC.json    write every file SPEC lists (format below)
//   node parquet.mjs read FILE.parquet  print {"rows": [...]} as JSON (int64 as numbers)
//   node parquet.mjs pages FILE.parquet print codec, page types and encodings per column chunk
//   node parquet.mjs schema FILE.parquet print the Arrow type of each column, the schema
//                                       metadata and the row count as parquet-wasm reads them
//
// Writing goes through parquet-wasm (the Rust `parquet` crate compiled to WebAssembly) because it
// writes what pyarrow writes for LeRobot: SNAPPY, DATA_PAGE (v1) pages, a dictionary page plus
// RLE_DICTIONARY data pages per column, OPTIONAL fields and 3-level LISTs (`list`/`element`).
// Reading goes through hyparquet, an independent pure-JS reader, so a write is checked by a
// second implementation and `pages` reports what is really in the file, page by page.
//
// SPEC: {"files": [{"path": "...", "metadata": {"k": "v"},
//                   "columns": [{"name": "...", "type": T, "values": [...]}]}]}
// T is int64 | double | float | string | list<string> | list<int64> | list<double> | list<float>
//      | list3<double> (a list of lists of lists, like LeRobot's per-channel image stats).
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import * as arrow from 'apache-arrow'
// parquet-wasm's `node` build is CommonJS inside a "type": "module" package, which Node 20
// refuses to load; the `esm` build works once handed its .wasm bytes.
import * as pw from 'parquet-wasm/esm'
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'
// parquetHeader is not in hyparquet's export map; import the module file itself.
import { parquetHeader } from './node_modules/hyparquet/src/column.js'

pw.initSync({ module: readFileSync(new URL('./node_modules/parquet-wasm/esm/parquet_wasm_bg.wasm',
  import.meta.url)) })

function listOf(child) {
  // pyarrow and the Rust writer name the repeated group `list`; the element field name is ours.
  return new arrow.List(new arrow.Field('element', child, true))
}

function arrowType(t) {
  switch (t) {
    case 'int64': return new arrow.Int64()
    case 'double': return new arrow.Float64()
    case 'float': return new arrow.Float32()
    case 'string': return new arrow.Utf8()
    case 'list<string>': return listOf(new arrow.Utf8())
    case 'list<int64>': return listOf(new arrow.Int64())
    case 'list<double>': return listOf(new arrow.Float64())
    case 'list<float>': return listOf(new arrow.Float32())
    case 'list3<double>': return listOf(listOf(listOf(new arrow.Float64())))
    default: throw new Error(`unknown column type ${t}`)
  }
}

function toBigInts(v) {
  if (Array.isArray(v)) return v.map(toBigInts)
  return v === null ? null : BigInt(v)
}

function buildTable(columns) {
  const fields = []
  const vectors = {}
  for (const c of columns) {
    const type = arrowType(c.type)
    const values = c.type.includes('int64') ? toBigInts(c.values) : c.values
    vectors[c.name] = arrow.vectorFromArray(values, type)
    fields.push(new arrow.Field(c.name, type, true)) // OPTIONAL, as pandas/pyarrow writes
  }
  const batch = new arrow.RecordBatch(new arrow.Schema(fields), arrow.makeData({
    type: new arrow.Struct(fields),
    length: columns.length ? columns[0].values.length : 0,
    nullCount: 0,
    children: columns.map((c) => vectors[c.name].data[0]),
  }))
  return new arrow.Table([batch])
}

function writeSpec(specPath) {
  const spec = JSON.parse(readFileSync(specPath, 'utf8'))
  for (const f of spec.files) {
    const table = buildTable(f.columns)
    const wasmTable = pw.Table.fromIPCStream(arrow.tableToIPC(table, 'stream'))
    let props = new pw.WriterPropertiesBuilder()
      .setWriterVersion(pw.WriterVersion.V1)
      .setCompression(pw.Compression.SNAPPY)
      .setDictionaryEnabled(true)
      .setCreatedBy('lerobot-parquet test generator (parquet-wasm 0.7.1, Rust parquet)')
    if (f.metadata) props = props.setKeyValueMetadata(new Map(Object.entries(f.metadata)))
    const bytes = pw.writeParquet(wasmTable, props.build())
    mkdirSync(dirname(f.path), { recursive: true })
    writeFileSync(f.path, bytes)
  }
}

const plain = (_k, v) => (typeof v === 'bigint' ? Number(v) : v)

async function readRows(path) {
  const file = await asyncBufferFromFile(path)
  const rows = await parquetReadObjects({ file })
  process.stdout.write(JSON.stringify({ rows }, plain) + '\n')
}

// Walks every page of every column chunk and prints what it is: the footer alone can claim
// encodings, the page headers show what a reader will actually meet.
async function describePages(path) {
  const buf = readFileSync(path)
  const file = await asyncBufferFromFile(path)
  const md = await parquetMetadataAsync(file)
  const out = { created_by: md.created_by, num_rows: Number(md.num_rows), row_groups: [], schema: [] }
  for (const s of md.schema.slice(1)) {
    out.schema.push({ name: s.name, type: s.type ?? null, repetition: s.repetition_type,
      logical: s.logical_type?.type ?? s.converted_type ?? null })
  }
  for (const rg of md.row_groups) {
    const cols = []
    for (const c of rg.columns) {
      const m = c.meta_data
      const start = Number(m.dictionary_page_offset ?? m.data_page_offset)
      const end = start + Number(m.total_compressed_size)
      const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
      const reader = { view, offset: start }
      const pages = []
      while (reader.offset < end) {
        const h = parquetHeader(reader)
        const enc = h.data_page_header?.encoding ?? h.dictionary_page_header?.encoding
          ?? h.data_page_header_v2?.encoding
        const page = { type: h.type, encoding: enc }
        if (h.data_page_header) {
          page.def_levels = h.data_page_header.definition_level_encoding
          page.rep_levels = h.data_page_header.repetition_level_encoding
        }
        pages.push(page)
        reader.offset += h.compressed_page_size
      }
      cols.push({ path: m.path_in_schema.join('.'), type: m.type, codec: m.codec, pages })
    }
    out.row_groups.push({ num_rows: Number(rg.num_rows), columns: cols })
  }
  process.stdout.write(JSON.stringify(out, plain, 1) + '\n')
}

// The second reader: parquet-wasm decodes the whole file into Arrow; report the Arrow types it
// chose (e.g. "List<Float32>", "Int64") and the key-value metadata it kept.
function describeSchema(path) {
  const table = arrow.tableFromIPC(pw.readParquet(readFileSync(path)).intoIPCStream())
  const fields = {}
  for (const f of table.schema.fields) fields[f.name] = String(f.type)
  const metadata = Object.fromEntries(table.schema.metadata)
  process.stdout.write(JSON.stringify({ num_rows: table.numRows, rows_read: table.numRows,
    fields, metadata }) + '\n')
}

const [cmd, arg] = process.argv.slice(2)
if (cmd === 'write' && arg) writeSpec(arg)
else if (cmd === 'read' && arg) await readRows(arg)
else if (cmd === 'pages' && arg) await describePages(arg)
else if (cmd === 'schema' && arg) describeSchema(arg)
else {
  process.stderr.write(
    'usage: node parquet.mjs write SPEC.json | read FILE | pages FILE | schema FILE\n')
  process.exit(2)
}
