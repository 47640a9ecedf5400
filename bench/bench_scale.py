"""Scale (issue 23): what mounting a remote pack set costs as the set grows. Pack sets of 10 and
--scale-shards shards (one 16-byte member each, so the shard count is what grows; written by
`mkpack pack --files-from --max-members 1`, no loose files) on nginx behind
tests/support/delay_proxy.py holding every request --scale-delay-ms (20). For each, packfs is
started on the set's URL and timed until a `stat` of a member answers, with the catalog not
cached (an empty --cache-dir) and cached (the second mount: a conditional GET); the proxy counts
the requests and bytes sent until then. What should hold: the requests at mount do not depend on
the number of shards.

Only a failed mount or a wrong listing raises Broken; speed never does.
"""
import os
import shutil
import subprocess
import time

from bench_remote import Servers
from common import Broken, drop_caches, unmount
from bench_mount import vm_hwm_kib

PROBE = "d0000/0000000.bin"


def ensure_shards_set(args, www, shards, ds):
    """www/shards-N/media: N shards of one 16-byte member each, with its catalog."""
    d = os.path.join(www, f"shards-{shards}", "media")
    done = d + ".done"
    if os.path.exists(done):
        return d
    shutil.rmtree(os.path.dirname(d), ignore_errors=True)
    os.makedirs(os.path.dirname(d))
    tiny = os.path.join(www, "..", "tiny.bin")
    with open(tiny, "wb") as f:
        f.write(b"0123456789abcdef")
    lst = os.path.join(www, "..", f"shards-{shards}.list")
    with open(lst, "w") as f:
        for i in range(shards):
            f.write("d%04d/%07d.bin\t%s\n" % (i // 1000, i, tiny))
    print(f"data: {shards} shards of one member", flush=True)
    t = time.perf_counter()
    with ds.building(f"{shards} shards"):
        subprocess.run([os.path.join(args.build, "mkpack"), "pack", "--no-fsync", "--max-members",
                        "1", "--files-from", lst, d], check=True, stdout=subprocess.DEVNULL)
    print(f"data: {shards} shards written in {time.perf_counter() - t:.1f} s", flush=True)
    open(done, "w").close()
    return d


def mount_once(cmd, mnt, proxy, budget):
    """Starts a foreground packfs, waits for a stat of PROBE; the time, the proxy's requests
    and response bytes until then, and the daemon's peak RSS."""
    unmount(mnt)
    os.makedirs(mnt, exist_ok=True)
    before = proxy.counts()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd + [mnt], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while True:
            try:
                os.stat(os.path.join(mnt, PROBE))
                break
            except OSError:
                pass
            if p.poll() is not None:
                raise Broken("scale: " + " ".join(cmd) + " failed: " +
                             p.stderr.read().decode(errors="replace").strip())
            if time.perf_counter() - t0 > budget:
                raise Broken(f"scale: {' '.join(cmd)}: no stat answer in {budget:.0f} s")
            time.sleep(0.002)
        first = time.perf_counter() - t0
        after = proxy.counts()
        rss = vm_hwm_kib(p.pid)
        entries = int(subprocess.run(f"ls '{mnt}/d0000' | wc -l", shell=True, check=True,
                                     capture_output=True, text=True).stdout)
        return {"first_stat_s": first, "requests": after["chunks"] - before["chunks"],
                "response_bytes": after["response_bytes"] - before["response_bytes"],
                "rss_mib": rss / 1024 if rss else None, "d0000_entries": entries}
    finally:
        unmount(mnt)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def bench_scale(args, work, ds, rows):
    d = os.path.join(work, "scale")
    www = os.path.join(d, "www")
    os.makedirs(www, exist_ok=True)
    counts = sorted({10, args.scale_shards})
    sets = {n: ensure_shards_set(args, www, n, ds) for n in counts}
    srv = Servers(www, os.path.join(d, "servers"), args.scale_delay_ms)
    packfs = os.path.join(args.build, "packfs")
    mnt = os.path.join(work, "mnt", "scale")
    try:
        for r in range(args.repeat):
            for n in counts:
                catalog = os.path.join(sets[n], ".packfs-catalog.sqlite")
                cache = os.path.join(d, f"catalogs-{n}")
                shutil.rmtree(cache, ignore_errors=True)
                for state in ("not cached", "cached"):
                    drop_caches()
                    cmd = [packfs, "-f", "--cache-dir", cache, f"{srv.url}/shards-{n}/media"]
                    res = mount_once(cmd, mnt, srv.proxy, args.mount_budget)
                    if res["d0000_entries"] != min(n, 1000):
                        raise Broken(f"scale: {n} shards: d0000 lists {res['d0000_entries']} "
                                     f"entries, not {min(n, 1000)}")
                    rows.append({"bench": "scale", "what": "remote mount", "shards": n,
                                 "catalog": state, "catalog_bytes": os.path.getsize(catalog),
                                 "delay_ms": args.scale_delay_ms, "repeat": r, **res})
                    print(f"scale r{r} {n:7d} shards, catalog {state:10s}: first stat "
                          f"{res['first_stat_s']:6.3f} s, {res['requests']} requests, "
                          f"{res['response_bytes'] / 1e6:7.2f} MB, RSS "
                          f"{res['rss_mib'] or 0:6.1f} MiB", flush=True)
    finally:
        srv.stop()
