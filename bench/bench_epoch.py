"""One training epoch (issue 22): every file of a set that fits in RAM read once, whole, in random
order, cold, by path and after a readdir scan, with 2 and 8 reader threads.

This is the pattern where packing pays on a local disk: neighbouring members share a shard's
extents, so a read that brings in one member's region brings its neighbours, which the same
epoch reads later. The `small` benchmark's passes read a tenth of the set, where neighbours are
rarely read in the same pass; an epoch reads them all.

The epoch set is the first --epoch-files files of the data set (whole directories of 1000, in
their shards' order), read in a shuffled order that differs per repeat. Contenders: loose files,
raw pread of the same bytes from the shards (fds opened before the clock starts: the limit of
the storage in this pattern), packfs (and packfs -o io_uring where the kernel has it, and
packfs -o nopush: what pushing a read's followers into the page cache buys, and packfs -o
nostream: what streaming the directories it reads through buys, packfs -o nowalk: what
walking them to push the rest buys, and packfs -o nolist: what listing them by path buys),
packfs with the shards the epoch reads already in the page cache ("shards cached": no disk read in the pass, so
what is left is the cost of the mount's requests, the limit of a FUSE mount in this pattern),
squashfuse over an uncompressed squashfs of the same files. Every contender is checked byte for
byte on a few hundred files first (bench_small.check). Repeats are interleaved; every pass is a
fresh mount after dropped caches.

Each pass also records how many files were read every TIMELINE_MS milliseconds (readfiles
--timeline), and the report splits it in three phases: the first 10% of files, 10-25%, and the
rest. In a random order a packfs mount treats a directory as read through once 15% of it was
served (fuse/push.h), and the directories cross that line close together, around 15% of the
epoch: before it every file costs its own requests and its own disk read, as in a pass over a
sample of the set; around it the mount lists, streams, walks and pushes most of the set at once
while its readers mostly wait; after it most reads are served by the kernel from pushed pages.
The report also charts the timelines, so such a stall shows.

A third pattern reads the same files in shard order after the scan (the order they are stored
in, the lists "epoch-order-*": a reader walking the set as it lies, `cp -r`, a loader that does
not shuffle), the pattern the kernel's own read-ahead of a shard serves best; raw pread reads
them in that order too.

Then the same epoch on a set that does not fit: loose, raw pread, packfs and packfs -o nopush
again, with this process and all it starts (mounts, readers) in a memory cgroup of a quarter of
the set plus 48 MiB for the processes (--epoch-memory), page cache included.
"""
import os
import random

from common import Broken, drop_caches, memory_limited, packfs_stats, uring_enabled
from bench_small import Contender, ours, read_pass, stats_delta, CHECK_FILES

TIMELINE_MS = 10
# Random order by path, random order after a scan, shard order after a scan (raw pread: by path
# and in shard order).
PATTERNS = ("path", "scan", "order")


def epoch_keys(ds, n):
    """The first n files of the data set in creation order (whole directories)."""
    with open(os.path.join(ds.work, "order.txt")) as f:
        keys = sorted(f.read().split())
    return keys[:n]


def write_epoch_lists(args, work, keys, ext):
    d = os.path.join(work, "lists")
    os.makedirs(d, exist_ok=True)
    for r in list(range(args.repeat)) + ["check"]:
        order = list(keys)
        random.Random(f"epoch/{r}").shuffle(order)
        if r == "check":
            order = order[:CHECK_FILES]
        with open(os.path.join(d, f"epoch-path-{r}.txt"), "w") as f:
            f.write("\n".join(order) + "\n")
        with open(os.path.join(d, f"epoch-pread-{r}.txt"), "w") as f:
            f.write("".join("%s\t%d\t%d\t%s\n" % (*ext[k], k) for k in order))
    # Shard order: the keys as stored (whole directories, in their shards' order).
    for r in range(args.repeat):
        with open(os.path.join(d, f"epoch-order-path-{r}.txt"), "w") as f:
            f.write("\n".join(keys) + "\n")
        with open(os.path.join(d, f"epoch-order-pread-{r}.txt"), "w") as f:
            f.write("".join("%s\t%d\t%d\t%s\n" % (*ext[k], k) for k in keys))


def make_contenders(ds, args, work, uring, shards):
    mnt = lambda n: os.path.join(work, "mnt", n)  # noqa: E731
    packfs = os.path.join(args.build, "packfs")
    # "packfs" serves through /dev/fuse: enable_uring is on for the run, and a mount takes the
    # ring by default where it is.
    dev = [packfs, "-o", "noio_uring"]
    cs = [Contender("loose", root=ds.src), Contender("raw pread", pread=True),
          Contender("packfs", mnt("packfs"), dev + [ds.ensure_packset(), mnt("packfs")])]
    if uring:
        cs.append(Contender("packfs -o io_uring", mnt("packfs-uring"),
                            [packfs, "-o", "io_uring", ds.packdir, mnt("packfs-uring")]))
    # The limit of the mount itself: the same epoch with every shard the epoch reads already in
    # the page cache (read after the caches are dropped, before the clock), so no pass waits on
    # the disk and each file costs only its requests (LOOKUP and READ by path). A target above
    # it cannot be met by reading the disk better.
    cs.append(Contender("packfs, shards cached", mnt("packfs-cached"),
                        dev + [ds.packdir, mnt("packfs-cached")], cache_first=shards))
    if uring:
        cs.append(Contender("packfs -o io_uring, shards cached", mnt("packfs-uring-cached"),
                            [packfs, "-o", "io_uring", ds.packdir, mnt("packfs-uring-cached")],
                            cache_first=shards))
    if not args.quick:
        # What pushing a read's followers into the page cache buys (fuse/push.h).
        cs.append(Contender("packfs -o nopush", mnt("packfs-nopush"),
                            dev + ["-o", "nopush", ds.packdir, mnt("packfs-nopush")]))
        # What streaming the directories an epoch reads through buys (core/read/dir_stream.h).
        cs.append(Contender("packfs -o nostream", mnt("packfs-nostream"),
                            dev + ["-o", "nostream", ds.packdir, mnt("packfs-nostream")]))
        # What walking a ready directory to push the rest of it buys (fuse/push.h).
        cs.append(Contender("packfs -o nowalk", mnt("packfs-nowalk"),
                            dev + ["-o", "nowalk", ds.packdir, mnt("packfs-nowalk")]))
        # What listing a directory read through by path buys (fuse/dir_lister.h).
        cs.append(Contender("packfs -o nolist", mnt("packfs-nolist"),
                            dev + ["-o", "nolist", ds.packdir, mnt("packfs-nolist")]))
        cs.append(Contender("squashfuse", mnt("squashfuse"),
                            ["squashfuse", ds.ensure_squash(), mnt("squashfuse")]))
    return cs


