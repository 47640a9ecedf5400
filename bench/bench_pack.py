"""Writing and checking (issue 4, part 4): `mkpack pack` vs `zip -0 -r -q`, `tar cf` and
`mksquashfs -noI -noD -noF` on the same input (the first --pack-files small files), cold and warm; `mkpack verify` CRC throughput on a
warm cache; `mkpack catalog` time on a 1M-member set (issue 2 targets)."""
import os
import shutil
import subprocess

from common import drop_caches, sh, timed
from bench_mount import ensure_members_set


def warm_up(src):
    sh(f"find '{src}' -type f -print0 | xargs -0 cat > /dev/null")


def bench_pack(args, work, ds, rows):
    src, nfiles = ds.pack_input()
    mkpack = ds.mkpack
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(src) for f in fs)
    dst = os.path.join(work, "packout")

    def clean():
        shutil.rmtree(dst, ignore_errors=True)
        os.makedirs(dst)

    q = dict(stderr=subprocess.DEVNULL)
    contenders = {
        "mkpack pack": lambda: sh([mkpack, "pack", src, dst + "/media"], **q),
        "zip -0 -r -q": lambda: sh(f"cd '{src}' && zip -0 -r -q '{dst}/all.zip' .", **q),
        "tar cf": lambda: sh(["tar", "cf", dst + "/all.tar", "-C", src, "."]),
        "mksquashfs -noI -noD -noF": lambda: sh(
            ["mksquashfs", src, dst + "/img.sqfs", "-noI", "-noD", "-noF", "-noX", "-no-xattrs",
             "-quiet", "-no-progress"]),
    }
    for cache in ("cold", "warm"):
        for r in range(1 if args.quick else args.repeat):
            for name, fn in contenders.items():
                before = clean if cache == "cold" else (lambda: (clean(), warm_up(src)))
                t = timed(lambda: (fn(), os.sync()), cold=cache == "cold", before=before)
                rows.append({"bench": "pack", "cache": cache, "contender": name, "repeat": r,
                             "files": nfiles, "bytes": total, "seconds": t})
                print(f"pack {cache} r{r} {name:26s} {t:8.2f} s ({total / t / 1e6:7.1f} MB/s)",
                      flush=True)
    clean()

    # verify: CRC throughput per core with the shards in the page cache.
    packdir = ds.ensure_packset()
    total = ds.total_bytes()  # member bytes checked, as before
    sh(f"cat '{packdir}'/*.zip > /dev/null")
    for threads in (1, 2):
        for r in range(args.repeat):
            t = timed(lambda: sh([mkpack, "verify", "--threads", str(threads), packdir], **q))
            rows.append({"bench": "verify", "cache": "warm", "threads": threads, "repeat": r,
                         "bytes": total, "seconds": t, "GBps": total / t / 1e9})
            print(f"verify warm {threads} thread(s) r{r}: {total / t / 1e9:6.2f} GB/s", flush=True)

    # catalog on the largest member-count set, shards in the page cache.
    n = max(args.members)
    big = ensure_members_set(args, work, n, ds=ds)
    cat = os.path.join(big, ".packfs-catalog.sqlite")
    sh(f"cat '{big}'/*.zip > /dev/null")
    for r in range(args.repeat):
        def rebuild():
            for suffix in ("", "-wal", "-shm", "-journal"):
                if os.path.exists(cat + suffix):
                    os.remove(cat + suffix)
        t = timed(lambda: sh([mkpack, "catalog", big]), before=rebuild)
        rows.append({"bench": "catalog", "members": n, "repeat": r, "seconds": t})
        print(f"catalog {n} members r{r}: {t:.2f} s", flush=True)
    drop_caches()
