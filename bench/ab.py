#!/usr/bin/env python3
"""A/B of packfs builds or mount options on the epoch set, by hand: interleaved passes, each a
fresh mount after dropped caches, reporting the median files/s, CPU per file and requests per file
of every variant. What bench/FINDINGS.md means by "N interleaved rounds by hand".

    bench/ab.py [--workdir DIR] [--build DIR] [--rounds N] [--threads 8,2] [--scan]
                [--list FILE] [--split K] [--timeline MS] [--cached] VARIANT...

VARIANT is NAME=[BINARY][:OPTIONS][:ENV=VALUE,...]: the packfs binary (default: --build's), -o
options added to -o noio_uring (the /dev/fuse path; io_uring instead takes the ring, where the
fuse module's enable_uring is on) and environment for the daemon. E.g. `bench/ab.py
base=/tmp/packfs-old new= nowalk=:nowalk ring=:io_uring`.

The set and its lists come from `bench/run.sh --only epoch --workdir DIR` (DIR/ds/media, the
pack set; DIR/lists/epoch-path-0.txt, its first shuffled order); --list picks another list of
paths relative to the set's root (e.g. the first 3,000 lines of one: a pass over a tenth). Each
round runs every variant once for each thread count, in an order that alternates between rounds.
CPU per file is the machine's busy time (/proc/stat: all but idle and iowait) over the pass,
divided by the files read: readers and daemon together, the scan included with --scan.
Root only (drops caches); leaves nothing mounted.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from bench_epoch import read_whole
from common import busy_cpu_s, can_drop_caches, drop_caches, is_mounted, packfs_stats, unmount


def parse_variant(text, build):
    name, _, rest = text.partition("=")
    binary, _, rest = rest.partition(":")
    opts, _, env = rest.partition(":")
    pairs = [kv.split("=", 1) for kv in env.split(",") if kv]
    if not name or any(len(kv) != 2 for kv in pairs):
        sys.exit(f"ab.py: variant {text!r}: want NAME=[BINARY][:OPTIONS][:ENV=VALUE,...]")
    return name, binary or os.path.join(build, "packfs"), opts, dict(pairs)


def one_pass(args, variant, threads, mnt):
    name, binary, opts, extra = variant
    unmount(mnt)
    drop_caches()
    if args.cached:  # the mount's own limit: no disk read in the pass
        media = os.path.join(args.workdir, "ds", "media")
        for shard in sorted(os.listdir(media)):
            if shard.endswith(".zip"):
                read_whole(os.path.join(media, shard))
    # /dev/fuse unless the variant asks for the ring (which needs enable_uring=Y).
    o = ",".join(x for x in [("" if "io_uring" in opts.split(",") else "noio_uring"), opts] if x)
    subprocess.run([binary] + (["-o", o] if o else []) + [os.path.join(args.workdir, "ds", "media"),
                                                          mnt],
                   check=True, env=dict(os.environ, **extra))
    while not is_mounted(mnt):
        time.sleep(0.01)
    try:
        before = packfs_stats(mnt) or {}
        cmd = [os.path.join(args.build, "readfiles"), "--root", mnt, "--list", args.list,
               "--threads", str(threads), "--budget", "60"]
        if args.scan:
            cmd.append("--scan")
        if args.split:
            cmd += ["--split", str(args.split)]
        if args.timeline:
            cmd += ["--timeline", str(args.timeline)]
        t0 = busy_cpu_s()
        res = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        cpu_s = busy_cpu_s() - t0
        after = packfs_stats(mnt) or {}
    finally:
        unmount(mnt)
    n = max(1, res["files"])
    req = lambda k: (after.get("requests", {}).get(k, 0)  # noqa: E731
                     - before.get("requests", {}).get(k, 0)) / n
    return {"files_per_s": res["files_per_s"], "errors": res["errors"],
            "cpu_us": cpu_s * 1e6 / n,
            "read": req("read"), "lookup": req("lookup"),
            "ring": after.get("io_uring", {}).get("requests", 0)
            - before.get("io_uring", {}).get("requests", 0) > 0,
            "split": (res["split_files"] / res["split_seconds"]
                      if res.get("split_seconds", -1) > 0 else None),
            "rest": ((res["files"] - res["split_files"]) / (res["seconds"] - res["split_seconds"])
                     if 0 < res.get("split_seconds", -1) < res["seconds"] else None),
            "timeline": res.get("timeline", [])}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default="/var/tmp/pb")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(here), "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="8,2")
    ap.add_argument("--scan", action="store_true", help="list every directory first")
    ap.add_argument("--cached", action="store_true",
                    help="read the shards into the page cache before each pass")
    ap.add_argument("--list", help="paths to read (default: WORKDIR/lists/epoch-path-0.txt)")
    ap.add_argument("--split", type=int, default=0, help="also time the first K files apart")
    ap.add_argument("--timeline", type=int, default=0, metavar="MS",
                    help="also print the files read in every MS milliseconds of each pass")
    ap.add_argument("variants", nargs="+")
    args = ap.parse_args()
    args.list = args.list or os.path.join(args.workdir, "lists", "epoch-path-0.txt")
    if not os.path.exists(os.path.join(args.workdir, "ds", "media")) or \
            not os.path.exists(args.list):
        sys.exit(f"ab.py: no epoch set in {args.workdir} (run bench/run.sh --only epoch "
                 f"--workdir {args.workdir} first) or no list {args.list}")
    if not can_drop_caches():
        sys.exit("ab.py: every pass starts cold, which needs root (/proc/sys/vm/drop_caches)")
    variants = [parse_variant(v, args.build) for v in args.variants]
    mnt = os.path.join(args.workdir, "mnt", "ab")
    os.makedirs(mnt, exist_ok=True)
    results = {}
    for r in range(args.rounds):
        for threads in [int(t) for t in args.threads.split(",")]:
            for v in variants if r % 2 == 0 else variants[::-1]:
                p = one_pass(args, v, threads, mnt)
                results.setdefault((v[0], threads), []).append(p)
                split = (f"  first {args.split}: {p['split']:.0f}/s, rest {p['rest']:.0f}/s"
                         if p["split"] and p["rest"] else "")
                print(f"r{r} t{threads} {v[0]:14s} {p['files_per_s']:9.0f} files/s  "
                      f"{p['cpu_us']:5.0f} us CPU/file  READ {p['read']:.2f}  "
                      f"LOOKUP {p['lookup']:.2f}{split}" + ("  (ring)" if p["ring"] else "")
                      + (f"  ERRORS {p['errors']}" if p["errors"] else ""), flush=True)
                if p["timeline"]:
                    t = p["timeline"]
                    print(f"   files every {args.timeline} ms: "
                          + " ".join(str(b - a) for a, b in zip([0] + t, t)), flush=True)
    print()
    for (name, threads), ps in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        med = lambda k: statistics.median(p[k] for p in ps)  # noqa: E731
        print(f"t{threads} {name:14s} median {med('files_per_s'):9.0f} files/s "
              f"{[round(p['files_per_s']) for p in ps]}  {med('cpu_us'):5.0f} us CPU/file")
    if any(p["errors"] for ps in results.values() for p in ps):
        sys.exit(1)


if __name__ == "__main__":
    main()
