#!/usr/bin/env bash
# Checks scripts/make-lerobot-dataset.py: joined MP4s hold exactly their episodes' frames, packet for
# packet; originals have their lengths; the parquet files read back (with a second reader) as the
# manifest says, SNAPPY with v1 dictionary pages; info.json parses. Exit 77 (skip) without node/npm/ffmpeg.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
gen=$root/scripts/make-lerobot-dataset.py
helper=$root/scripts/lerobot-parquet/parquet.mjs
for tool in node npm ffmpeg ffprobe python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not installed (scripts/install-deps.sh)"
    exit 77
  fi
done

# The generator installs its parquet writer on first use; without the npm registry that is a skip.
if [[ ! -d $root/scripts/lerobot-parquet/node_modules ]] &&
   ! npm ci --silent --no-audit --no-fund --prefix "$root/scripts/lerobot-parquet"; then
  echo "SKIP: npm ci in scripts/lerobot-parquet failed (no registry?)"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# Bad arguments are refused with a message, not a traceback.
if python3 "$gen" "$tmp/bad" --episodes 2 --codec av1 --size 32x32 2>"$tmp/bad.err"; then
  fail "av1 at 32x32 was accepted"
fi
grep -q "64x64" "$tmp/bad.err" || fail "av1 size error does not say what is needed: $(cat "$tmp/bad.err")"

# h264: 5 episodes, 3 per file -> 2 files per camera; odd episodes end a frame short.
python3 "$gen" "$tmp/h264" --episodes 5 --cameras 2 --codec h264 --episodes-per-file 3 \
  --frames 12:30 --size 96x64 --short-to --seed 3
# av1: 4 episodes, 2 per file, one file per chunk -> chunk rollover; 2 encodes reused (fast repeat).
python3 "$gen" "$tmp/av1" --episodes 4 --cameras 2 --codec av1 --episodes-per-file 2 \
  --frames 8:16 --size 64x64 --chunks-size 1 --fast-repeat 2 --no-faststart --seed 4

for ds in h264 av1; do
  for kind in episodes:meta/episodes/chunk-000/file-000.parquet data:data/chunk-000/file-000.parquet \
              tasks:meta/tasks.parquet; do
    node "$helper" read "$tmp/$ds/${kind#*:}" >"$tmp/$ds.${kind%%:*}.rows.json"
    node "$helper" pages "$tmp/$ds/${kind#*:}" >"$tmp/$ds.${kind%%:*}.pages.json"
  done
done

python3 - "$tmp" <<'EOF'
import concurrent.futures, json, os, subprocess, sys, tempfile

tmp = sys.argv[1]
errors = []

def load(name):
    with open(os.path.join(tmp, name)) as f:
        return json.load(f)

def check(cond, msg):
    if not cond:
        errors.append(msg)

