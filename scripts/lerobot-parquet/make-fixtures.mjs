// Writes the Parquet fixtures of tests/fixtures/parquet/ with two independent writers, so that the
// reader is checked against files it did not make:
//   hyparquet-writer (pure JS; DATA_PAGE_V2 is its only page format) and
//   parquet-wasm (the Rust `parquet` crate; DATA_PAGE or DATA_PAGE_V2, every codec and encoding).
//
//   node make-fixtures.mjs OUT_DIR     (OUT_DIR: tests/fixtures/parquet)
//
// Every file holds the same LeRobot-like frame table of ROWS rows whose values are a function of
// the row number, recomputed by tests/unit/lerobot/parquet_reader_test.cc (keep the two in step).
// After writing,
// each file is read back with hyparquet (a third implementation) and compared with the values
// meant, and its pages are walked (`node parquet.mjs pages`) to check that the writer really used
// the page type, codec and encodings asked for: a writer may quietly fall back to another.
// Deterministic: same inputs, same bytes. ZSTD for hyparquet-writer goes through the zstd program.
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import * as arrow from 'apache-arrow'
import * as pw from 'parquet-wasm/esm'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { parquetReadObjects } from 'hyparquet'

pw.initSync({ module: readFileSync(new URL('./node_modules/parquet-wasm/esm/parquet_wasm_bg.wasm',
  import.meta.url)) })

const ROWS = 300
const TASKS = [
  'Pick the orange cube and place it in the box',
  'Pick the orange cube and place it on the plate',
  'Push the red block to the left',
]

// The columns: name, parquet type, nullable, value of row r (null for a null).
const COLUMNS = [
  { name: 'index', type: 'INT64', f: (r) => BigInt(r) },
  { name: 'episode_index', type: 'INT64', f: (r) => BigInt(Math.floor(r / 100)) },
  { name: 'frame_index', type: 'INT64', f: (r) => BigInt(r % 100) },
  { name: 'timestamp', type: 'FLOAT', f: (r) => Math.fround((r % 100) / 30) },
  // Alternating signs: deltas of ~6e11, so wide miniblocks and zigzag first values.
  { name: 'ns', type: 'INT64', f: (r) => BigInt((r % 2 ? -1 : 1) * r) * 1000000007n },
  { name: 'offset', type: 'INT32', f: (r) => (r % 17) - 8 },
  { name: 'reward', type: 'DOUBLE', nullable: true,
    f: (r) => (r % 7 === 3 ? null : r * 1.1 / 7 - 3) },
  { name: 'task', type: 'STRING', f: (r) => TASKS[r % 3] },
  { name: 'path', type: 'STRING',
    f: (r) => `videos/observation.images.front/chunk-000/file-${String(r).padStart(3, '0')}.mp4` },
  { name: 'note', type: 'STRING', nullable: true,
    f: (r) => (r % 5 === 0 ? null : r % 5 === 1 ? '' : `note ${r}`) },
  { name: 'done', type: 'BOOLEAN', f: (r) => r % 100 === 99 },
  // A fixed-size list of 6 FLOATs, as LeRobot's observation.state; every 50th list is empty.
  { name: 'observation.state', type: 'LIST<FLOAT>',
    f: (r) => (r % 50 === 7 ? []
      : [0, 1, 2, 3, 4, 5].map((j) => Math.fround(r * 0.5 + j * 0.125 - 1))) },
]

function values(col) {
  return Array.from({ length: ROWS }, (_, r) => col.f(r))
}

// --- hyparquet-writer -------------------------------------------------------------------------

function hyparquetSchema() {
  const schema = [{ name: 'root', num_children: COLUMNS.length }]
  for (const c of COLUMNS) {
    const repetition_type = c.nullable ? 'OPTIONAL' : 'REQUIRED'
    if (c.type === 'LIST<FLOAT>') {
      schema.push({ name: c.name, repetition_type: 'OPTIONAL', converted_type: 'LIST',
        num_children: 1 })
      schema.push({ name: 'list', repetition_type: 'REPEATED', num_children: 1 })
      schema.push({ name: 'element', repetition_type: 'REQUIRED', type: 'FLOAT' })
    } else if (c.type === 'STRING') {
      schema.push({ name: c.name, repetition_type, type: 'BYTE_ARRAY', converted_type: 'UTF8' })
    } else {
      schema.push({ name: c.name, repetition_type, type: c.type })
    }
  }
  return schema
}

