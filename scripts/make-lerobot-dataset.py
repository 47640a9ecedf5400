#!/usr/bin/env python3
"""Generates a synthetic LeRobot v3.0 dataset (multi-episode MP4s + parquet metadata) for tests and benchmarks.

Does with ffmpeg what LeRobot does: every episode of every camera is encoded on its own from a
deterministic synthetic source, then the episodes of a camera are joined K per file with the concat
demuxer (`-c copy -movflags faststart`). The per-episode encodes are kept outside the dataset in
OUT.originals/<camera>/episode_XXXXXX.mp4 as the oracle a v2.1-style per-episode view is compared to,
and OUT.manifest.json says for every episode and camera where it came from and where it landed.

Parquet files are written by scripts/lerobot-parquet (Node.js, parquet-wasm): SNAPPY, DATA_PAGE v1,
dictionary-encoded, OPTIONAL columns, `tasks` as a 3-level LIST of strings -- what pyarrow writes.

Usage:
  scripts/make-lerobot-dataset.py OUT --episodes 5 --cameras 2 --codec h264 --episodes-per-file 3
      [--frames 20:40] [--size 160x120] [--fps 30] [--seed 1] [--no-faststart] [--short-to]
      [--fast-repeat M] [--chunks-size 1000] [--tasks 2] [--jobs 2]
"""

import argparse
import concurrent.futures
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PARQUET_HELPER_DIR = os.path.join(HERE, "lerobot-parquet")
CAMERA_NAMES = ["observation.images.front", "observation.images.top", "observation.images.wrist"]
MOTORS = ["shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos", "wrist_flex.pos", "wrist_roll.pos",
          "gripper.pos"]
TASK_TEXTS = ["Pick the orange cube and place it in the box", "Push the blue block to the left",
              "Stack the red cup on the green cup", "Open the drawer", "Wipe the table"]


class GenError(Exception):
    pass