def bench_epoch(args, work, ds, rows):
    with uring_enabled() as uring:
        _bench_epoch(args, work, ds, rows, uring)


def _bench_epoch(args, work, ds, rows, uring):
    ds.ensure_src()
    keys = epoch_keys(ds, min(args.epoch_files, args.files))
    ext = ds.extents()  # key -> (shard path, offset, size): one `mkpack ls` of the set
    cs = make_contenders(ds, args, work, uring, sorted({ext[k][0] for k in keys}))
    write_epoch_lists(args, work, keys, ext)
    total = sum(os.path.getsize(os.path.join(ds.src, k)) for k in keys)
    rows.append({"bench": "epoch-meta", "files": len(keys), "bytes": total})
    print(f"epoch: {len(cs)} contenders, {len(keys)} files ({total / 2**20:.0f} MiB), threads "
          f"{args.epoch_threads}, {args.repeat} repeats", flush=True)
    broken = []
    for c in cs:  # byte check of CHECK_FILES files through every contender
        if not c.ready(args.mount_budget):
            if ours(c.name):
                broken.append(f"{c.name}: {c.dead}")
            continue
        res = read_pass(args, work, c, "check", 8, False, 2 * args.epoch_budget,
                        verify=ds.src, prefix="epoch-")
        rows.append({"bench": "epoch-check", "contender": c.name, **res})
        if res["mismatches"]:
            broken.append(f"{c.name}: wrong bytes in {res['mismatches']} of {res['files']} files")
        elif ours(c.name) and (res["errors"] or not res["complete"]):
            broken.append(f"{c.name}: {res['errors']} read errors in the epoch check")
    try:
        run_passes(args, work, cs, rows, broken, {})
        # The same epoch on a machine with less memory than the set: mounts and readers in a
        # memory cgroup holding a quarter of it (plus room for the processes), page cache
        # included. Neighbours read ahead or pushed may now be evicted before their turn.
        limit = args.epoch_memory or total // 4 + (48 << 20)
        small = [c for c in cs if c.name in ("loose", "raw pread", "packfs", "packfs -o nopush",
                                             "packfs -o nostream")]
        with memory_limited(limit) as why:
            if why:
                print(f"epoch with {limit >> 20} MiB of memory: skipped, {why}", flush=True)
                rows.append({"bench": "epoch-memory-skipped", "why": why})
            else:
                print(f"epoch with {limit >> 20} MiB of memory (a memory cgroup)", flush=True)
                try:
                    run_passes(args, work, small, rows, broken, {"memory": limit})
                finally:
                    for c in small:  # its daemons must leave the cgroup before it goes
                        c.close()
    finally:
        for c in cs:
            c.close()
    if broken:
        raise Broken("epoch: " + "; ".join(dict.fromkeys(broken)))


def read_whole(path):
    """Reads file `path` once, into the page cache."""
    buf = bytearray(8 << 20)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def run_passes(args, work, cs, rows, broken, extra):
    """Every pattern, thread count and repeat over contenders cs (interleaved per repeat);
    rows get `extra` (e.g. the memory limit)."""
    tag = f" {extra['memory'] >> 20}M" if "memory" in extra else ""
    for pattern in PATTERNS:
        for threads in args.epoch_threads:
            for r in range(args.repeat):
                for c in cs[r % len(cs):] + cs[:r % len(cs)]:
                    if c.dead or (pattern == "scan" and c.pread) or not c.ready(
                            args.mount_budget):
                        continue
                    drop_caches()
                    for path in c.cache_first:
                        read_whole(path)
                    before = packfs_stats(c.root) if c.name.startswith("packfs") else None
                    res = read_pass(args, work, c, r, threads, pattern != "path",
                                    args.epoch_budget,
                                    prefix="epoch-order-" if pattern == "order" else "epoch-",
                                    timeline=TIMELINE_MS)
                    row = {"bench": "epoch", "pattern": pattern, "threads": threads,
                           "contender": c.name, "repeat": r, **extra, **res}
                    if before:
                        row["packfs_stats"] = stats_delta(before, packfs_stats(c.root))
                    if not res["complete"]:
                        row["too_slow"] = "too slow: %d files in %.1f s" % (
                            res["files"], res["seconds"])
                    if ours(c.name) and res["errors"]:
                        broken.append(f"{c.name}: {res['errors']} read errors in epoch "
                                      f"{pattern} t{threads} r{r}{tag}")
                    rows.append(row)
                    print(f"epoch{tag} {pattern} t{threads} r{r} {c.name:20s} "
                          f"{res['files_per_s']:10.0f} files/s"
                          + ("" if res["complete"] else "  (" + row["too_slow"] + ")"),
                          flush=True)
