#!/usr/bin/env python3
"""packfs benchmarks: contenders measured side by side in one run, reported as medians and ratios.

Benchmarks (--only NAME, repeatable): epoch (every file of a 30,000-file set once in random
order, cold), small (small-file random reads of a tenth of the set), large (fio through the
mount vs raw), midsize (files of 1-8 MiB read whole in random order, cold, 32 KiB and 1 MiB
reads: loose vs raw pread vs packfs and its read-ahead and CRC settings), mount (mount start
and RSS vs member count), pack (writing and checking), video (ffprobe / ffmpeg through the
mount), lerobot (per-episode MP4s of a
LeRobot v3 dataset: read speed vs the episodes' own files, open latency, mount start), remote
(an http:// pack set behind a loopback proxy adding 20 ms a request: packfs vs raw ranged GETs
and curl, its disk cache vs a local mount, its memory), scale (mounting a remote set of 10 and
of 100,000 shards behind 20 ms: time to the first stat, requests), shared (shared storage:
loose files on sshfs vs packfs over sshfs vs raw pread, rclone mount of an http server vs packfs
of its URL vs raw GETs, at 1-5 ms a request, with the requests each sends per file).
Writes bench/results/<date>.json, <date>.md and PNG charts.
This machine is shared and noisy: compare contenders within one run, never across runs.

Exit status 1 when a benchmark broke (an exception, wrong bytes, packfs failing to mount or read),
never because something is slow: `bench/run.sh --quick` is the CI smoke test.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

from common import ROOT, Broken, Dataset, can_drop_caches, machine_info, uring_switch
from bench_epoch import bench_epoch
from bench_large import bench_large
from bench_lerobot import bench_lerobot
from bench_midsize import bench_midsize
from bench_mount import bench_mount
from bench_pack import bench_pack
from bench_remote import bench_remote
from bench_scale import bench_scale
from bench_shared import bench_shared
from bench_small import bench_small
from bench_video import bench_video
import report

BENCHES = {"pack": bench_pack, "small": bench_small, "epoch": bench_epoch, "large": bench_large,
           "midsize": bench_midsize, "mount": bench_mount, "video": bench_video,
           "lerobot": bench_lerobot, "remote": bench_remote, "scale": bench_scale,
           "shared": bench_shared}
ORDER = ["epoch", "small", "large", "midsize", "mount", "pack", "video", "lerobot", "remote",
         "scale", "shared"]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="a few thousand files, small sets, 8 threads, 1 repeat: about a "
                    "minute (the CI smoke test: checks bytes, asserts nothing about speed)")
    ap.add_argument("--only", action="append", choices=sorted(BENCHES), help="run only NAME")
    ap.add_argument("--workdir", help="where data is generated and kept (default: a temporary "
                    "directory under /var/tmp, removed at the end)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"), help="results dir")
    ap.add_argument("--files", type=int, default=100000, help="small files in the data set")
    ap.add_argument("--size-min", type=int, default=4096)
    ap.add_argument("--size-max", type=int, default=32768)
    ap.add_argument("--sample", type=int, default=10000,
                    help="files read per small-file pass (cold repeat r reads slice r of the "
                    "shuffled order)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 8])
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each figure (--quick: 1)")
    ap.add_argument("--warm-repeat", type=int, default=7,
                    help="small: runs of each warm figure (a warm pass takes about 0.1 s, so "
                    "its median needs more of them; --quick: 1)")
    ap.add_argument("--budget", type=float, default=3,
                    help="seconds a read pass may take; a slower pass stops there and its rate "
                    "is recorded as 'too slow: X files in Y s'")
    ap.add_argument("--slow-budget", type=float, default=1.5,
                    help="seconds for each later pass of a contender that was already too slow")
    ap.add_argument("--epoch-files", type=int, default=30000,
                    help="epoch: files read once each in random order (the first ones of the "
                    "data set, whole directories)")
    ap.add_argument("--epoch-threads", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--epoch-memory", type=int, default=0,
                    help="epoch: bytes of memory (cgroup) for the second epoch, on a set that does "
                    "not fit (default: a quarter of the set plus 48 MiB)")
    ap.add_argument("--epoch-budget", type=float, default=60,
                    help="epoch: seconds a pass may take")
    ap.add_argument("--mount-budget", type=float, default=60, help="seconds a mount may take")
    ap.add_argument("--find-budget", type=float, default=20,
                    help="seconds `find MNT | wc -l` may take in the mount benchmark")
    ap.add_argument("--members", type=int, nargs="+", default=[10000, 100000, 1000000],
                    help="member counts for the mount-start benchmark")
    ap.add_argument("--pack-files", type=int, default=30000,
                    help="how many of the small files the writing benchmark packs (whole "
                    "directories of 1000)")
    ap.add_argument("--large-mib", type=int, default=1024, help="size of the large member")
    ap.add_argument("--fio-runtime", type=int, default=3, help="seconds per random-read job")
    ap.add_argument("--mid-files", type=int, default=150,
                    help="midsize: files of 1-8 MiB (quick: 256 KiB-1 MiB)")
    ap.add_argument("--video-s", type=int, default=30, help="length of the test clip")
    ap.add_argument("--remote-files", type=int, default=2000,
                    help="remote: small files of 64-256 KiB served over http")
    ap.add_argument("--remote-large-mib", type=int, default=256,
                    help="remote: size of the member read sequentially")
    ap.add_argument("--remote-delay-ms", type=float, default=20,
                    help="remote: delay the proxy adds to every request")
    ap.add_argument("--remote-budget", type=float, default=30,
                    help="remote: seconds a read pass may take")
    ap.add_argument("--remote-cache-size", default="64M",
                    help="remote: packfs --cache-size (when packfs has it)")
    ap.add_argument("--remote-disk-cache-size", default="2G",
                    help="remote: packfs --disk-cache-size (when packfs has it)")
    ap.add_argument("--scale-shards", type=int, default=100000,
                    help="scale: shards of the large remote set (the small one has 10)")
    ap.add_argument("--scale-members", type=int, default=10000000,
                    help="scale: members of the large local set")
    ap.add_argument("--scale-member-shards", type=int, default=100000,
                    help="scale: shards of the large local set")
    ap.add_argument("--scale-remote-members", type=int, default=1000000,
                    help="scale: members of the remote set whose catalog is read in place")
    ap.add_argument("--scale-delay-ms", type=float, default=20,
                    help="scale: delay the proxy adds to each request to nginx")
    ap.add_argument("--shared-files", type=int, default=3000,
                    help="shared: small files (1000 a directory) on sshfs and http")
    ap.add_argument("--shared-sample", type=int, default=1000,
                    help="shared: files a random pass reads (repeat r reads slice r)")
    ap.add_argument("--shared-delays-ms", type=float, nargs="+", default=[1, 5],
                    help="shared: delays the proxy adds to each request to sshd")
    ap.add_argument("--shared-groups", nargs="+", choices=["sshfs", "loader", "http"],
                    default=["sshfs", "loader", "http"],
                    help="shared: which groups to run (the loader's sshfs part needs sshfs)")
    ap.add_argument("--shared-http-delay-ms", type=float, default=5,
                    help="shared: delay the proxy adds to each request to nginx")
    ap.add_argument("--shared-budget", type=float, default=20,
                    help="shared: seconds a pass may take")
    ap.add_argument("--shared-slow-budget", type=float, default=8,
                    help="shared: seconds for each later pass of a contender already too slow")
    ap.add_argument("--shared-loader", choices=("auto", "off"), default="auto",
                    help="shared: one torchvision DataLoader epoch over JPEGs (full runs only; "
                    "auto installs python3-torchvision for /usr/bin/python3 when missing)")
    ap.add_argument("--shared-images", type=int, default=1000,
                    help="shared: JPEGs of 50-200 KiB for the DataLoader epoch")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    if args.quick:
        args.files = min(args.files, 3000)
        args.pack_files = min(args.pack_files, 1000)
        args.sample = min(args.sample, 300)
        args.repeat = 1
        args.warm_repeat = 1
        args.threads = [t for t in args.threads if t == 8] or args.threads
        args.epoch_files = min(args.epoch_files, 3000)
        args.epoch_threads = [8]
        args.epoch_budget = min(args.epoch_budget, 10)
        args.budget = min(args.budget, 1)
        args.slow_budget = min(args.slow_budget, 0.3)
        args.mount_budget = min(args.mount_budget, 10)
        args.find_budget = min(args.find_budget, 10)
        args.members = [m for m in args.members if m <= 10000] or [10000]
        args.large_mib = min(args.large_mib, 64)
        args.fio_runtime = 1
        args.mid_files = min(args.mid_files, 6)
        args.video_s = min(args.video_s, 2)
        args.remote_files = min(args.remote_files, 150)
        args.remote_large_mib = min(args.remote_large_mib, 16)
        args.remote_budget = min(args.remote_budget, 3)
        args.scale_shards = min(args.scale_shards, 300)
        args.scale_members = min(args.scale_members, 3000)
        args.scale_member_shards = min(args.scale_member_shards, 30)
        # Just past the 1 MiB download limit: read in place.
        args.scale_remote_members = min(args.scale_remote_members, 30000)
        args.shared_files = min(args.shared_files, 300)
        args.shared_sample = min(args.shared_sample, 150)
        args.shared_delays_ms = args.shared_delays_ms[:1]
        args.shared_budget = min(args.shared_budget, 5)
        args.shared_slow_budget = min(args.shared_slow_budget, 2)
        args.shared_loader = "off"
    return args


def main():
    args = parse_args()
    if not can_drop_caches():
        print("WARNING: cannot write /proc/sys/vm/drop_caches (not root?): cold runs are not cold",
              file=sys.stderr)
    work = args.workdir or tempfile.mkdtemp(prefix="packfs-bench-", dir="/var/tmp")
    os.makedirs(work, exist_ok=True)
    work = os.path.abspath(work)
    started = datetime.datetime.now()
    meta = {"date": started.strftime("%Y-%m-%d %H:%M"), "argv": sys.argv[1:],
            "command": "bench/run.sh " + " ".join(sys.argv[1:]),
            "git": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                                  capture_output=True, text=True).stdout.strip(),
            "machine": machine_info(),
            "params": {k: v for k, v in vars(args).items() if k not in ("build", "out", "workdir")}}
    rows, failed, broken = [], [], []
    ds = Dataset(args, work)
    t0 = time.perf_counter()
    # Mounts serve through /dev/fuse as on a kernel with its default enable_uring=N, whatever
    # this machine was left with; the `-o io_uring` contenders turn it on for their benchmark.
    try:
        with uring_switch("N"):
            for name in [b for b in ORDER if b in (args.only or ORDER)]:
                tb = time.perf_counter()
                # When a run is cut short (CI's watchdog), this says which pass it was in.
                print(f"== {name} [{tb - t0:.0f} s]", flush=True)
                try:
                    BENCHES[name](args, work, ds, rows)
                except Broken as e:
                    print(f"BROKEN: {e}", file=sys.stderr, flush=True)
                    failed.append(name)
                    broken.append(str(e))
                except Exception as e:  # one broken benchmark must not lose the others' results
                    traceback.print_exc()
                    failed.append(name)
                    broken.append(f"{name}: {type(e).__name__}: {e}")
                meta.setdefault("bench_seconds", {})[name] = round(time.perf_counter() - tb, 1)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    meta["seconds"] = round(time.perf_counter() - t0, 1)
    meta["machine"]["loadavg_end"] = os.getloadavg()
    meta["failed"] = failed
    meta["broken"] = broken
    meta["data_seconds"] = ds.timings
    os.makedirs(args.out, exist_ok=True)
    stamp = started.strftime("%Y-%m-%d-%H%M") + ("-quick" if args.quick else "")
    path = os.path.join(args.out, stamp + ".json")
    with open(path, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    md = report.write(path)
    print(f"results: {path}\nsummary: {md}\n({meta['seconds']:.0f} s: " + ", ".join(
        f"{k} {v:.0f} s" for k, v in meta["bench_seconds"].items()) + ")")
    for why in broken:
        print(f"BROKEN: {why}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