def run(cmd, what):
    """Runs a command; a failure names what was being made and shows the tool's own message."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise GenError(f"{what}: {cmd[0]} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def camera_names(n):
    if n < 1:
        raise GenError("--cameras must be at least 1")
    return [CAMERA_NAMES[i] if i < len(CAMERA_NAMES) else f"observation.images.cam{i}" for i in range(n)]


def encoder_args(codec):
    # The settings LeRobot's encode_video_frames uses for each codec (crf/preset keep it fast).
    if codec == "av1":
        return ["-c:v", "libsvtav1", "-g", "2", "-crf", "30", "-preset", "12", "-pix_fmt", "yuv420p"]
    return ["-c:v", "libx264", "-g", "30", "-bf", "2", "-crf", "23", "-preset", "veryfast", "-pix_fmt", "yuv420p"]


def source_filter(cam_idx, episode, size, fps):
    """A deterministic synthetic picture that differs per camera and per episode.

    Cameras alternate testsrc2 and mandelbrot; episodes start at a different frame of the source and
    get a different hue, so no two episode encodes are byte-identical and a wrong slice shows.
    """
    start = (episode * 7) % 90
    hue = (episode * 37) % 360
    src = f"testsrc2=s={size}:r={fps}" if cam_idx % 2 == 0 else f"mandelbrot=s={size}:r={fps}"
    return f"{src},trim=start_frame={start},setpts=PTS-STARTPTS,hue=h={hue}"


def encode_episode(out_path, cam_idx, episode, length, args):
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
           "-i", source_filter(cam_idx, episode, args.size, args.fps),
           "-frames:v", str(length), "-r", str(args.fps)] + encoder_args(args.codec) + [
           "-an", "-movflags", "+faststart", out_path]
    run(cmd, f"encoding {out_path}")


def concat_files(inputs, out_path, faststart, workdir):
    """Joins episode MP4s exactly like LeRobot: concat demuxer, stream copy, optional faststart."""
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    fd, list_path = tempfile.mkstemp(suffix=".txt", dir=workdir)
    with os.fdopen(fd, "w") as f:
        for p in inputs:
            escaped = os.path.abspath(p).replace("'", "'\\''")
            f.write(f"file '{escaped}'\n")
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", list_path, "-c", "copy"]
    if faststart:
        cmd += ["-movflags", "faststart"]
    run(cmd + [out_path], f"joining {len(inputs)} episodes into {out_path}")
    os.unlink(list_path)


def packet_pts(path):
    """Presentation timestamps (seconds) of the video packets of `path`, in file (decode) order."""
    out = run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time",
               "-of", "csv=p=0", path], f"probing {path}")
    pts = []
    for line in out.split():
        line = line.strip().rstrip(",")
        if line and line != "N/A":
            pts.append(float(line))
    return pts


def count_frames(path):
    out = run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
               "stream=nb_read_packets", "-of", "csv=p=0", path], f"counting frames of {path}")
    return int(out.strip().rstrip(","))


def segment_starts(joined_path, lengths):
    """from_timestamp of each episode in a joined file, from the joined file's own packets.

    The concat demuxer shifts each input by the durations of the inputs before it, as it measured
    them; the earliest presentation time among an episode's packets is where that episode begins.
    Packets of one input stay contiguous in the output, so the k-th run of `lengths[k]` packets is
    the k-th episode.
    """
    pts = packet_pts(joined_path)
    if len(pts) != sum(lengths):
        raise GenError(f"{joined_path}: {len(pts)} video packets, expected {sum(lengths)} "
                       f"(episodes of {lengths} frames)")
    starts, pos = [], 0
    for n in lengths:
        starts.append(min(pts[pos:pos + n]))
        pos += n
    return starts


def ensure_parquet_helper():
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise GenError("node and npm are needed to write parquet files; run scripts/install-deps.sh")
    if not os.path.isdir(os.path.join(PARQUET_HELPER_DIR, "node_modules")):
        run(["npm", "ci", "--silent", "--no-audit", "--no-fund", "--prefix", PARQUET_HELPER_DIR],
            f"installing the parquet writer in {PARQUET_HELPER_DIR} (npm ci)")


def write_parquet(spec, workdir):
    spec_path = os.path.join(workdir, "parquet-spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    run(["node", os.path.join(PARQUET_HELPER_DIR, "parquet.mjs"), "write", spec_path], "writing parquet files")


def col(name, typ, values):
    return {"name": name, "type": typ, "values": values}


def stats_columns(feature, values, int_minmax):
    """LeRobot's per-episode stats columns for one scalar feature (lists of one value)."""
    n = len(values)
    mean = sum(values) / n
    std = (sum((v - mean) ** 2 for v in values) / n) ** 0.5
    mm = "list<int64>" if int_minmax else "list<double>"
    return [col(f"stats/{feature}/min", mm, [min(values)]), col(f"stats/{feature}/max", mm, [max(values)]),
            col(f"stats/{feature}/mean", "list<double>", [mean]), col(f"stats/{feature}/std", "list<double>", [std]),
            col(f"stats/{feature}/count", "list<int64>", [n])]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--episodes", type=int, required=True)
    p.add_argument("--cameras", type=int, default=2)
    p.add_argument("--codec", choices=["av1", "h264"], default="av1")
    p.add_argument("--episodes-per-file", type=int, default=1000, metavar="K")
    p.add_argument("--frames", default="20:40", metavar="MIN:MAX", help="episode length range (frames)")
    p.add_argument("--size", default="160x120")
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-faststart", action="store_true", help="join without -movflags faststart")
    p.add_argument("--short-to", action="store_true",
                   help="odd episodes get to_timestamp one frame period short, as some real datasets have")
    p.add_argument("--fast-repeat", type=int, default=0, metavar="M",
                   help="encode only M distinct episodes per camera and reuse them for the rest")
    p.add_argument("--chunks-size", type=int, default=1000, help="files per chunk directory (info.json)")
    p.add_argument("--tasks", type=int, default=2, help="number of distinct tasks")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = p.parse_args(argv)
    try:
        lo, hi = (int(x) for x in args.frames.split(":"))
        w, h = (int(x) for x in args.size.split("x"))
    except ValueError:
        p.error("--frames wants MIN:MAX and --size wants WxH (integers)")
    if not (1 <= lo <= hi):
        p.error("--frames: need 1 <= MIN <= MAX")
    if args.episodes < 1 or args.episodes_per_file < 1 or args.chunks_size < 1 or args.fps < 1:
        p.error("--episodes, --episodes-per-file, --chunks-size and --fps must be positive")
    if args.codec == "av1" and (w < 64 or h < 64):
        p.error("--codec av1: SVT-AV1 needs a picture of at least 64x64; use a larger --size or h264")
    if not 1 <= args.tasks <= len(TASK_TEXTS):
        p.error(f"--tasks must be 1..{len(TASK_TEXTS)}")
    args.frames_range = (lo, hi)
    args.width, args.height = w, h
    return args


