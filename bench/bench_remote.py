"""Remote pack sets with latency (issue 8): nginx serves generated pack sets on loopback behind
tests/support/delay_proxy.py, which holds every request --remote-delay-ms (20) before nginx sees
it, as a distant server would. Every contender goes through the same proxy; side by side in one
run, bytes checked before measuring:

- small: --remote-files files of 64-256 KiB read whole in shuffled order by 8 threads, cold:
  raw ranged GETs of each member's data range (Python http.client, one keep-alive connection
  per thread; the sockets' reads release the GIL, so Python is not the limit at 8 x 20 ms)
  vs a packfs mount of the URL read by bench/readfiles with 8 threads. Ratio packfs / raw.
- large: one --remote-large-mib MiB member read sequentially, cold: `curl -r` of its exact byte
  range vs 1 MiB read(2)s of MNT/member. Ratio packfs / curl. Then again with the server's page
  cache warm, beside `curl -r` piped to a reader (1 MiB reads of the pipe): curl's bytes handed
  to another process through the kernel, as a mount's are (a reference, not a bound: curl
  writes its small buffers one by one), and packfs with -o io_uring where the kernel has it.
- disk cache (when packfs has --disk-cache): the small-file read with --disk-cache DIR, first
  pass (empty DIR) and second pass (remounted, page cache dropped) vs the same read of a local
  mount of the same pack set. Ratio second pass / local.
- memory: the daemons' peak RSS (VmHWM) after their passes, beside --cache-size when packfs
  has that flag.

Only wrong bytes, a packfs mount failing, or read errors raise Broken; speed never does.
"""
import http.client
import json
import os
import random
import select
import shutil
import socket
import subprocess
import sys
import threading
import time

from common import (ROOT, Broken, drop_caches, is_mounted, make_small_files, out, sh,
                    stop_process, unmount, uring_enabled)

PROXY = os.path.join(ROOT, "tests", "support", "delay_proxy.py")
CHECK_FILES = 300  # small files compared byte for byte per contender before measuring


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, budget):
    end = time.perf_counter() + budget
    while time.perf_counter() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


class Proxy:
    """tests/support/delay_proxy.py in front of 127.0.0.1:upstream_port, holding every client
    chunk delay_ms; counts() asks it for its totals (--counts). stop() ends it."""

    def __init__(self, upstream_port, d, delay_ms, name="proxy"):
        os.makedirs(d, exist_ok=True)
        pf = os.path.join(d, name + ".port")
        if os.path.exists(pf):
            os.remove(pf)
        err = os.path.join(d, name + ".err")
        self.p = subprocess.Popen([sys.executable, PROXY, "--delay-ms", str(delay_ms),
                                   "--counts", str(upstream_port), pf],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                  stderr=open(err, "w"))
        self.asked = self.answered = 0
        end = time.perf_counter() + 30
        while not os.path.exists(pf):
            if self.p.poll() is not None or time.perf_counter() > end:
                self.stop()
                raise Broken("delay_proxy.py did not come up: " + open(err).read())
            time.sleep(0.02)
        self.port = int(open(pf).read())

    def counts(self):
        """The proxy's totals so far: connections, chunks (client chunks held: requests),
        chunk_bytes, response_bytes, heads (chunks by HTTP method). None if it does not answer
        in 10 s (a loaded machine costs counts, never the run); a late answer is skipped."""
        self.asked += 1
        try:
            self.p.stdin.write(b"?\n")
            self.p.stdin.flush()
        except OSError:
            return None
        end = time.perf_counter() + 10
        while self.answered < self.asked:
            left = end - time.perf_counter()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                return None
            line = self.p.stdout.readline()
            if not line:
                return None
            self.answered += 1
        try:
            return json.loads(line)
        except ValueError:
            return None

    def stop(self):
        stop_process(self.p)
        self.p.stdin.close()
        self.p.stdout.close()


