"""LeRobot (issue 6): per-episode MP4s synthesized by the mount from v3 multi-episode files.

- read: every episode video read sequentially through the mount (header + extents of the v3 file)
  vs the same episodes' own separate encodes read as loose files (the same sample bytes with
  their own header), cold and warm, as MB/s; the mount also with `-o read_ahead=1M`.
- open: open + first 4 KiB of an episode video after its source file was first accessed (its
  moov parsed by an earlier episode), per episode, in ms; and open + whole read of an episode's
  v2.1 data parquet (built by the mount from its rows of the v3 data file on first open) after
  the first episode's parquet was read (the source's pages then in the page cache).
- mount: `packfs DATASET MNT` of a 10,000-episode, 2-camera dataset (the default v2.1 view: its
  meta files, data parquets sized, episode videos) until `stat` of an episode video answers, and
  the daemon's RSS then.
"""
import json
import os
import subprocess
import time

from common import Broken, ROOT, drop_caches, mount, sh, unmount

GEN = os.path.join(ROOT, "scripts", "make-lerobot-dataset.py")


def ensure_dataset(work, name, gen_args):
    d = os.path.join(work, "lerobot", name)
    stamp = d + ".done-" + "_".join(gen_args).replace("/", "")
    if not os.path.exists(stamp):
        sh(["rm", "-rf", d, d + ".originals", d + ".manifest.json"])
        os.makedirs(os.path.dirname(d), exist_ok=True)
        print(f"data: LeRobot dataset {name}: {' '.join(gen_args)}", flush=True)
        sh(["python3", GEN, d] + gen_args)
        open(stamp, "w").close()
    with open(d + ".manifest.json") as f:
        return d, json.load(f)


def v21(ep, cam):
    return f"videos/chunk-{ep // 1000:03d}/{cam}/episode_{ep:06d}.mp4"


def v21_data(ep):
    return f"data/chunk-{ep // 1000:03d}/episode_{ep:06d}.parquet"


def read_all(paths):
    n = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                n += len(b)
    return n