const zstd = (bytes) =>
  new Uint8Array(execFileSync('zstd', ['-q', '-c', '-3', '--no-check'], { input: bytes }))
const gzip = (bytes) => new Uint8Array(gzipSync(bytes, { level: 6 }))

function writeHyparquet(codec, encodings) {
  return parquetWriteBuffer({
    columnData: COLUMNS.map((c) =>
      ({ name: c.name, data: values(c), encoding: encodings[c.name] })),
    schema: hyparquetSchema(),
    codec,
    compressors: { GZIP: gzip, ZSTD: zstd },
    pageSize: 512, // several pages per column chunk
    rowGroupSize: 128, // three row groups
    statistics: false,
    createdBy: 'packfs fixture generator (hyparquet-writer 0.17.0)',
  })
}

// --- parquet-wasm -----------------------------------------------------------------------------

function arrowType(t) {
  switch (t) {
    case 'INT64': return new arrow.Int64()
    case 'INT32': return new arrow.Int32()
    case 'FLOAT': return new arrow.Float32()
    case 'DOUBLE': return new arrow.Float64()
    case 'STRING': return new arrow.Utf8()
    case 'BOOLEAN': return new arrow.Bool()
    case 'LIST<FLOAT>':
      return new arrow.List(new arrow.Field('element', new arrow.Float32(), false))
    default: throw new Error(`unknown type ${t}`)
  }
}

function arrowTable() {
  const fields = COLUMNS.map((c) => new arrow.Field(c.name, arrowType(c.type), !!c.nullable))
  const children = COLUMNS.map((c) => arrow.vectorFromArray(values(c), arrowType(c.type)).data[0])
  const batch = new arrow.RecordBatch(new arrow.Schema(fields), arrow.makeData({
    type: new arrow.Struct(fields), length: ROWS, nullCount: 0, children,
  }))
  return new arrow.Table([batch])
}

function writeWasm(version, compression, dictionary, encodings) {
  let props = new pw.WriterPropertiesBuilder()
    .setWriterVersion(version)
    .setCompression(compression)
    .setDictionaryEnabled(dictionary)
    .setStatisticsEnabled(pw.EnabledStatistics.None)
    .setMaxRowGroupSize(128)
    .setWriteBatchSize(32)
    .setDataPageSizeLimit(512)
    .setCreatedBy('packfs fixture generator (parquet-wasm 0.7.1, Rust parquet)')
  // parquet-wasm takes a column path as one string, so the list's leaf
  // (observation.state / list / element) cannot be named: it keeps the default encoding.
  for (const [col, enc] of Object.entries(encodings)) props = props.setColumnEncoding(col, enc)
  const table = pw.Table.fromIPCStream(arrow.tableToIPC(arrowTable(), 'stream'))
  return pw.writeParquet(table, props.build())
}

// --- checks -----------------------------------------------------------------------------------

// Decompressors for hyparquet, which only knows SNAPPY itself.
function lz4RawDecode(input, outputLength) {
  // An LZ4 block: sequences of (token, literal length, literals, offset, match length).
  const out = new Uint8Array(outputLength)
  let i = 0
  let o = 0
  const length = (n) => {
    if (n !== 15) return n
    for (let b = 255; b === 255; n += b) b = input[i++]
    return n
  }
  while (i < input.length) {
    const token = input[i++]
    const lit = length(token >> 4)
    out.set(input.subarray(i, i + lit), o)
    i += lit
    o += lit
    if (i >= input.length) break
    const offset = input[i] | (input[i + 1] << 8)
    i += 2
    const match = length(token & 15) + 4
    for (let k = 0; k < match; k++, o++) out[o] = out[o - offset]
  }
  if (o !== outputLength) throw new Error(`LZ4_RAW block of ${o} bytes, expected ${outputLength}`)
  return out
}
const DECOMPRESSORS = {
  GZIP: (input) => new Uint8Array(gunzipSync(input)),
  ZSTD: (input) => new Uint8Array(execFileSync('zstd', ['-q', '-d', '-c'], { input })),
  LZ4_RAW: lz4RawDecode,
}

const jsonPlain = (_k, v) => (typeof v === 'bigint' ? v.toString() : v)

