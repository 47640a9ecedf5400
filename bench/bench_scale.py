"""Scale (issue 23): what mounting a remote pack set costs as the set grows. Pack sets of 10 and
--scale-shards shards (one 16-byte member each, so the shard count is what grows; written by
`mkpack pack --files-from --max-members 1`, no loose files) on nginx behind
tests/support/delay_proxy.py holding every request --scale-delay-ms (20). For each, packfs is
started on the set's URL and timed until a `stat` of a member answers, with the catalog not
cached (an empty --cache-dir) and cached (the second mount: a conditional GET); the proxy counts
the requests and bytes sent until then. What should hold: the requests at mount do not depend on
the number of shards.

A large set on one machine: --scale-members (10,000,000) 16-byte members in
--scale-member-shards (100,000) shards, written the same way (directories of 1,000). Measured:
`mkpack catalog` building its catalog afresh, the catalog's bytes per member, then a local mount
cold (page cache dropped): first `stat` and the daemon's RSS then (VmHWM, and RssAnon: its own
memory without the mapped catalog pages, which are page cache), 10,000 `stat`s of random
paths (one thread), `find MNT | wc -l`, peak RSS; and the same mount under `ulimit -n 1024`
(first stat, the random stats, and a read of one member in each of 2,000 random shards).

A large catalog over the network: --scale-remote-members (1,000,000) members in 1,000 shards on
the same nginx and proxy, mounted with an empty --cache-dir twice: reading its catalog in place
(the default for a catalog over 1 MiB) and downloading it whole (--catalog-download-limit 0).
Measured: the first `stat` of a random member and the requests and bytes until then, then 200
`stat`s of other random members (cold: each a lookup of its directory and its name): GETs per
stat (average and most) and time per stat; and a listing of one directory of 1,000.

Only a failed mount, a wrong listing or wrong bytes raise Broken; speed never does.
"""
import os
import random
import shutil
import subprocess
import time
from contextlib import contextmanager

from bench_remote import Servers
from common import Broken, drop_caches, unmount
from bench_mount import vm_hwm_kib

PROBE = "d0000/0000000.bin"