def bench_lerobot(args, work, ds, rows):
    quick = args.quick
    gen = ["--episodes", "4" if quick else "12", "--cameras", "2", "--codec", "h264",
           "--episodes-per-file", "2" if quick else "6",
           "--frames", "30:40" if quick else "240:300",
           "--size", "160x120" if quick else "640x480", "--seed", "3"]
    dsdir, man = ensure_dataset(work, "read", gen)
    mnt = os.path.join(work, "mnt", "lerobot")
    packfs = [os.path.join(args.build, "packfs"), dsdir, mnt]
    eps = man["episodes"]
    cams = man["cameras"]
    virtual = [os.path.join(mnt, v21(e["episode_index"], c)) for e in eps for c in cams]
    originals = [e["cameras"][c]["original"] for e in eps for c in cams]
    try:
        mount(packfs, mnt, args.mount_budget)
        # Bytes check before measuring: the synthesized files decode like the originals.
        for p, o in list(zip(virtual, originals))[:2]:
            h = [subprocess.run(["ffmpeg", "-v", "error", "-i", x, "-f", "framemd5", "-"],
                                capture_output=True, text=True, check=True).stdout
                 for x in (p, o)]
            hp = [l.rsplit(",", 1)[-1] for l in h[0].splitlines() if not l.startswith("#")]
            ho = [l.rsplit(",", 1)[-1] for l in h[1].splitlines() if not l.startswith("#")]
            if hp != ho or not hp:
                raise Broken(f"lerobot: {p} does not decode like {o}")
        # The mount's read-ahead (512 KiB by default) against 1 MiB, its default before
        # 2026-12-05, interleaved in each round: the disk's speed here swings within minutes.
        ra1m = [packfs[0], "-o", "read_ahead=1M"] + packfs[1:]
        for cache in ("cold", "warm"):
            for r in range(args.repeat):
                for name, paths, cmd in (
                        ("original episode files (loose)", originals, None),
                        ("virtual episodes (packfs)", virtual, packfs),
                        ("virtual episodes (packfs -o read_ahead=1M)", virtual, ra1m)):
                    if cmd:
                        mount(cmd, mnt, args.mount_budget)
                    if cache == "warm":
                        read_all(paths)
                    else:
                        drop_caches()
                    t0 = time.perf_counter()
                    n = read_all(paths)
                    t = time.perf_counter() - t0
                    rows.append({"bench": "lerobot", "what": "read", "cache": cache,
                                 "contender": name, "repeat": r, "seconds": t, "bytes": n,
                                 "MBps": n / t / 1e6})
                    print(f"lerobot read {cache} r{r} {name:32s} {n / t / 1e6:8.1f} MB/s",
                          flush=True)
        # Open latency: the first episode of each source file is read first (its moov parsed),
        # then every other episode of that file is opened once.
        for r in range(args.repeat):
            mount(packfs, mnt, args.mount_budget)
            lat = []
            for c in cams:
                for f in man["files"][c]:
                    first, rest = f["episodes"][0], f["episodes"][1:]
                    read_all([os.path.join(mnt, v21(first, c))])
                    for e in rest:
                        t0 = time.perf_counter()
                        fd = os.open(os.path.join(mnt, v21(e, c)), os.O_RDONLY)
                        os.read(fd, 4096)
                        os.close(fd)
                        lat.append(time.perf_counter() - t0)
            for x in lat:
                rows.append({"bench": "lerobot", "what": "open", "repeat": r, "seconds": x})
            lat.sort()
            print(f"lerobot open r{r}: median {lat[len(lat) // 2] * 1e3:.3f} ms, "
                  f"max {lat[-1] * 1e3:.3f} ms over {len(lat)} episodes", flush=True)
            # The episodes' data parquets: the first one read brings the source's pages in.
            parquets = [os.path.join(mnt, v21_data(e["episode_index"])) for e in eps]
            read_all(parquets[:1])
            plat = []
            for p in parquets[1:]:
                t0 = time.perf_counter()
                size = os.stat(p).st_size
                got = read_all([p])
                plat.append(time.perf_counter() - t0)
                if got != size or size == 0:
                    raise Broken(f"lerobot: {p} read {got} bytes, stat says {size}")
            for x in plat:
                rows.append({"bench": "lerobot", "what": "open parquet", "repeat": r,
                             "seconds": x})
            plat.sort()
            print(f"lerobot open parquet r{r}: median {plat[len(plat) // 2] * 1e3:.3f} ms, "
                  f"max {plat[-1] * 1e3:.3f} ms over {len(plat)} episodes", flush=True)
    finally:
        unmount(mnt)

    # Mount start of a many-episode dataset.
    n = 300 if quick else 10000
    big, bman = ensure_dataset(work, f"eps{n}", [
        "--episodes", str(n), "--cameras", "2", "--codec", "h264", "--episodes-per-file",
        "1000", "--frames", "8:12", "--size", "64x48", "--fast-repeat", "20", "--seed", "5"])
    mnt = os.path.join(work, "mnt", "lerobot-big")
    try:
        for r in range(args.repeat):
            unmount(mnt)
            drop_caches()
            t0 = time.perf_counter()
            mount([os.path.join(args.build, "packfs"), big, mnt], mnt, args.mount_budget)
            os.stat(os.path.join(mnt, v21(n - 1, bman["cameras"][0])))
            t = time.perf_counter() - t0
            pid = subprocess.run(["pgrep", "-f", f"packfs {big} {mnt}"], capture_output=True,
                                 text=True).stdout.split()
            rss = 0
            if pid:
                with open(f"/proc/{pid[0]}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            rss = int(line.split()[1]) * 1024
            rows.append({"bench": "lerobot", "what": "mount", "episodes": n, "repeat": r,
                         "seconds": t, "rss": rss})
            print(f"lerobot mount {n} episodes r{r}: first stat after {t:.3f} s, "
                  f"RSS {rss / 2**20:.1f} MiB", flush=True)
            unmount(mnt)
    finally:
        unmount(mnt)
