"""Mid-size files (clips, audio, large images: 1-8 MiB each) read whole, one at a time, in random
order, cold: the loose files vs raw pread of the same bytes in the shard vs packfs, each with
32 KiB reads (ffmpeg's own read size: the kernel's read-ahead decides the speed) and 1 MiB reads.
packfs is also measured with `-o nocrc` (a member's first reads are copied to check its CRC-32;
without the check they are spliced), with `-o read_ahead=1M` (its default before 2026-12-05:
512 KiB), with the shard already in the page cache (the mount's own limit for the pattern) and
over FUSE io_uring where the kernel has it (`-o io_uring`: replies are read straight into the
ring's buffer; the other packfs contenders say `-o noio_uring`).
Every packfs pass is a fresh mount, so every member is read for the first time, as in an epoch.
Rounds are interleaved: contender by contender, then the next round. The bytes are compared
with the loose files through the mount and through pread before measuring (Broken if wrong).
Full runs then read loose and packfs again with the disk's reads throttled (a cgroup holding
the bench and the mounts it starts): a slower disk, where the mount's own path matters less.
"""
import json
import os
import random
import subprocess

from common import (Broken, drop_caches, mount, pack_extents, packfs_stats, reads_throttled,
                    sh, unmount, uring_enabled)

BLOCKS = (32 << 10, 1 << 20)
THROTTLES = (400 * 10**6,)  # bytes/s of the throttled passes (full runs only)


def ensure_midsize(args, work, ds):
    """(loose dir, pack dir, keys) of --mid-files files of 1-8 MiB (quick: 256 KiB-1 MiB)."""
    d = os.path.join(work, "midsize")
    src, pack = os.path.join(d, "src"), os.path.join(d, "media")
    lo, hi = (256 << 10, 1 << 20) if args.quick else (1 << 20, 8 << 20)
    stamp = os.path.join(d, f"done-{args.mid_files}-{lo}-{hi}")
    rng = random.Random(11)
    keys = [f"clips/c{i:04d}.bin" for i in range(args.mid_files)]
    if not os.path.exists(stamp):
        sh(["rm", "-rf", d])
        os.makedirs(os.path.join(src, "clips"))
        print(f"data: {args.mid_files} files of {lo >> 10}-{hi >> 10} KiB", flush=True)
        with ds.building("mid-size files"):
            for k in keys:
                with open(os.path.join(src, k), "wb") as f:
                    f.write(os.urandom(rng.randint(lo, hi)))
            sh([os.path.join(args.build, "mkpack"), "pack", "--no-fsync", src, pack],
               stderr=subprocess.DEVNULL)
        open(stamp, "w").close()
    return src, pack, keys


def _lists(args, work, pack, keys):
    """A shuffled order as paths and as shard extents; returns their file names."""
    order = list(keys)
    random.Random(5).shuffle(order)
    ext = pack_extents(os.path.join(args.build, "mkpack"), pack)
    d = os.path.join(work, "lists")
    os.makedirs(d, exist_ok=True)
    paths, preads = os.path.join(d, "mid-path.txt"), os.path.join(d, "mid-pread.txt")
    with open(paths, "w") as f:
        f.write("\n".join(order) + "\n")
    with open(preads, "w") as f:
        f.write("".join("%s\t%d\t%d\t%s\n" % (*ext[k], k) for k in order))
    return paths, preads


def _readfiles(args, cmd, block, verify=None):
    exe = os.path.join(args.build, "readfiles")
    full = [exe] + cmd + ["--threads", "1", "--block", str(block)]
    if verify:
        full += ["--verify", verify]
    p = subprocess.run(full, capture_output=True, text=True, timeout=600)
    if p.returncode != 0 or not p.stdout.strip():
        raise Broken(f"midsize: readfiles {' '.join(cmd)} failed ({p.returncode}): "
                     f"{p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def bench_midsize(args, work, ds, rows):
    with uring_enabled() as uring:
        _bench_midsize(args, work, ds, rows, uring)


def _bench_midsize(args, work, ds, rows, uring):
    src, pack, keys = ensure_midsize(args, work, ds)
    paths, preads = _lists(args, work, pack, keys)
    mnt = os.path.join(work, "mnt", "midsize")
    packfs = os.path.join(args.build, "packfs")
    shard = sorted(os.path.join(pack, f) for f in os.listdir(pack) if f.endswith(".zip"))
    # name, mount options (None: not a mount), pread, shards cached before the pass
    dev = ["-o", "noio_uring"]
    contenders = [("loose", None, False, False), ("raw pread", None, True, False),
                  ("packfs", dev, False, False),
                  ("packfs -o nocrc", dev + ["-o", "nocrc"], False, False),
                  ("packfs -o read_ahead=1M", dev + ["-o", "read_ahead=1M"], False, False),
                  ("packfs, shard cached", dev, False, True)]
    if uring:
        contenders.append(("packfs -o io_uring", ["-o", "io_uring"], False, False))
    try:
        mount([packfs, *dev, pack, mnt], mnt, args.mount_budget)
        for what, cmd in (("packfs", ["--root", mnt, "--list", paths]),
                          ("raw pread", ["--pread", preads])):
            res = _readfiles(args, cmd, 1 << 20, verify=src)
            print(f"midsize check {what}: {res['files']} files, {res['mismatches']} wrong",
                  flush=True)
            if res["mismatches"] or res["files"] != len(keys):
                raise Broken(f"midsize: {what} read {res['files']} of {len(keys)} files, "
                             f"{res['mismatches']} wrong")
        _rounds(args, rows, "midsize", contenders, packfs, pack, mnt, src, paths, preads, shard)
        if args.quick:
            return
        # A slower disk: the same files with the disk's reads throttled for the reader and the
        # mount (both started inside the cgroup), loose against packfs.
        for bps in THROTTLES:
            with reads_throttled(src, bps) as why:
                if why:
                    print(f"midsize: no throttled pass: {why}", flush=True)
                    break
                unmount(mnt)
                _rounds(args, rows, f"midsize-throttled-{bps // 10**6}", contenders[:1] +
                        [c for c in contenders if c[0] == "packfs"], packfs, pack, mnt, src,
                        paths, preads, shard)
                unmount(mnt)
    finally:
        unmount(mnt)


def _rounds(args, rows, bench, contenders, packfs, pack, mnt, src, paths, preads, shard):
    """--repeat interleaved rounds of every contender at each read size, cold."""
    for r in range(args.repeat):
        for block in BLOCKS:
            for name, opts, pread, cached in contenders:
                if opts is not None:
                    unmount(mnt)
                drop_caches()
                if cached:
                    for s in shard:
                        sh(["cat", s], stdout=subprocess.DEVNULL)
                if opts is not None:
                    mount([packfs, *opts, pack, mnt], mnt, args.mount_budget)
                    cmd = ["--root", mnt, "--list", paths]
                elif pread:
                    cmd = ["--pread", preads]
                else:
                    cmd = ["--root", src, "--list", paths]
                res = _readfiles(args, cmd, block)
                if "io_uring" in name:
                    ring = (packfs_stats(mnt) or {}).get("io_uring", {})
                    if not ring.get("requests"):
                        print(f"  {name}: the ring served nothing; not recorded", flush=True)
                        continue
                mbps = res["bytes"] / res["seconds"] / 1e6
                rows.append({"bench": bench, "contender": name, "block": block,
                             "repeat": r, "seconds": res["seconds"], "bytes": res["bytes"],
                             "MBps": mbps})
                print(f"{bench} r{r} {block >> 10:5d} KiB reads {name:26s} {mbps:8.0f} MB/s",
                      flush=True)
