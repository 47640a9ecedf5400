"""Part (c) of the shared-storage benchmark (issue 22 §2), full runs only: one epoch of a real
loader, torchvision's ImageFolder + DataLoader (bench/loader_epoch.py: 4 workers, batch 32,
decode and resize), over --shared-images JPEGs of 50-200 KiB in 5 class directories, on the
local loose files already in the page cache (the decoding's own limit), the local loose files,
packfs of their local pack set, a FUSE passthrough of the loose files (bench/fuse_passthrough.cc)
with its page cache warm and cold (any FUSE mount's limits), the loose files on sshfs and packfs
over sshfs (at the smallest sshfs delay), and over HTTP: `rclone mount` of the loose files and
packfs of the pack set's URL (bench_shared.py makes those mounts). Each epoch also records the
CPU it cost (common.cpu_snapshot): the machine's, the packfs daemons' and the storage's.

torchvision runs under /usr/bin/python3, where Debian's python3-torchvision installs (the
python3 first on PATH may be another one). It is large, so it is installed here, on demand, only
when the full shared benchmark runs (--shared-loader auto); when it cannot be had the rows say
"not available" and nothing fails. Broken only on wrong bytes or packfs failing to mount or read.
"""
import json
import os
import shutil
import subprocess

from common import ROOT, cpu_delta, cpu_snapshot, drop_caches, sh

PYTHON = "/usr/bin/python3"
LOADER = os.path.join(ROOT, "bench", "loader_epoch.py")
# (size, noise strength) of each class: ffmpeg's testsrc2 with temporal noise, JPEG quality 4,
# gives about 55, 80, 120, 150 and 185 KiB an image.
CLASSES = [("480x360", 35), ("640x480", 25), ("640x480", 40), ("800x600", 30), ("800x600", 42)]


def torchvision_ready(args):
    """None when /usr/bin/python3 imports torchvision (installing python3-torchvision first
    when it does not and --shared-loader auto), else why not."""
    def works():
        return os.access(PYTHON, os.X_OK) and subprocess.run(
            [PYTHON, "-c", "import torchvision"], capture_output=True).returncode == 0
    if works():
        return None
    if args.shared_loader != "auto":
        return "torchvision not installed (--shared-loader off)"
    print("shared loader: installing python3-torchvision (apt-get)", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    p = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                        "python3-torchvision"], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return "apt-get install python3-torchvision failed: " + p.stderr.strip()[-300:]
    return None if works() else f"{PYTHON} cannot import torchvision after installing it"


def image_dirs(www):
    """(ImageFolder root of the loose JPEGs, their pack set), both under the web root."""
    return os.path.join(www, "jpeg"), os.path.join(www, "jpeg-pack")


def ensure_images(args, ds, www):
    loose, packset = image_dirs(www)
    stamp = loose + ".done"
    spec = str(args.shared_images)
    if os.path.exists(stamp) and open(stamp).read() == spec:
        return loose, packset
    for p in (loose, packset):
        shutil.rmtree(p, ignore_errors=True)
    print(f"data: shared loader: {args.shared_images} JPEGs", flush=True)
    per = max(1, args.shared_images // len(CLASSES))
    with ds.building("shared: JPEGs and their pack set"):
        for i, (size, noise) in enumerate(CLASSES):
            d = os.path.join(loose, f"class{i}")
            os.makedirs(d)
            sh(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i",
                f"testsrc2=s={size}:r=25,noise=alls={noise}:allf=t+u", "-frames:v", str(per),
                "-q:v", "4", os.path.join(d, "img%05d.jpg")])
        sh([os.path.join(args.build, "mkpack"), "pack", "--no-fsync", loose, packset],
           stderr=subprocess.DEVNULL)
    with open(stamp, "w") as f:
        f.write(spec)
    return loose, packset


def epoch(root, seed, budget):
    p = subprocess.run([PYTHON, LOADER, root, "--seed", str(seed), "--budget", str(budget)],
                       capture_output=True, text=True, timeout=budget + 300)
    if p.returncode != 0 or not p.stdout.strip():
        return None, p.stderr.strip()[-500:]
    return json.loads(p.stdout.splitlines()[-1]), None


def run(args, work, ds, rows, www, contenders, proxy):
    """contenders: bench_shared.Contender objects (kind "dir") over the JPEGs, named; returns
    what broke."""
    if args.quick or args.shared_loader == "off":
        return []
    why = torchvision_ready(args)
    if why:
        print(f"shared loader: not available: {why}", flush=True)
        for c in contenders:
            rows.append({"bench": "shared-loader", "contender": c.name,
                         "dead": f"not available: {why}"})
        return []
    loose, _ = ensure_images(args, ds, www)
    files = sorted(os.path.relpath(os.path.join(dp, f), loose)
                   for dp, _, fs in os.walk(loose) for f in fs)
    rows.append({"bench": "shared-loader-meta", "images": len(files), "classes": len(CLASSES),
                 "bytes": sum(os.path.getsize(os.path.join(loose, f)) for f in files)})
    lst = os.path.join(work, "shared", "lists", "jpeg-check.txt")
    with open(lst, "w") as f:
        f.write("\n".join(files[::max(1, len(files) // 300)]) + "\n")
    broken = []
    budget = 3 * args.shared_budget
    for c in contenders:  # bytes first, as everywhere
        if c.ready(args.mount_budget) is None:
            continue
        p = subprocess.run([os.path.join(args.build, "readfiles"), "--root", c.root, "--list",
                            lst, "--threads", "8", "--verify", loose], capture_output=True,
                           text=True)
        c.close()
        res = json.loads(p.stdout) if p.stdout.strip() else {"mismatches": 0, "errors": 1,
                                                              "files": 0}
        rows.append({"bench": "check", "contender": f"loader: {c.name}", **res})
        if res["mismatches"] or (c.ours and res["errors"]):
            broken.append(f"loader {c.name}: {res['mismatches']} wrong, {res['errors']} errors")
    if broken:
        return broken
    for r in range(args.repeat):
        for c in contenders[r % len(contenders):] + contenders[:r % len(contenders)]:
            if c.ready(args.mount_budget) is None:
                continue
            drop_caches()
            if getattr(c, "warm", False):  # the same files read once: the epoch finds them cached
                for f in files:
                    with open(os.path.join(c.root, f), "rb") as fh:
                        while fh.read(1 << 20):
                            pass
            before = proxy.counts()
            cpu0 = cpu_snapshot()
            res, err = epoch(c.root, r, budget)
            cpu = cpu_delta(cpu0, cpu_snapshot())
            after = proxy.counts()
            c.close()
            if res is None:
                row = {"bench": "shared-loader", "contender": c.name, "repeat": r,
                       "dead": f"the loader failed: {err}"}
                if c.ours:
                    broken.append(f"loader {c.name}: {err}")
            else:
                row = {"bench": "shared-loader", "contender": c.name, "repeat": r,
                       "storage": getattr(c, "storage", None), "role": c.role, **res,
                       "cpu": cpu,
                       "proxy": {"requests": after["chunks"] - before["chunks"]}
                       if after and before and c.via_proxy else None}
                if not res["complete"]:
                    row["too_slow"] = "too slow: %d images in %.0f s" % (res["images"],
                                                                         res["seconds"])
            rows.append(row)
            print(f"shared loader r{r} {c.name:30s} " + (
                f"{res['images_per_s']:7.1f} images/s (scan {res['scan_seconds']:.2f} s)"
                if res else row["dead"]), flush=True)
    return broken
