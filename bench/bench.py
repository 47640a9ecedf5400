#!/usr/bin/env python3
"""packfs benchmarks: contenders measured side by side in one run, reported as ratios of medians.

Each benchmark writes its rows into one JSON document (bench/results/<date>.json) and a Markdown
summary (bench/results/<date>.md). This machine is shared and noisy: every figure is the median of
--repeat runs, and the README quotes ratios between contenders measured in the same run.
"""
import argparse
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), check=True, **kw)


def drop_caches():
    """Drops the page cache (root only); returns False when not permitted."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def timed(fn, cold, repeat, before=None):
    times = []
    for _ in range(repeat):
        if before:
            before()
        if cold:
            drop_caches()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def make_small_files(dst, n, size_min, size_max, seed=1):
    """n files of uniform random size in [size_min, size_max], 1000 per directory."""
    rnd = random.Random(seed)
    blob = os.urandom(size_max + 4096)
    total = 0
    for i in range(n):
        d = os.path.join(dst, "%04d" % (i // 1000))
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        size = rnd.randint(size_min, size_max)
        off = rnd.randint(0, 4096)
        with open(os.path.join(d, "%06d.jpg" % i), "wb") as f:
            f.write(blob[off:off + size])
        total += size
    return total


def bench_pack(args, work, out):
    """mkpack pack vs zip -0 -r -q vs tar cf; mkpack verify CRC rate; mkpack catalog at 1M."""
    mkpack = os.path.join(args.build, "mkpack")
    src = os.path.join(work, "src")
    if not os.path.isdir(src):
        print(f"pack: generating {args.files} files of {args.size_min}-{args.size_max} bytes", flush=True)
        make_small_files(src, args.files, args.size_min, args.size_max)
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(src) for f in fs)
    dst = os.path.join(work, "out")

    def clean():
        shutil.rmtree(dst, ignore_errors=True)
        os.makedirs(dst)

    contenders = {
        "mkpack pack": lambda: sh([mkpack, "pack", src, dst + "/media"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL),
        "zip -0 -r -q": lambda: sh(f"cd '{src}' && zip -0 -r -q '{dst}/all.zip' .", stdout=subprocess.DEVNULL),
        "tar cf": lambda: sh(["tar", "cf", dst + "/all.tar", "-C", src, "."]),
    }
    rows = []
    for cache in ("cold", "warm"):
        res = {}
        for name, fn in contenders.items():
            if cache == "warm":
                sh(f"cat $(find '{src}' -type f) > /dev/null", stdout=subprocess.DEVNULL) if args.files <= 20000 \
                    else sh(f"find '{src}' -type f -print0 | xargs -0 cat > /dev/null")
            med, all_t = timed(fn, cache == "cold", args.repeat, before=clean)
            res[name] = med
            rows.append({"bench": "pack", "cache": cache, "contender": name, "files": args.files,
                         "bytes": total, "median_s": med, "runs_s": all_t})
            print(f"pack {cache:4s} {name:14s} {med:8.2f} s  ({total / med / 1e6:7.1f} MB/s)", flush=True)
        rows.append({"bench": "pack", "cache": cache, "ratio": "mkpack/zip",
                     "value": res["mkpack pack"] / res["zip -0 -r -q"]})
        rows.append({"bench": "pack", "cache": cache, "ratio": "mkpack/tar",
                     "value": res["mkpack pack"] / res["tar cf"]})

    # verify: CRC throughput per core on a warm cache.
    clean()
    sh([mkpack, "pack", src, dst + "/media"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sh(f"cat '{dst}'/media/*.zip > /dev/null")
    for threads in (1, 2):
        med, all_t = timed(lambda: sh([mkpack, "verify", "--threads", str(threads), dst + "/media"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                           False, args.repeat)
        rows.append({"bench": "verify", "cache": "warm", "threads": threads, "bytes": total,
                     "median_s": med, "GBps": total / med / 1e9, "runs_s": all_t})
        print(f"verify warm {threads} thread(s): {total / med / 1e9:6.2f} GB/s", flush=True)

    # catalog on a large member count: one tiny file listed under many keys.
    n = args.catalog_members
    big = os.path.join(work, "big")
    shutil.rmtree(big, ignore_errors=True)
    tiny = os.path.join(work, "tiny.bin")
    with open(tiny, "wb") as f:
        f.write(b"x" * 16)
    lst = os.path.join(work, "big.list")
    with open(lst, "w") as f:
        for i in range(n):
            f.write("d%04d/%07d.bin\t%s\n" % (i // 10000, i, tiny))
    print(f"catalog: packing {n} members", flush=True)
    sh([mkpack, "pack", "--no-catalog", "--files-from", lst, big], stdout=subprocess.DEVNULL,
       stderr=subprocess.DEVNULL)
    cat = os.path.join(big, ".packfs-catalog.sqlite")

    def build():
        if os.path.exists(cat):
            os.remove(cat)
        sh([mkpack, "catalog", big], stdout=subprocess.DEVNULL)
    sh(f"cat '{big}'/*.zip > /dev/null")
    med, all_t = timed(build, False, args.repeat)
    rows.append({"bench": "catalog", "members": n, "median_s": med, "runs_s": all_t})
    print(f"catalog {n} members: {med:.2f} s", flush=True)
    shutil.rmtree(big, ignore_errors=True)
    out.extend(rows)


BENCHES = {"pack": bench_pack}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="a few thousand files; about a minute")
    ap.add_argument("--only", action="append", choices=sorted(BENCHES), help="run only NAME")
    ap.add_argument("--workdir", help="where data is generated (default: a temporary directory)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--size-min", type=int, default=4096)
    ap.add_argument("--size-max", type=int, default=32768)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--catalog-members", type=int, default=1000000)
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    args = ap.parse_args()
    if args.quick:
        args.files = min(args.files, 3000)
        args.catalog_members = min(args.catalog_members, 50000)
        args.repeat = min(args.repeat, 2)
    work = args.workdir or tempfile.mkdtemp(prefix="packfs-bench-", dir="/var/tmp")
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        for name in args.only or sorted(BENCHES):
            BENCHES[name](args, work, rows)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    meta = {"date": stamp, "argv": sys.argv[1:], "nproc": os.cpu_count(),
            "kernel": os.uname().release, "git": subprocess.run(
                ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                text=True).stdout.strip()}
    path = os.path.join(ROOT, "bench", "results", stamp + ".json")
    with open(path, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print("results:", path)


if __name__ == "__main__":
    main()