async function checkValues(path) {
  const rows = await parquetReadObjects({ file: readFileSync(path).buffer.slice(0),
    compressors: DECOMPRESSORS })
  if (rows.length !== ROWS) throw new Error(`${path}: ${rows.length} rows read back`)
  for (const c of COLUMNS) {
    for (let r = 0; r < ROWS; r++) {
      let got = rows[r][c.name]
      if (c.type === 'INT32' && typeof got === 'number') got = got | 0
      if (c.type === 'LIST<FLOAT>' && got === null) got = []
      const want = c.f(r)
      if (JSON.stringify(got, jsonPlain) !== JSON.stringify(want, jsonPlain)) {
        throw new Error(`${path}: column ${c.name} row ${r}: ` +
          `read ${JSON.stringify(got, jsonPlain)}, ` +
          `meant ${JSON.stringify(want, jsonPlain)}`)
      }
    }
  }
}

const CODECS = ['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'LZO', 'BROTLI', 'LZ4', 'ZSTD', 'LZ4_RAW']
const PAGE_TYPES = ['DATA_PAGE', 'INDEX_PAGE', 'DICTIONARY_PAGE', 'DATA_PAGE_V2']

// What the file really holds: per column, codec, page types and value encodings seen.
function describe(path) {
  const script = new URL('./parquet.mjs', import.meta.url).pathname
  const out = execFileSync('node', [script, 'pages', path])
  const d = JSON.parse(out.toString())
  const cols = {}
  for (const rg of d.row_groups) {
    for (const c of rg.columns) {
      const e = (cols[c.path] ??= { codec: new Set(), pages: new Set(), encodings: new Set() })
      e.codec.add(typeof c.codec === 'number' ? CODECS[c.codec] : c.codec)
      for (const p of c.pages) {
        e.pages.add(typeof p.type === 'number' ? PAGE_TYPES[p.type] : p.type)
        if (p.type !== 'DICTIONARY_PAGE' && p.type !== 2) e.encodings.add(p.encoding)
      }
    }
  }
  return cols
}

function checkPages(path, want) {
  const cols = describe(path)
  const lines = []
  for (const [name, e] of Object.entries(cols)) {
    const codec = [...e.codec].join(',')
    const pages = [...e.pages].sort().join('+')
    const enc = [...e.encodings].sort().join(',')
    lines.push(`  ${name}: ${codec}, ${pages}, ${enc}`)
    if (codec !== want.codec) throw new Error(`${path}: column ${name} has codec ${codec}`)
    if (!e.pages.has(want.page)) throw new Error(`${path}: column ${name} has pages ${pages}`)
    const key = name === 'observation.state.list.element' ? 'observation.state' : name
    if (want.encodings?.[key] && !e.encodings.has(want.encodings[key])) {
      throw new Error(`${path}: column ${name} asked for ${want.encodings[key]}, has ${enc}`)
    }
  }
  return lines.join('\n')
}

// --- the fixtures -----------------------------------------------------------------------------

const HYP_DELTA = {
  index: 'DELTA_BINARY_PACKED', episode_index: 'DELTA_BINARY_PACKED',
  frame_index: 'DELTA_BINARY_PACKED', ns: 'DELTA_BINARY_PACKED', offset: 'DELTA_BINARY_PACKED',
  timestamp: 'BYTE_STREAM_SPLIT', reward: 'BYTE_STREAM_SPLIT',
  'observation.state': 'BYTE_STREAM_SPLIT',
  task: 'DELTA_BYTE_ARRAY', path: 'DELTA_BYTE_ARRAY', note: 'DELTA_LENGTH_BYTE_ARRAY', done: 'RLE',
}
const HYP_SPLIT = {
  index: 'BYTE_STREAM_SPLIT', ns: 'BYTE_STREAM_SPLIT', offset: 'BYTE_STREAM_SPLIT',
  path: 'DELTA_LENGTH_BYTE_ARRAY', task: 'PLAIN', done: 'PLAIN',
}
const WASM_DELTA = {
  index: pw.Encoding.DELTA_BINARY_PACKED, episode_index: pw.Encoding.DELTA_BINARY_PACKED,
  frame_index: pw.Encoding.DELTA_BINARY_PACKED, ns: pw.Encoding.DELTA_BINARY_PACKED,
  offset: pw.Encoding.DELTA_BINARY_PACKED, timestamp: pw.Encoding.BYTE_STREAM_SPLIT,
  reward: pw.Encoding.BYTE_STREAM_SPLIT, task: pw.Encoding.DELTA_BYTE_ARRAY,
  path: pw.Encoding.DELTA_BYTE_ARRAY,
  note: pw.Encoding.DELTA_LENGTH_BYTE_ARRAY, done: pw.Encoding.RLE,
}
const WASM_SPLIT = {
  index: pw.Encoding.BYTE_STREAM_SPLIT, ns: pw.Encoding.BYTE_STREAM_SPLIT,
  offset: pw.Encoding.BYTE_STREAM_SPLIT, path: pw.Encoding.DELTA_LENGTH_BYTE_ARRAY,
}
const wasmNames = (enc) =>
  Object.fromEntries(Object.entries(enc).map(([k, v]) => [k, pw.Encoding[v]]))

const FIXTURES = [
  { file: 'hyparquet-v2-snappy.parquet', page: 'DATA_PAGE_V2', codec: 'SNAPPY',
    make: () => writeHyparquet('SNAPPY', {}) },
  { file: 'hyparquet-v2-delta-uncompressed.parquet', page: 'DATA_PAGE_V2', codec: 'UNCOMPRESSED',
    encodings: HYP_DELTA, make: () => writeHyparquet('UNCOMPRESSED', HYP_DELTA) },
  { file: 'hyparquet-v2-split-gzip.parquet', page: 'DATA_PAGE_V2', codec: 'GZIP',
    encodings: HYP_SPLIT, make: () => writeHyparquet('GZIP', HYP_SPLIT) },
  { file: 'hyparquet-v2-delta-zstd.parquet', page: 'DATA_PAGE_V2', codec: 'ZSTD',
    encodings: HYP_DELTA, make: () => writeHyparquet('ZSTD', HYP_DELTA) },
  { file: 'wasm-v1-delta-zstd.parquet', page: 'DATA_PAGE', codec: 'ZSTD',
    encodings: wasmNames(WASM_DELTA),
    make: () => writeWasm(pw.WriterVersion.V1, pw.Compression.ZSTD, false, WASM_DELTA) },
  { file: 'wasm-v1-plain-gzip.parquet', page: 'DATA_PAGE', codec: 'GZIP',
    make: () => writeWasm(pw.WriterVersion.V1, pw.Compression.GZIP, false, {}) },
  { file: 'wasm-v1-dict-lz4raw.parquet', page: 'DATA_PAGE', codec: 'LZ4_RAW',
    make: () => writeWasm(pw.WriterVersion.V1, pw.Compression.LZ4_RAW, true, {}) },
  { file: 'wasm-v2-dict-zstd.parquet', page: 'DATA_PAGE_V2', codec: 'ZSTD',
    make: () => writeWasm(pw.WriterVersion.V2, pw.Compression.ZSTD, true, {}) },
  { file: 'wasm-v2-delta-lz4raw.parquet', page: 'DATA_PAGE_V2', codec: 'LZ4_RAW',
    encodings: wasmNames(WASM_DELTA),
    make: () => writeWasm(pw.WriterVersion.V2, pw.Compression.LZ4_RAW, false, WASM_DELTA) },
  { file: 'wasm-v2-split-snappy.parquet', page: 'DATA_PAGE_V2', codec: 'SNAPPY',
    encodings: wasmNames(WASM_SPLIT),
    make: () => writeWasm(pw.WriterVersion.V2, pw.Compression.SNAPPY, false, WASM_SPLIT) },
  { file: 'wasm-v2-fallback-uncompressed.parquet', page: 'DATA_PAGE_V2', codec: 'UNCOMPRESSED',
    make: () => writeWasm(pw.WriterVersion.V2, pw.Compression.UNCOMPRESSED, false, {}) },
]

const outDir = process.argv[2]
if (!outDir) {
  process.stderr.write('usage: node make-fixtures.mjs OUT_DIR\n')
  process.exit(2)
}
mkdirSync(outDir, { recursive: true })
for (const fx of FIXTURES) {
  const path = join(outDir, fx.file)
  writeFileSync(path, new Uint8Array(fx.make()))
  await checkValues(path)
  const summary = checkPages(path, fx)
  process.stdout.write(`${fx.file}\n${summary}\n`)
}