class Servers:
    """nginx serving `root` and the delay proxy in front of it; stop() ends both. autoindex:
    nginx lists directories as HTML (what rclone's http remote reads)."""

    def __init__(self, root, d, delay_ms, autoindex=False):
        self.procs = []
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.access(nginx, os.X_OK):
            raise Broken("remote: nginx is not installed (scripts/install-deps.sh installs it)")
        os.makedirs(d, exist_ok=True)
        index = " autoindex on;" if autoindex else ""
        for _ in range(3):
            self.nginx_port = free_port()
            with open(os.path.join(d, "nginx.conf"), "w") as f:
                f.write(f"""daemon off; master_process off; pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 1024; }}
http {{
  default_type application/octet-stream; access_log off; sendfile on;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  keepalive_requests 1000000; keepalive_timeout 300s;
  server {{ listen 127.0.0.1:{self.nginx_port}; root {root};{index} }}
}}
""")
            p = subprocess.Popen(["nginx" if shutil.which("nginx") else nginx, "-p", d, "-c",
                                  f"{d}/nginx.conf", "-e", f"{d}/error.log"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if wait_port(self.nginx_port, 10):
                self.procs.append(p)
                break
            p.kill()
            p.wait()
        else:
            raise Broken("remote: nginx did not come up: " + open(f"{d}/error.log").read())
        try:
            self.proxy = Proxy(self.nginx_port, d, delay_ms)
        except Broken as e:
            self.stop()
            raise Broken(f"remote: {e}")
        self.procs.append(self.proxy.p)
        self.proxy_port = self.proxy.port
        self.url = f"http://127.0.0.1:{self.proxy_port}"

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


class Daemon:
    """packfs in the foreground as our child (so its pid gives VmHWM); unmounts on close()."""

    def __init__(self, cmd, mnt, budget):
        unmount(mnt)
        os.makedirs(mnt, exist_ok=True)
        self.mnt = mnt
        self.p = subprocess.Popen(cmd[:1] + ["-f"] + cmd[1:] + [mnt],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        end = time.perf_counter() + budget
        while not is_mounted(mnt):
            if self.p.poll() is not None:
                raise Broken(f"remote: {' '.join(cmd)} failed to mount: " +
                             self.p.stderr.read().decode(errors="replace").strip())
            if time.perf_counter() > end:
                self.close()
                raise Broken(f"remote: {' '.join(cmd)} not mounted after {budget:.0f} s")
            time.sleep(0.01)

    def vm_hwm(self):
        """Peak resident bytes of the daemon so far."""
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return None

    def close(self):
        unmount(self.mnt)
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def ensure_data(args, work, ds):
    """(loose small-file dir, loose big file, web root with media/ and large/ pack sets)."""
    d = os.path.join(work, "remote")
    src, big, www = os.path.join(d, "src"), os.path.join(d, "bigsrc", "big.bin"), \
        os.path.join(d, "www")
    spec = f"{args.remote_files} {args.remote_large_mib}"
    stamp = os.path.join(d, "done")
    if os.path.exists(stamp) and open(stamp).read() == spec:
        return src, big, www
    sh(["rm", "-rf", d])
    print(f"data: remote: {args.remote_files} files of 64-256 KiB, one member of "
          f"{args.remote_large_mib} MiB", flush=True)
    mkpack = os.path.join(args.build, "mkpack")
    with ds.building("remote pack sets"):
        make_small_files(src, args.remote_files, 64 << 10, 256 << 10, seed=8)
        os.makedirs(os.path.dirname(big))
        os.makedirs(www)
        block = os.urandom(16 << 20)
        with open(big, "wb") as f:
            for i in range((args.remote_large_mib + 15) // 16):
                f.write(block[i % 11:] + block[:i % 11])  # no two 16 MiB blocks alike
            f.truncate(args.remote_large_mib << 20)
        for what, to in ((src, "media"), (os.path.dirname(big), "large")):
            sh([mkpack, "pack", "--no-fsync", what, os.path.join(www, to)],
               stderr=subprocess.DEVNULL)
    with open(stamp, "w") as f:
        f.write(spec)
    return src, big, www


def extents(args, packdir):
    """key -> (shard path relative to the web root, data offset, size) from `mkpack ls`."""
    res = {}
    for line in out([os.path.join(args.build, "mkpack"), "ls", "--json", packdir]).splitlines():
        m = json.loads(line)
        res[m["key"]] = (m["shard"], m["offset"], m["size"])
    return res


def raw_gets(port, items, threads, budget, verify_root=None):
    """Ranged GETs of items [(key, shard, offset, size)] by `threads` threads, each with one
    keep-alive connection, taking the next item from a shared index (in list order). Returns a
    dict like readfiles's JSON. verify_root: compare each body with the loose file."""
    lock = threading.Lock()
    nxt = [0]
    tally = {"files": 0, "bytes": 0, "errors": 0, "mismatches": 0}
    t0 = time.perf_counter()
    deadline = t0 + budget

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        buf = bytearray(1 << 20)
        mv = memoryview(buf)
        files = nbytes = errors = bad = 0
        while time.perf_counter() < deadline:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(items):
                break
            key, shard, off, size = items[i]
            try:
                conn.request("GET", "/" + shard,
                             headers={"Range": f"bytes={off}-{off + size - 1}"})
                resp = conn.getresponse()
                got = 0
                body = bytearray() if verify_root else None
                while True:
                    n = resp.readinto(mv)
                    if not n:
                        break
                    got += n
                    if body is not None:
                        body += mv[:n]
                if resp.status != 206 or got != size:
                    errors += 1
                    continue
                if body is not None:
                    with open(os.path.join(verify_root, key), "rb") as f:
                        bad += f.read() != body
                files += 1
                nbytes += got
            except (OSError, http.client.HTTPException):
                errors += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.close()
        with lock:
            for k, v in (("files", files), ("bytes", nbytes), ("errors", errors),
                         ("mismatches", bad)):
                tally[k] += v

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    secs = time.perf_counter() - t0
    return {**tally, "seconds": secs, "files_per_s": tally["files"] / secs,
            "mib_per_s": tally["bytes"] / secs / 2**20, "listed": len(items),
            "complete": tally["files"] + tally["errors"] == len(items)}


def readfiles(args, root, lst, threads, budget, verify=None):
    cmd = [os.path.join(args.build, "readfiles"), "--root", root, "--list", lst, "--threads",
           str(threads), "--budget", str(budget)]
    if verify:
        cmd += ["--verify", verify]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget + 120)
    if p.returncode not in (0, 1, 3) or not p.stdout.strip():
        raise Broken(f"remote: readfiles on {root} failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def read_seq(path, budget):
    """1 MiB read(2)s from the start to EOF (or the budget); (bytes, seconds, complete)."""
    buf = bytearray(1 << 20)
    n = 0
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while True:
            k = f.readinto(buf)
            if not k:
                return n, time.perf_counter() - t0, True
            n += k
            if time.perf_counter() - t0 > budget:
                return n, time.perf_counter() - t0, False


def curl_range(url, off, size, budget, dest="/dev/null"):
    """`curl -r` of bytes [off, off+size) into dest; (bytes, seconds, complete)."""
    t0 = time.perf_counter()
    p = subprocess.run(["curl", "-sS", "--max-time", str(int(budget) + 1), "-r",
                        f"{off}-{off + size - 1}", "-o", dest, "-w", "%{size_download}", url],
                       capture_output=True, text=True)
    t = time.perf_counter() - t0
    n = int(float(p.stdout or 0))
    if p.returncode not in (0, 28):  # 28: --max-time reached (too slow, not broken)
        raise Broken(f"remote: curl {url} failed: {p.stderr.strip()}")
    return n, t, n == size


def curl_pipe(url, off, size, budget):
    """`curl -r` of bytes [off, off+size) to stdout, read from a pipe with 1 MiB read(2)s, as
    read_seq reads a mount: the network path with its bytes handed to another process through
    the kernel (curl's write plus the reader's read), as a mount's bytes are (the daemon's
    write to /dev/fuse plus the reader's read of the page cache). (bytes, seconds, complete)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(["curl", "-sS", "--max-time", str(int(budget) + 1), "-r",
                          f"{off}-{off + size - 1}", url], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    buf = bytearray(1 << 20)
    n = 0
    fd = p.stdout.fileno()
    while True:
        k = os.readv(fd, [buf])
        if not k:
            break
        n += k
    err = p.stderr.read().decode(errors="replace")
    rc = p.wait()
    t = time.perf_counter() - t0
    if rc not in (0, 28):  # 28: --max-time reached (too slow, not broken)
        raise Broken(f"remote: curl {url} failed: {err.strip()}")
    return n, t, n == size


def packfs_help(args):
    return subprocess.run([os.path.join(args.build, "packfs"), "--help"], capture_output=True,
                          text=True).stdout


def bench_remote(args, work, ds, rows):
    src, big, www = ensure_data(args, work, ds)
    d = os.path.join(work, "remote")
    helptext = packfs_help(args)
    has_disk = "--disk-cache" in helptext
    has_cache_size = "--cache-size" in helptext
    srv = Servers(www, os.path.join(d, "servers"), args.remote_delay_ms)
    packfs = os.path.join(args.build, "packfs")
    common = ["--cache-dir", os.path.join(d, "catalogs")]
    if has_cache_size:
        common += ["--cache-size", args.remote_cache_size]
    # The same with packfs's default --cache-size (what a user gets).
    default_cache = [a for a in common if a not in ("--cache-size", args.remote_cache_size)]
    mnt = os.path.join(work, "mnt", "remote")
    broken = []
    daemons = []

    def mount(cmd):
        dm = Daemon(cmd, mnt, args.mount_budget)
        daemons.append(dm)
        return dm

    def done(dm, what, cache_size=args.remote_cache_size if has_cache_size else None):
        hwm = dm.vm_hwm()
        dm.close()
        daemons.remove(dm)
        rows.append({"bench": "remote", "what": "memory", "contender": what, "vm_hwm": hwm,
                     "cache_size": cache_size})
        return hwm

    try:
        ext = extents(args, os.path.join(www, "media"))
        order = sorted(ext)
        random.Random(4).shuffle(order)
        items = [(k, *ext[k]) for k in order]
        lst = os.path.join(d, "order.txt")
        with open(lst, "w") as f:
            f.write("\n".join(order) + "\n")
        check_lst = os.path.join(d, "check.txt")
        with open(check_lst, "w") as f:
            f.write("\n".join(order[:CHECK_FILES]) + "\n")
        rows.append({"bench": "remote-meta", "files": len(order),
                     "bytes": sum(e[2] for e in ext.values()), "delay_ms": args.remote_delay_ms,
                     "large_bytes": os.path.getsize(big), "disk_cache": has_disk,
                     "cache_size": args.remote_cache_size if has_cache_size else None,
                     "disk_cache_size": args.remote_disk_cache_size if has_disk else None})
        remote_cmd = [packfs] + common + [srv.url + "/media"]
        local_cmd = [packfs, os.path.join(www, "media")]
        disk_dir = os.path.join(d, "disk-cache")
        disk_cmd = remote_cmd[:1] + ["--disk-cache", disk_dir, "--disk-cache-size",
                                     args.remote_disk_cache_size] + remote_cmd[1:]
        budget = args.remote_budget

        # Byte checks (untimed) of every contender.
        res = raw_gets(srv.proxy_port, items[:CHECK_FILES], 8, 10 * budget, verify_root=src)
        checks = [("raw ranged GETs", res)]
        mounts = [("packfs", remote_cmd), ("packfs (local)", local_cmd)]
        if has_disk:
            shutil.rmtree(disk_dir, ignore_errors=True)
            mounts.append(("packfs --disk-cache", disk_cmd))
        for name, cmd in mounts:
            dm = mount(cmd)
            checks.append((name, readfiles(args, mnt, check_lst, 8, 10 * budget, verify=src)))
            done(dm, name + " (check)")
        for name, res in checks:
            rows.append({"bench": "check", "contender": "remote: " + name, **res})
            print(f"check remote {name:22s} {res['files']} files compared, {res['mismatches']} "
                  f"wrong, {res['errors']} read errors", flush=True)
            if res["mismatches"] or res["errors"] or not res["complete"]:
                broken.append(f"{name}: {res['mismatches']} wrong, {res['errors']} errors, "
                              f"{res['files']} of {res['listed']} read")
        off, size = next(iter(extents(args, os.path.join(www, "large")).values()))[1:]
        large_url = srv.url + "/large/pack-0000.zip"
        tmp = os.path.join(d, "curl.out")
        n, _, ok = curl_range(large_url, off, size, 10 * budget, dest=tmp)
        if not ok or subprocess.run(["cmp", "-s", tmp, big]).returncode != 0:
            broken.append(f"curl -r of {large_url} differs from {big}")
        os.remove(tmp)
        dm = mount([packfs] + common + [srv.url + "/large"])
        try:
            p = subprocess.run(["cmp", big, os.path.join(mnt, "big.bin")], capture_output=True,
                               text=True, timeout=max(60, 10 * budget))
            if p.returncode != 0:
                broken.append(f"packfs large: {p.stdout.strip() or p.stderr.strip()}")
        except subprocess.TimeoutExpired:
            broken.append(f"packfs large: cmp of the member not done in {max(60, 10 * budget)} s")
        done(dm, "packfs large (check)")
        if broken:
            raise Broken("remote: " + "; ".join(broken))

        def small_row(what, name, r, res):
            rows.append({"bench": "remote", "what": what, "contender": name, "repeat": r, **res})
            print(f"remote {what} r{r} {name:28s} {res['files_per_s']:8.0f} files/s "
                  f"{res['mib_per_s']:7.1f} MiB/s" + ("" if res["complete"] else
                                                      f"  (too slow: {res['files']} files in "
                                                      f"{res['seconds']:.1f} s)"), flush=True)
            if res.get("errors") or res.get("mismatches"):
                broken.append(f"{name} {what} r{r}: {res.get('errors')} errors, "
                              f"{res.get('mismatches')} wrong")

        for r in range(args.repeat):
            # a. small files, 8 threads, cold (server side too: page cache dropped).
            drop_caches()
            small_row("small", "raw ranged GETs", r, raw_gets(srv.proxy_port, items, 8, budget))
            dm = mount(remote_cmd)
            drop_caches()
            small_row("small", "packfs", r, readfiles(args, mnt, lst, 8, budget))
            done(dm, "packfs small")
            # b. one large member, sequential, cold.
            drop_caches()
            n, t, ok = curl_range(large_url, off, size, budget)
            rows.append({"bench": "remote", "what": "large", "contender": "curl -r", "repeat": r,
                         "bytes": n, "seconds": t, "MBps": n / t / 1e6, "complete": ok})
            print(f"remote large r{r} {'curl -r':28s} {n / t / 1e6:8.1f} MB/s", flush=True)
            dm = mount([packfs] + common + [srv.url + "/large"])
            drop_caches()
            n, t, ok = read_seq(os.path.join(mnt, "big.bin"), budget)
            rows.append({"bench": "remote", "what": "large", "contender": "packfs", "repeat": r,
                         "bytes": n, "seconds": t, "MBps": n / t / 1e6, "complete": ok})
            print(f"remote large r{r} {'packfs (1 MiB reads)':28s} {n / t / 1e6:8.1f} MB/s"
                  + ("" if ok else f"  (too slow: {n >> 20} MiB in {t:.1f} s)"), flush=True)
            done(dm, "packfs large")
            # ... and with packfs's default --cache-size (what a user gets; a bigger cache
            # allows a bigger read-ahead window, which is what hides the round trips).
            dm = mount([packfs] + default_cache + [srv.url + "/large"])
            drop_caches()
            n, t, ok = read_seq(os.path.join(mnt, "big.bin"), budget)
            rows.append({"bench": "remote", "what": "large", "contender":
                         "packfs, default --cache-size", "repeat": r,
                         "bytes": n, "seconds": t, "MBps": n / t / 1e6, "complete": ok})
            print(f"remote large r{r} {'packfs, default cache':28s} {n / t / 1e6:8.1f} MB/s"
                  + ("" if ok else f"  (too slow: {n >> 20} MiB in {t:.1f} s)"), flush=True)
            done(dm, "packfs large, default cache", cache_size="default")
            # ... and again with the server's page cache warm (the file was just read): the
            # network path alone, where one curl stream is no longer bound by a cold disk.
            n, t, ok = curl_range(large_url, off, size, budget)
            rows.append({"bench": "remote", "what": "large, server warm", "contender": "curl -r",
                         "repeat": r, "bytes": n, "seconds": t, "MBps": n / t / 1e6,
                         "complete": ok})
            print(f"remote large r{r} {'curl -r (server warm)':28s} {n / t / 1e6:8.1f} MB/s",
                  flush=True)
            n, t, ok = curl_pipe(large_url, off, size, budget)
            rows.append({"bench": "remote", "what": "large, server warm",
                         "contender": "curl -r, piped to a reader", "repeat": r, "bytes": n,
                         "seconds": t, "MBps": n / t / 1e6, "complete": ok})
            print(f"remote large r{r} {'curl -r piped (warm)':28s} {n / t / 1e6:8.1f} MB/s",
                  flush=True)
            for name, cmd, cs in (
                    ("packfs", [packfs] + common, args.remote_cache_size),
                    ("packfs, default --cache-size", [packfs] + default_cache, "default")):
                dm = mount(cmd + [srv.url + "/large"])  # a new mount: its page cache is empty
                n, t, ok = read_seq(os.path.join(mnt, "big.bin"), budget)
                rows.append({"bench": "remote", "what": "large, server warm", "contender": name,
                             "repeat": r, "bytes": n, "seconds": t, "MBps": n / t / 1e6,
                             "complete": ok})
                print(f"remote large r{r} {name + ' (server warm)':28s} {n / t / 1e6:8.1f} MB/s"
                      + ("" if ok else f"  (too slow: {n >> 20} MiB in {t:.1f} s)"), flush=True)
                done(dm, f"{name} large, server warm", cache_size=cs if has_cache_size else None)
            # ... and over FUSE io_uring where the kernel has it (a mount takes the ring by
            # default there), recorded only when the mount did serve over the ring.
            with uring_enabled() as uring:
                if uring:
                    dm = mount([packfs, "-o", "io_uring"] + default_cache + [srv.url + "/large"])
                    n, t, ok = read_seq(os.path.join(mnt, "big.bin"), budget)
                    try:
                        st = json.loads(os.getxattr(mnt, "user.packfs.stats"))
                        used = bool(st.get("io_uring", {}).get("used"))
                    except (OSError, ValueError):
                        used = False
                    done(dm, "packfs -o io_uring large, server warm", cache_size="default")
                    if used:
                        rows.append({"bench": "remote", "what": "large, server warm",
                                     "contender": "packfs -o io_uring, default --cache-size",
                                     "repeat": r, "bytes": n, "seconds": t,
                                     "MBps": n / t / 1e6, "complete": ok})
                    print(f"remote large r{r} {'packfs -o io_uring (warm)':28s} "
                          + (f"{n / t / 1e6:8.1f} MB/s" if used else
                             "not over the ring (the kernel refused it)"), flush=True)
            # c. disk cache: first pass, remount, second pass; a local mount of the same set.
            dm = mount(local_cmd)
            drop_caches()
            small_row("disk-cache", "packfs (local)", r, readfiles(args, mnt, lst, 8, budget))
            done(dm, "packfs (local)")
            if has_disk:
                shutil.rmtree(disk_dir, ignore_errors=True)
                for label in ("first pass", "second pass"):
                    dm = mount(disk_cmd)
                    drop_caches()
                    small_row("disk-cache", f"packfs --disk-cache, {label}", r,
                              readfiles(args, mnt, lst, 8, budget))
                    done(dm, f"packfs --disk-cache, {label}")
        if not has_disk:
            print("remote disk cache: not available (packfs --help has no --disk-cache)",
                  flush=True)
    finally:
        for dm in list(daemons):
            dm.close()
        srv.stop()
    if broken:
        raise Broken("remote: " + "; ".join(dict.fromkeys(broken)))
