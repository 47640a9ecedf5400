"""Mount start and memory vs member count (issue 4, part 3): time from starting the daemon until
a `stat` of a member answers, the daemon's peak RSS (VmHWM) then and after `find MNT | wc -l`, and
the time of that find and the CPU it took (find's own, which is mostly the kernel making a dentry
and an inode for each entry a READDIRPLUS hands it, and the daemon's); packfs with its catalog
and with `--catalog none` (index the shards at mount), and fuse-zip on one zip of the same members where it finishes within --mount-budget.
A find that runs past --find-budget is recorded as too slow once; later repeats of that
contender and member count measure the first stat only (fuse-zip on 1M members).

The member sets hold one 16-byte file under n keys in directories of 1000 (d0000/0000000.bin ...):
what is measured is the index, not the data."""
import os
import resource
import shutil
import subprocess
import time
from contextlib import nullcontext

from common import Broken, drop_caches, proc_cpu_s, sh, unmount, uring_enabled


def ensure_members_set(args, work, n, one_zip=False, ds=None):
    """A pack set of n tiny members (with catalog), or with one_zip one zip holding them all."""
    name = f"members-{n}" + ("-one" if one_zip else "")
    d = os.path.join(work, name, "media")
    done = d + ".done"
    if os.path.exists(done):
        return d
    shutil.rmtree(os.path.dirname(d), ignore_errors=True)
    os.makedirs(os.path.dirname(d))
    tiny = os.path.join(work, "tiny.bin")
    with open(tiny, "wb") as f:
        f.write(b"0123456789abcdef")
    lst = os.path.join(work, f"members-{n}.list")
    with open(lst, "w") as f:
        for i in range(n):
            f.write("d%04d/%07d.bin\t%s\n" % (i // 1000, i, tiny))
    print(f"data: {n} members" + (" in one zip" if one_zip else ""), flush=True)
    cmd = [os.path.join(args.build, "mkpack"), "pack", "--no-fsync", "--files-from", lst, d]
    if one_zip:
        cmd[3:3] = ["--no-catalog", "--max-members", "100000000"]
    with ds.building(f"{n} members" + (" (one zip)" if one_zip else "")) if ds else nullcontext():
        sh(cmd, stderr=subprocess.DEVNULL)
    open(done, "w").close()
    return d


def children_cpu_s():
    """User + system CPU seconds of this process's waited-for children (and theirs)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def measure_mount(cmd, mnt, probe, budget, find_budget):
    """Starts a foreground daemon; returns the figures, or {"too_slow": ...} / {"failed": ...}.
    find_budget 0: no find."""
    unmount(mnt)
    os.makedirs(mnt, exist_ok=True)
    drop_caches()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while True:
            try:
                os.stat(os.path.join(mnt, probe))
                break
            except OSError:
                pass
            if p.poll() is not None:
                return {"failed": p.stderr.read().decode(errors="replace").strip()}
            if time.perf_counter() - t0 > budget:
                return {"too_slow": f"too slow: no stat answer in {budget:.0f} s"}
            time.sleep(0.002)
        first = time.perf_counter() - t0
        rss_first = vm_hwm_kib(p.pid)
        res = {"first_stat_s": first, "rss_first_mib": rss_first / 1024 if rss_first else None}
        if find_budget:
            t1 = time.perf_counter()
            cpu0, daemon0 = children_cpu_s(), proc_cpu_s(p.pid)
            try:
                found = int(subprocess.run(f"find '{mnt}' | wc -l", shell=True, check=True,
                                           capture_output=True, text=True,
                                           timeout=find_budget).stdout)
                res.update(find_s=time.perf_counter() - t1, find_entries=found,
                           find_cpu_s=children_cpu_s() - cpu0)
                daemon1 = proc_cpu_s(p.pid)
                if daemon0 is not None and daemon1 is not None:
                    res["find_daemon_cpu_s"] = daemon1 - daemon0
            except subprocess.TimeoutExpired:
                res.update(find_s=None, find_too_slow=f"too slow: find not done in "
                           f"{find_budget:.0f} s")
            res["rss_peak_mib"] = (vm_hwm_kib(p.pid) or 0) / 1024
        return res
    finally:
        unmount(mnt)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def bench_mount(args, work, ds, rows):
    with uring_enabled() as uring:
        _bench_mount(args, work, ds, rows, uring)


def _bench_mount(args, work, ds, rows, uring):
    packfs = os.path.join(args.build, "packfs")
    mnt = os.path.join(work, "mnt", "start")
    probe = "d0000/0000000.bin"
    for n in args.members:
        d = ensure_members_set(args, work, n, ds=ds)
        one = os.path.join(ensure_members_set(args, work, n, one_zip=True, ds=ds),
                           "pack-0000.zip")
        # n files, n // 1000 directories (rounded up), and the mount point itself.
        entries = n + (n + 999) // 1000 + 1
        # Through /dev/fuse but the io_uring one (enable_uring is on for the run).
        contenders = {"packfs (catalog)": [packfs, "-f", "-o", "noio_uring", d, mnt],
                      "packfs --catalog none": [packfs, "-f", "-o", "noio_uring",
                                                "--catalog", "none", d, mnt],
                      "fuse-zip": ["fuse-zip", "-f", "-r", one, mnt]}
        if uring:  # FUSE over io_uring (packfs -o io_uring)
            contenders["packfs (catalog) -o io_uring"] = [packfs, "-f", "-o", "io_uring", d, mnt]
        slow, find_slow = set(), set()
        for r in range(args.repeat):
            for name, cmd in contenders.items():
                if name in slow:
                    continue
                res = measure_mount(cmd, mnt, probe, args.mount_budget,
                                    0 if name in find_slow else args.find_budget)
                rows.append({"bench": "mount", "members": n, "contender": name, "repeat": r, **res})
                if name.startswith("packfs") and ("failed" in res or res.get(
                        "find_entries", entries) != entries):
                    raise Broken(f"mount: {name} on {n} members: " + res.get(
                        "failed", f"find listed {res.get('find_entries')} entries, not {entries}"))
                if "first_stat_s" not in res:
                    slow.add(name)
                    print(f"mount {n:8d} r{r} {name:22s} {res}", flush=True)
                    continue
                if res.get("find_too_slow"):
                    find_slow.add(name)
                print(f"mount {n:8d} r{r} {name:22s} first stat {res['first_stat_s']:7.3f} s "
                      f"RSS {res['rss_first_mib'] or 0:7.1f} MiB, find {res.get('find_s') or -1:7.2f} s"
                      f" ({res.get('find_entries')} entries) peak RSS "
                      f"{res.get('rss_peak_mib') or 0:7.1f} MiB", flush=True)