def ensure_shards_set(args, www, shards, ds, members=None):
    """www/shards-N/media: N shards of one 16-byte member each, with its catalog; or `members`
    members in N shards (www/members-M-in-N/media). A set kept from an earlier run gets its
    catalog refreshed (`mkpack catalog`: rewritten in the current schema, rows reused)."""
    members = members or shards
    d = os.path.join(www, f"shards-{shards}" if members == shards else
                     f"members-{members}-in-{shards}", "media")
    done = d + ".done"
    if os.path.exists(done):
        subprocess.run([os.path.join(args.build, "mkpack"), "catalog", d], check=True,
                       stdout=subprocess.DEVNULL)
        return d
    shutil.rmtree(os.path.dirname(d), ignore_errors=True)
    os.makedirs(os.path.dirname(d))
    tiny = os.path.join(www, "..", "tiny.bin")
    with open(tiny, "wb") as f:
        f.write(b"0123456789abcdef")
    lst = os.path.join(www, "..", "members.list")
    with open(lst, "w") as f:
        for i in range(members):
            f.write("d%04d/%07d.bin\t%s\n" % (i // 1000, i, tiny))
    per_shard = -(-members // shards)
    print(f"data: {members} members in {shards} shards", flush=True)
    t = time.perf_counter()
    with ds.building(f"{members} members in {shards} shards"):
        subprocess.run([os.path.join(args.build, "mkpack"), "pack", "--no-fsync", "--max-members",
                        str(per_shard), "--files-from", lst, d], check=True,
                       stdout=subprocess.DEVNULL)
    os.remove(lst)
    print(f"data: written in {time.perf_counter() - t:.1f} s", flush=True)
    open(done, "w").close()
    return d


@contextmanager
def started(cmd, mnt, budget, probe=PROBE):
    """Runs `cmd` (a foreground packfs ending with MNT) until a stat of `probe` answers; yields
    (its process, the seconds that took), then unmounts and reaps it."""
    unmount(mnt)
    os.makedirs(mnt, exist_ok=True)
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
                raise Broken("scale: " + " ".join(cmd) + " failed: " +
                             p.stderr.read().decode(errors="replace").strip())
            if time.perf_counter() - t0 > budget:
                raise Broken(f"scale: {' '.join(cmd)}: no stat answer in {budget:.0f} s")
            time.sleep(0.002)
        yield p, time.perf_counter() - t0
    finally:
        unmount(mnt)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def daemon_state(p):
    """What a failed stat says about the daemon `p` (a Popen with stderr piped)."""
    if p.poll() is None:
        return "packfs still runs"
    return (f"packfs exited with status {p.returncode}: "
            + p.stderr.read().decode(errors="replace").strip()[-2000:])


def mount_once(cmd, mnt, proxy, budget):
    """The time to the first stat, the proxy's requests and response bytes until then, and the
    daemon's peak RSS."""
    before = proxy.counts() or {}
    with started(cmd + [mnt], mnt, budget) as (p, first):
        after = proxy.counts() or {}
        rss = vm_hwm_kib(p.pid)
        entries = int(subprocess.run(f"ls '{mnt}/d0000' | wc -l", shell=True, check=True,
                                     capture_output=True, text=True).stdout)
    return {"first_stat_s": first, "requests": after.get("chunks", 0) - before.get("chunks", 0),
            "response_bytes": (after.get("response_bytes", 0) -
                               before.get("response_bytes", 0)),
            "rss_mib": rss / 1024 if rss else None, "d0000_entries": entries}


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
        remote_catalog(args, d, www, srv, ds, rows)
    finally:
        srv.stop()
    local_large(args, work, ds, rows)


def chunks(proxy):
    """The proxy's request count so far, or None when it did not answer."""
    c = proxy.counts()
    return None if c is None else c["chunks"]


def remote_catalog(args, d, www, srv, ds, rows):
    """A catalog of --scale-remote-members over the network: read in place, then whole."""
    members = args.scale_remote_members
    shards = max(1, members // 1000)
    media = ensure_shards_set(args, www, shards, ds, members=members)
    catalog_bytes = os.path.getsize(os.path.join(media, ".packfs-catalog.sqlite"))
    url = f"{srv.url}/{os.path.basename(os.path.dirname(media))}/media"
    packfs = os.path.join(args.build, "packfs")
    mnt = os.path.join(os.path.dirname(d), "mnt", "scale")
    rng = random.Random(29)
    for r in range(args.repeat):
        picks = [rng.randrange(members) for _ in range(201)]
        paths = ["d%04d/%07d.bin" % (i // 1000, i) for i in picks]
        for mode, extra in (("in place", []), ("whole", ["--catalog-download-limit", "0"])):
            cache = os.path.join(d, "catalogs-large")
            shutil.rmtree(cache, ignore_errors=True)
            drop_caches()
            cmd = [packfs, "-f", "--cache-dir", cache] + extra + [url, mnt]
            before = srv.proxy.counts() or {}
            with started(cmd, mnt, args.mount_budget, probe=paths[0]) as (p, first):
                opened = srv.proxy.counts() or {}
                gets, took = [], []
                for q in paths[1:]:
                    c0 = chunks(srv.proxy)
                    t = time.perf_counter()
                    try:
                        os.stat(os.path.join(mnt, q))
                    except OSError as e:
                        raise Broken(f"scale: stat {q} on the {members}-member set ({mode}): "
                                     f"{e.strerror}; {daemon_state(p)}")
                    took.append(time.perf_counter() - t)
                    c1 = chunks(srv.proxy)
                    if c0 is not None and c1 is not None:
                        gets.append(c1 - c0)
                t = time.perf_counter()
                entries = len(os.listdir(os.path.join(mnt, "d%04d" % (picks[0] // 1000 + 1))))
                list_s = time.perf_counter() - t
                if entries != min(1000, members - (picks[0] // 1000 + 1) * 1000):
                    raise Broken(f"scale: a directory of the {members}-member set lists "
                                 f"{entries} entries")
                rss = (vm_hwm_kib(p.pid) or 0) / 1024
            # A proxy too loaded to answer a snapshot in time (a busy CI machine) costs counts,
            # never the run.
            res = {"first_stat_s": first,
                   "requests": opened.get("chunks", 0) - before.get("chunks", 0),
                   "response_bytes": (opened.get("response_bytes", 0) -
                                      before.get("response_bytes", 0)),
                   "stat_gets_avg": sum(gets) / len(gets) if gets else 0,
                   "stat_gets_max": max(gets) if gets else 0,
                   "stat_ms_avg": 1000 * sum(took) / len(took), "list_s": list_s,
                   "rss_mib": rss}
            rows.append({"bench": "scale", "what": "remote catalog", "members": members,
                         "shards": shards, "catalog": mode, "catalog_bytes": catalog_bytes,
                         "delay_ms": args.scale_delay_ms, "repeat": r, **res})
            print(f"scale r{r} {members} members, catalog {catalog_bytes / 1e6:.1f} MB {mode:8s}: "
                  f"first stat {first:.3f} s, {res['requests']} requests, "
                  f"{res['response_bytes'] / 1e6:.2f} MB "
                  f"({100 * res['response_bytes'] / catalog_bytes:.1f}% of the catalog); "
                  f"cold stats {res['stat_gets_avg']:.2f} GETs avg, {res['stat_gets_max']} most, "
                  f"{res['stat_ms_avg']:.1f} ms; list 1,000 {list_s * 1000:.0f} ms; "
                  f"RSS {rss:.1f} MiB", flush=True)


def rss_anon_mib(pid):
    """The daemon's anonymous resident memory now (its own; mapped catalog pages are page
    cache, counted in RssFile), MiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def stat_rate(mnt, paths):
    """(stats per second, failures) of os.stat over `paths` in one thread."""
    failed = 0
    t = time.perf_counter()
    for p in paths:
        try:
            os.stat(os.path.join(mnt, p))
        except OSError:
            failed += 1
    return len(paths) / (time.perf_counter() - t), failed


def local_large(args, work, ds, rows):
    d = os.path.join(work, "scale")
    members, shards = args.scale_members, args.scale_member_shards
    media = ensure_shards_set(args, os.path.join(d, "www"), shards, ds, members=members)
    catalog = os.path.join(media, ".packfs-catalog.sqlite")
    mkpack = os.path.join(args.build, "mkpack")
    packfs = os.path.join(args.build, "packfs")
    mnt = os.path.join(work, "mnt", "scale")
    rng = random.Random(23)
    probe_paths = ["d%04d/%07d.bin" % (i // 1000, i) for i in
                   (rng.randrange(members) for _ in range(10000))]
    per_shard = -(-members // shards)
    read_paths = ["d%04d/%07d.bin" % (i // 1000, i) for i in
                  (s * per_shard for s in rng.sample(range(shards), min(2000, shards)))]
    for r in range(args.repeat):
        os.remove(catalog)
        drop_caches()
        t = time.perf_counter()
        subprocess.run([mkpack, "catalog", media], check=True, stdout=subprocess.DEVNULL)
        build_s = time.perf_counter() - t
        size = os.path.getsize(catalog)
        row = {"bench": "scale", "what": "local large", "members": members, "shards": shards,
               "repeat": r, "catalog_s": build_s, "catalog_bytes": size,
               "bytes_per_member": size / members}
        print(f"scale r{r} {members} members in {shards} shards: mkpack catalog {build_s:.1f} s, "
              f"{size / members:.1f} bytes per member", flush=True)
        for limit in (None, 1024):
            drop_caches()
            cmd = ([] if limit is None else ["prlimit", f"--nofile={limit}:{limit}"]) + \
                [packfs, "-f", media, mnt]
            tag = "" if limit is None else f"_nofile{limit}"
            with started(cmd, mnt, args.mount_budget) as (p, first):
                rss_first = (vm_hwm_kib(p.pid) or 0) / 1024
                row[f"rss_anon_first_mib{tag}"] = rss_anon_mib(p.pid)
                rate, failed = stat_rate(mnt, probe_paths)
                if failed:
                    raise Broken(f"scale: {failed} of {len(probe_paths)} stats failed")
                row.update({f"first_stat_s{tag}": first, f"rss_first_mib{tag}": rss_first,
                            f"stats_per_s{tag}": rate})
                if limit is None:
                    t1 = time.perf_counter()
                    found = int(subprocess.run(f"find '{mnt}' | wc -l", shell=True, check=True,
                                               capture_output=True, text=True).stdout)
                    want = members + -(-members // 1000) + 1
                    if found != want:
                        raise Broken(f"scale: find listed {found} entries, not {want}")
                    row.update(find_s=time.perf_counter() - t1,
                               rss_peak_mib=(vm_hwm_kib(p.pid) or 0) / 1024,
                               rss_anon_mib=rss_anon_mib(p.pid))
                else:
                    t1 = time.perf_counter()
                    for q in read_paths:
                        with open(os.path.join(mnt, q), "rb") as f:
                            if f.read() != b"0123456789abcdef":
                                raise Broken(f"scale: {q} read wrong bytes under ulimit -n {limit}")
                    row.update({f"reads_per_s{tag}": len(read_paths) / (time.perf_counter() - t1),
                                f"rss_peak_mib{tag}": (vm_hwm_kib(p.pid) or 0) / 1024})
                print(f"scale r{r} local mount{'' if limit is None else f' (ulimit -n {limit})'}: "
                      f"first stat {first:.3f} s, RSS {rss_first:.1f} MiB, {rate:.0f} stats/s"
                      + (f", find {row['find_s']:.1f} s, peak RSS {row['rss_peak_mib']:.1f} MiB"
                         if limit is None else
                         f", {row[f'reads_per_s{tag}']:.0f} reads/s over {len(read_paths)} shards"),
                      flush=True)
        rows.append(row)