def probe(path):
    """(frame count and codec as ffprobe counts them, MD5 per packet, MD5 per decoded picture)."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                          "stream=nb_read_packets,codec_name", "-of", "json", path],
                         check=True, capture_output=True, text=True).stdout
    s = json.loads(out)["streams"][0]
    # One ffmpeg run, two outputs: packets as stored (stream copy) and decoded pictures.
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v", "-c", "copy", "-f", "framemd5",
                        f"{d}/p", "-map", "0:v", "-fps_mode", "passthrough", "-f", "framemd5", f"{d}/d"], check=True)
        h = [[l.split(",")[-1].strip() for l in open(f"{d}/{k}") if l.strip() and not l.startswith("#")]
             for k in ("p", "d")]
    # Presentation time of each decoded picture as the stream stores it (ffmpeg's framemd5 output
    # would re-quantize it to the encoder's time base).
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                          "-of", "csv=p=0", path], check=True, capture_output=True, text=True).stdout
    pts = [float(l.strip().rstrip(",")) for l in out.split()]
    return int(s["nb_read_packets"]), s["codec_name"], h[0], h[1], pts

paths = set()
for ds in ("h264", "av1"):
    man = load(ds + ".manifest.json")
    for cam in man["cameras"]:
        paths.update(os.path.join(tmp, ds, fi["path"]) for fi in man["files"][cam])
    paths.update(c["original"] for ep in man["episodes"] for c in ep["cameras"].values())
with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
    probed = dict(zip(sorted(paths), pool.map(probe, sorted(paths))))

def moov_first(path):
    with open(path, "rb") as f:
        head = f.read(64 * 1024)
    m, d = head.find(b"moov"), head.find(b"mdat")
    return m != -1 and (d == -1 or m < d)

for ds, codec, expect_files in (("h264", "h264", 2), ("av1", "av1", 2)):
    out = os.path.join(tmp, ds)
    man = load(ds + ".manifest.json")
    info = json.load(open(os.path.join(out, "meta/info.json")))
    n = len(man["episodes"])
    check(info["codebase_version"] == "v3.0", f"{ds}: codebase_version {info['codebase_version']}")
    check(info["total_episodes"] == n, f"{ds}: total_episodes {info['total_episodes']} != {n}")
    check(info["total_frames"] == sum(e["length"] for e in man["episodes"]), f"{ds}: total_frames")
    for cam in man["cameras"]:
        feat = info["features"].get(cam, {})
        check(feat.get("dtype") == "video" and feat["info"]["video.codec"] == codec, f"{ds}: feature {cam}: {feat}")
        check(len(man["files"][cam]) == expect_files, f"{ds}/{cam}: {len(man['files'][cam])} files")
        for fi in man["files"][cam]:
            path = os.path.join(out, fi["path"])
            want = info["video_path"].format(video_key=cam, chunk_index=fi["chunk_index"], file_index=fi["file_index"])
            check(fi["path"] == want, f"{ds}: {fi['path']} is not video_path {want}")
            got, cname, joined, joined_pics, pic_pts = probed[path]
            lens = [man["episodes"][e]["length"] for e in fi["episodes"]]
            check(got == sum(lens), f"{ds}: {fi['path']} has {got} frames, episodes sum to {sum(lens)}")
            check(cname == codec, f"{ds}: {fi['path']} codec {cname}")
            check(moov_first(path) == man["faststart"], f"{ds}: {fi['path']} faststart should be {man['faststart']}")
            # The join is a stream copy: the file's packets are the originals' packets, in order --
            # except that for H.264 the concat demuxer (auto_convert) puts SPS/PPS in band into the
            # first packet of each episode. Decoded pictures are identical for both codecs.
            origs = [man["episodes"][e]["cameras"][cam]["original"] for e in fi["episodes"]]
            orig = sum((probed[o][2] for o in origs), [])
            firsts = {sum(lens[:i]) for i in range(len(lens))} if codec == "h264" else set()
            check(len(joined) == len(orig) and all(a == b for i, (a, b) in enumerate(zip(joined, orig)) if i not in firsts),
                  f"{ds}: {fi['path']} packets differ from its episodes' originals")
            check(joined_pics == sum((probed[o][3] for o in origs), []),
                  f"{ds}: {fi['path']} decodes to other pictures than its episodes' originals")
            # Oracle for the timestamps: in the decoded joined file, the picture at from_timestamp is
            # the episode's first picture, and the episode's last picture lies before to_timestamp.
            first = 0
            for e in fi["episodes"]:
                c = man["episodes"][e]["cameras"][cam]
                last = first + c["frames"] - 1
                check(abs(pic_pts[first] - c["from_timestamp"]) < 2e-6,
                      f"{ds}: episode {e} starts at {pic_pts[first]} in {fi['path']}, from_timestamp {c['from_timestamp']}")
                if man["short_to"] and e % 2 == 1:  # a frame short: to_timestamp is the last picture's time
                    check(abs(pic_pts[last] - c["to_timestamp"]) < 1e-5,
                          f"{ds}: short episode {e}: last picture {pic_pts[last]}, to_timestamp {c['to_timestamp']}")
                else:
                    check(pic_pts[last] < c["to_timestamp"] - 1e-5,
                          f"{ds}: episode {e} last picture {pic_pts[last]} not before to_timestamp {c['to_timestamp']}")
                first = last + 1
            prev_to = None
            for e in fi["episodes"]:
                c = man["episodes"][e]["cameras"][cam]
                if prev_to is None:
                    check(c["from_timestamp"] == 0.0, f"{ds}: first episode {e} of {fi['path']} starts at {c['from_timestamp']}")
                else:
                    check(abs(c["from_timestamp"] - prev_to) < 0.5 / man["fps"],
                          f"{ds}: episode {e} starts at {c['from_timestamp']}, previous ends near {prev_to}")
                prev_to = c["from_timestamp"] + c["frames"] / man["fps"]
    for ep in man["episodes"]:
        for cam, c in ep["cameras"].items():
            got = probed[c["original"]][0]
            check(got == ep["length"], f"{ds}: original {c['original']} has {got} frames, length {ep['length']}")

    # Episodes parquet, read back by hyparquet, against the manifest.
    rows = load(f"{ds}.episodes.rows.json")["rows"]
    check(len(rows) == n, f"{ds}: episodes parquet has {len(rows)} rows")
    for row, ep in zip(rows, man["episodes"]):
        e = ep["episode_index"]
        check(row["episode_index"] == e and row["length"] == ep["length"], f"{ds}: row {e}: {row['episode_index']}, {row['length']}")
        check(row["tasks"] == [ep["task"]], f"{ds}: row {e} tasks {row['tasks']}")
        check((row["dataset_from_index"], row["dataset_to_index"]) == (ep["dataset_from_index"], ep["dataset_to_index"]),
              f"{ds}: row {e} dataset indexes")
        check(row["data/chunk_index"] == 0 and row["data/file_index"] == 0, f"{ds}: row {e} data location")
        for cam, c in ep["cameras"].items():
            k = f"videos/{cam}/"
            got = (row[k + "chunk_index"], row[k + "file_index"], row[k + "from_timestamp"], row[k + "to_timestamp"])
            want = (c["chunk_index"], c["file_index"], c["from_timestamp"], c["to_timestamp"])
            check(got == want, f"{ds}: row {e} {cam}: {got} != {want}")
            short = man["short_to"] and e % 2 == 1
            check(abs(c["to_timestamp"] - c["from_timestamp"] - (ep["length"] - short) / man["fps"]) < 1e-9,
                  f"{ds}: row {e} {cam} to_timestamp")
    drows = load(f"{ds}.data.rows.json")["rows"]
    check(len(drows) == info["total_frames"], f"{ds}: data parquet has {len(drows)} rows")
    want = [(ep["episode_index"], f, ep["dataset_from_index"] + f) for ep in man["episodes"] for f in range(ep["length"])]
    check([(r["episode_index"], r["frame_index"], r["index"]) for r in drows] == want, f"{ds}: data rows")
    tasks = load(f"{ds}.tasks.rows.json")["rows"]
    check([t["task_index"] for t in tasks] == list(range(len(tasks))) and len(tasks) >= 1, f"{ds}: tasks {tasks}")
    check(all(isinstance(t["__index_level_0__"], str) for t in tasks), f"{ds}: task texts {tasks}")

    # What is in the files: SNAPPY, v1 data pages, dictionary-encoded, OPTIONAL fields, 3-level tasks LIST.
    for kind in ("episodes", "data", "tasks"):
        pages = load(f"{ds}.{kind}.pages.json")
        for rg in pages["row_groups"]:
            for c in rg["columns"]:
                check(c["codec"] == "SNAPPY", f"{ds}/{kind}: {c['path']} codec {c['codec']}")
                types = [p["type"] for p in c["pages"]]
                check("DATA_PAGE_V2" not in types and "DATA_PAGE" in types, f"{ds}/{kind}: {c['path']} pages {types}")
                check(types[0] == "DICTIONARY_PAGE" and c["pages"][1]["encoding"] == "RLE_DICTIONARY",
                      f"{ds}/{kind}: {c['path']} not dictionary-encoded: {c['pages']}")
        top = [s for s in pages["schema"]]
        check(all(s["repetition"] in ("OPTIONAL", "REPEATED") for s in top), f"{ds}/{kind}: non-OPTIONAL field")
    sch = load(f"{ds}.episodes.pages.json")["schema"]
    i = [s["name"] for s in sch].index("tasks")
    check([(s["name"], s["repetition"], s["logical"]) for s in sch[i:i + 3]] ==
          [("tasks", "OPTIONAL", "LIST"), ("list", "REPEATED", None), ("element", "OPTIONAL", "STRING")],
          f"{ds}: tasks is not a 3-level LIST of strings: {sch[i:i + 3]}")

for e in errors:
    print("FAIL:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
echo "lerobot_generator_test: OK"
