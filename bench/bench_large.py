"""Large sequential and random reads (issue 4, part 2) with fio (job files in bench/fio/): 1 MiB
sequential reads of a large member, cold, warm, and with the shard cached but not the mount's file
(what the mount itself costs), and 4-128 KiB random reads, cold, through packfs
vs raw reads of the same range of its shard vs the loose file. The mount's readahead window
(read_ahead_kb of its bdi) and its thread count are measured as separate contenders, and so is
packfs over FUSE io_uring where the kernel has it (-o io_uring; the others say -o noio_uring, and
enable_uring is on for the run). Before measuring, the member is compared byte for byte through
the mount with the loose file (`cmp`; a difference raises Broken). A FUSE passthrough of the loose
file (bench/fuse_passthrough.cc) is the limit of any FUSE mount warm."""
import json
import os
import subprocess

from bench_small import PASSTHROUGH
from common import (ROOT, Broken, drop_caches, fuse_bdi, mount, out, set_readahead_kb, sh,
                    unmount, uring_enabled)


def ensure_large(args, work, ds):
    """(loose file, pack dir) for one member of --large-mib MiB of incompressible bytes."""
    d = os.path.join(work, "large")
    src = os.path.join(d, "src", "big.bin")
    pack = os.path.join(d, "media")
    stamp = os.path.join(d, f"done-{args.large_mib}")
    if not os.path.exists(stamp):
        sh(["rm", "-rf", d])
        os.makedirs(os.path.dirname(src))
        print(f"data: one member of {args.large_mib} MiB", flush=True)
        with ds.building("large member"):
            block = os.urandom(16 << 20)
            with open(src, "wb") as f:
                for i in range((args.large_mib + 15) // 16):
                    f.write(block[i % 7:] + block[:i % 7])  # no two 16 MiB blocks alike
                f.truncate(args.large_mib << 20)
            sh([os.path.join(args.build, "mkpack"), "pack", "--no-fsync", os.path.dirname(src),
                pack], stderr=subprocess.DEVNULL)
        open(stamp, "w").close()
    return src, pack


def drop_file_cache(path):
    """Drops one file's pages from the page cache (a mounted file's: not its shard's)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def run_fio(job, file, offset, size, runtime=0, jobs=1):
    env = dict(os.environ, FIO_FILE=file, FIO_OFFSET=str(offset), FIO_SIZE=str(size),
               FIO_RUNTIME=str(runtime), FIO_JOBS=str(jobs))
    res = json.loads(out(["fio", "--output-format=json", os.path.join(ROOT, "bench", "fio", job)],
                         env=env))
    read = res["jobs"][0]["read"]
    return {"MBps": read["bw_bytes"] / 1e6, "iops": read["iops"], "bytes": read["io_bytes"]}


def bench_large(args, work, ds, rows):
    with uring_enabled() as uring:
        _bench_large(args, work, ds, rows, uring)


def _bench_large(args, work, ds, rows, uring):
    src, pack = ensure_large(args, work, ds)
    shard, offset, size, _crc = out([os.path.join(args.build, "mkpack"), "resolve", pack,
                                     "big.bin"]).split("\t")
    offset, size = int(offset), int(size)
    packfs = os.path.join(args.build, "packfs")
    mnts = []
    # name -> (file, offset): every contender reads `size` bytes from `offset` of `file`.
    contenders = {"raw pread": (shard, offset), "loose": (src, 0)}
    dev = ["-o", "noio_uring"]  # through /dev/fuse but the contender named io_uring
    variants = [("packfs", dev, None)]
    if uring:  # where a mount takes the ring by default (Linux 6.14+, enable_uring=Y)
        variants.append(("packfs -o io_uring", ["-o", "io_uring"], None))
    if not args.quick:
        # packfs sets the mount's window to 512 KiB (fuse/read_ahead.h); 128 KiB is the
        # kernel's own, 1 MiB about packfs's before 2026-12-05 (max_read, 1008 KiB).
        variants += [("packfs ra=128KiB", dev, 128), ("packfs ra=1MiB", dev, 1024),
                     ("packfs ra=4MiB", dev, 4096),
                     ("packfs --threads 2", dev + ["--threads", "2"], None)]
    ra_default = None
    for name, extra, ra in variants:
        m = os.path.join(work, "mnt", "large-" + str(len(mnts)))
        mount([packfs, *extra, pack, m], m, args.mount_budget)
        mnts.append(m)
        if ra:
            if set_readahead_kb(m, ra) != ra:
                print(f"  {name}: cannot set read_ahead_kb; skipped", flush=True)
                continue
        else:
            with open(fuse_bdi(m) + "/read_ahead_kb") as f:
                ra_default = int(f.read())
        contenders[name] = (os.path.join(m, "big.bin"), 0)
        if not mnts[1:]:  # the first mount: are these the right bytes at all?
            if subprocess.run(["cmp", "-s", src, contenders[name][0]]).returncode != 0:
                for mm in mnts:
                    unmount(mm)
                raise Broken(f"large: {contenders[name][0]} differs from {src}")
    # The loose file through the smallest FUSE file system, cached as packfs is (no OPEN, the
    # page cache kept): warm, no request is sent and its rate is the kernel's FUSE page-cache path,
    # the limit of any FUSE mount; cold, one pread per READ of the kernel's read-ahead size.
    m = os.path.join(work, "mnt", "large-passthrough")
    mount([os.path.join(args.build, "fuse_passthrough"), os.path.dirname(src), m], m,
          args.mount_budget)
    mnts.append(m)
    contenders[PASSTHROUGH] = (os.path.join(m, os.path.basename(src)), 0)
    rows.append({"bench": "large-meta", "size": size, "default_read_ahead_kb": ra_default,
                 "shard_offset": offset})
    jobs_list = (1,)
    try:
        for r in range(args.repeat):
            for name, (f, off) in contenders.items():
                drop_caches()
                res = run_fio("seq-read.fio", f, off, size)
                rows.append({"bench": "large", "job": "seq 1M", "cache": "cold", "contender": name,
                             "repeat": r, **res})
                print(f"large seq cold r{r} {name:20s} {res['MBps']:8.0f} MB/s", flush=True)
                res = run_fio("seq-read.fio", f, off, size)  # now warm
                rows.append({"bench": "large", "job": "seq 1M", "cache": "warm", "contender": name,
                             "repeat": r, **res})
                print(f"large seq warm r{r} {name:20s} {res['MBps']:8.0f} MB/s", flush=True)
                # The mount's own cost: its page cache dropped, the shard's kept (for raw pread
                # and loose files, both the same file: a warm read again, the limit).
                if name not in ("raw pread", "loose"):
                    drop_file_cache(f)
                res = run_fio("seq-read.fio", f, off, size)
                rows.append({"bench": "large", "job": "seq 1M", "cache": "shard cached",
                             "contender": name, "repeat": r, **res})
                print(f"large seq shard cached r{r} {name:20s} {res['MBps']:8.0f} MB/s",
                      flush=True)
                for jobs in jobs_list:
                    drop_caches()
                    res = run_fio("rand-read.fio", f, off, size, args.fio_runtime, jobs)
                    rows.append({"bench": "large", "job": f"rand 4k-128k x{jobs}", "cache": "cold",
                                 "contender": name, "repeat": r, **res})
                    print(f"large rand x{jobs} cold r{r} {name:20s} {res['MBps']:8.0f} MB/s "
                          f"{res['iops']:8.0f} IOPS", flush=True)
    finally:
        for m in mnts:
            unmount(m)