def generate(args):
    t0 = time.monotonic()
    out = os.path.abspath(args.out.rstrip("/"))
    originals = out + ".originals"
    manifest_path = out + ".manifest.json"
    for p in (out, originals):
        if os.path.exists(p):
            shutil.rmtree(p)
    os.makedirs(out)
    ensure_parquet_helper()
    cams = camera_names(args.cameras)
    rng = random.Random(args.seed)
    n = args.episodes
    distinct = min(args.fast_repeat, n) if args.fast_repeat > 0 else n
    template_len = [rng.randint(*args.frames_range) for _ in range(distinct)]
    lengths = [template_len[e % distinct] for e in range(n)]
    fps = args.fps

    # 1. Encode each distinct episode of each camera on its own (in parallel), then give every
    #    episode its OUT.originals path (hard links to the template under --fast-repeat).
    def orig_path(cam, e):
        return os.path.join(originals, cam, f"episode_{e:06d}.mp4")

    jobs = [(ci, cam, e) for ci, cam in enumerate(cams) for e in range(distinct)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(lambda j: encode_episode(orig_path(j[1], j[2]), j[0], j[2], lengths[j[2]], args), jobs))
    for cam in cams:
        for e in range(distinct, n):
            os.link(orig_path(cam, e % distinct), orig_path(cam, e))
    t_encode = time.monotonic() - t0

    # 2. Place episodes into files: K per file, file index rolling into the next chunk.
    placements = []  # (chunk, file, [episodes])
    for start in range(0, n, args.episodes_per_file):
        idx = len(placements)
        placements.append((idx // args.chunks_size, idx % args.chunks_size,
                           list(range(start, min(n, start + args.episodes_per_file)))))

    def video_rel(cam, chunk, file):
        return f"videos/{cam}/chunk-{chunk:03d}/file-{file:03d}.mp4"

    # 3. Join and measure where each episode starts in its joined file.
    workdir = tempfile.mkdtemp(prefix="lerobot-gen-")
    starts = {}  # (cam, episode) -> from_timestamp

    def join(job):
        cam, (chunk, file, eps) = job
        path = os.path.join(out, video_rel(cam, chunk, file))
        concat_files([orig_path(cam, e) for e in eps], path, not args.no_faststart, workdir)
        return cam, eps, segment_starts(path, [lengths[e] for e in eps])

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for cam, eps, st in pool.map(join, [(c, pl) for c in cams for pl in placements]):
            for e, s in zip(eps, st):
                starts[(cam, e)] = s
    t_join = time.monotonic() - t0 - t_encode

    # 4. Metadata.
    where = {}
    for chunk, file, eps in placements:
        for e in eps:
            where[e] = (chunk, file)
    ep_from = [0] * n
    for e in range(1, n):
        ep_from[e] = ep_from[e - 1] + lengths[e - 1]
    task_of = [e % args.tasks for e in range(n)]
    total_frames = sum(lengths)

    def to_ts(cam, e):
        short = args.short_to and e % 2 == 1
        return starts[(cam, e)] + (lengths[e] - (1 if short else 0)) / fps

    ep_cols = [col("episode_index", "int64", list(range(n))),
               col("tasks", "list<string>", [[TASK_TEXTS[task_of[e]]] for e in range(n)]),
               col("length", "int64", lengths),
               col("data/chunk_index", "int64", [0] * n),
               col("data/file_index", "int64", [0] * n),
               col("dataset_from_index", "int64", ep_from),
               col("dataset_to_index", "int64", [ep_from[e] + lengths[e] for e in range(n)])]
    for cam in cams:
        ep_cols += [col(f"videos/{cam}/chunk_index", "int64", [where[e][0] for e in range(n)]),
                    col(f"videos/{cam}/file_index", "int64", [where[e][1] for e in range(n)]),
                    col(f"videos/{cam}/from_timestamp", "double", [starts[(cam, e)] for e in range(n)]),
                    col(f"videos/{cam}/to_timestamp", "double", [to_ts(cam, e) for e in range(n)])]
    # A few of LeRobot's stats columns, so readers meet nested lists they must skip.
    per_ep_stats = [stats_columns("timestamp", [f / fps for f in range(lengths[e])], False) +
                    stats_columns("frame_index", list(range(lengths[e])), True) +
                    stats_columns("episode_index", [e] * lengths[e], True) for e in range(n)]
    for i in range(len(per_ep_stats[0])):
        c0 = per_ep_stats[0][i]
        ep_cols.append(col(c0["name"], c0["type"], [per_ep_stats[e][i]["values"] for e in range(n)]))
    for ci, cam in enumerate(cams):
        for stat, base in (("min", 0.0), ("max", 1.0), ("mean", 0.5), ("std", 0.2)):
            ep_cols.append(col(f"stats/{cam}/{stat}", "list3<double>",
                               [[[[base + 0.01 * ((e + ch + ci) % 7)]] for ch in range(3)] for e in range(n)]))
        ep_cols.append(col(f"stats/{cam}/count", "list<int64>", [[min(100, lengths[e])] for e in range(n)]))
    ep_cols += [col("meta/episodes/chunk_index", "int64", [0] * n), col("meta/episodes/file_index", "int64", [0] * n)]

    frame_ep = [e for e in range(n) for _ in range(lengths[e])]
    frame_idx = [f for e in range(n) for f in range(lengths[e])]
    data_cols = [col("action", "list<float>", [[round(((i * 7 + j * 13) % 200) - 100.0, 3) for j in range(6)]
                                               for i in range(total_frames)]),
                 col("observation.state", "list<float>", [[round(((i * 5 + j * 11) % 200) - 100.0, 3)
                                                           for j in range(6)] for i in range(total_frames)]),
                 col("timestamp", "float", [f / fps for f in frame_idx]),
                 col("frame_index", "int64", frame_idx),
                 col("episode_index", "int64", frame_ep),
                 col("index", "int64", list(range(total_frames))),
                 col("task_index", "int64", [task_of[e] for e in frame_ep])]
    task_cols = [col("task_index", "int64", list(range(args.tasks))),
                 col("__index_level_0__", "string", TASK_TEXTS[:args.tasks])]
    t_meta = time.monotonic()
    write_parquet({"files": [
        {"path": os.path.join(out, "meta/episodes/chunk-000/file-000.parquet"), "columns": ep_cols},
        {"path": os.path.join(out, "data/chunk-000/file-000.parquet"), "columns": data_cols},
        {"path": os.path.join(out, "meta/tasks.parquet"), "columns": task_cols},
    ]}, workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    t_parquet = time.monotonic() - t_meta

    def scalar(dtype):
        return {"dtype": dtype, "shape": [1], "names": None}

    features = {"action": {"dtype": "float32", "names": MOTORS, "shape": [6]},
                "observation.state": {"dtype": "float32", "names": MOTORS, "shape": [6]}}
    for cam in cams:
        features[cam] = {"dtype": "video", "shape": [args.height, args.width, 3],
                         "names": ["height", "width", "channels"],
                         "info": {"video.height": args.height, "video.width": args.width,
                                  "video.codec": args.codec, "video.pix_fmt": "yuv420p",
                                  "video.is_depth_map": False, "video.fps": fps, "video.channels": 3,
                                  "has_audio": False}}
    features.update({"timestamp": scalar("float32"), "frame_index": scalar("int64"),
                     "episode_index": scalar("int64"), "index": scalar("int64"), "task_index": scalar("int64")})
    info = {"codebase_version": "v3.0", "robot_type": "synthetic", "total_episodes": n,
            "total_frames": total_frames, "total_tasks": args.tasks, "chunks_size": args.chunks_size,
            "data_files_size_in_mb": 100, "video_files_size_in_mb": 500, "fps": fps,
            "splits": {"train": f"0:{n}"},
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
            "features": features}
    with open(os.path.join(out, "meta/info.json"), "w") as f:
        json.dump(info, f, indent=4)

    manifest = {"dataset": out, "originals": originals, "codec": args.codec, "fps": fps,
                "cameras": cams, "episodes_per_file": args.episodes_per_file, "chunks_size": args.chunks_size,
                "faststart": not args.no_faststart, "short_to": args.short_to,
                "distinct_encodes": distinct,
                "files": {cam: [{"path": video_rel(cam, c, f), "chunk_index": c, "file_index": f, "episodes": eps,
                                 "frames": sum(lengths[e] for e in eps)} for c, f, eps in placements]
                          for cam in cams},
                "episodes": []}
    for e in range(n):
        chunk, file = where[e]
        manifest["episodes"].append({
            "episode_index": e, "length": lengths[e], "task": TASK_TEXTS[task_of[e]],
            "dataset_from_index": ep_from[e], "dataset_to_index": ep_from[e] + lengths[e],
            "cameras": {cam: {"original": orig_path(cam, e), "encoded_from": orig_path(cam, e % distinct),
                              "frames": lengths[e], "from_timestamp": starts[(cam, e)],
                              "to_timestamp": to_ts(cam, e), "chunk_index": chunk, "file_index": file,
                              "video": video_rel(cam, chunk, file)} for cam in cams}})
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
    total = time.monotonic() - t0
    print(f"make-lerobot-dataset: {n} episodes x {len(cams)} cameras ({args.codec}, {distinct} distinct encodes), "
          f"{len(placements)} files per camera, {total_frames} frames; encode {t_encode:.1f}s, "
          f"join {t_join:.1f}s, parquet {t_parquet:.1f}s, total {total:.1f}s -> {out}", file=sys.stderr)


def main(argv):
    args = parse_args(argv)
    try:
        generate(args)
    except GenError as e:
        print(f"make-lerobot-dataset: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
