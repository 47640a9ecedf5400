"""Shared storage (issue 22 §2): where packing pays when every request crosses a network.

Every contender reads the same files, side by side in one run, on loopback, with
tests/support/delay_proxy.py between client and server holding each chunk the client sends
(a request) for a fixed delay:

- sshfs: a throwaway sshd (its own host key, client key, config and port under the work
  directory; started and stopped here, never the system's) behind the proxy at each of
  --shared-delays-ms (1 and 5 ms). Contenders: the loose files through sshfs; packfs mounting
  the pack set through the sshfs mount (local mode over the sshfs path); raw pread of the
  members' byte ranges from the shards through sshfs.
- http: nginx behind the proxy at --shared-http-delay-ms (5 ms) serving the loose files and the
  pack set. Contenders: `rclone mount` of an http remote of the loose files (defaults and
  --read-only); packfs of the pack set's URL; raw ranged GETs of the loose files (each file one
  GET; 8 threads with a keep-alive connection each, as bench_remote.py's raw GETs).

Patterns, each cold (every mount remade and the page cache dropped before every pass), read by
bench/readfiles with 8 threads: "random" (a shuffled sample of --shared-sample files by path,
another slice each repeat), "epoch" (every file of the set once, by path, in a shuffled order,
another each repeat: one epoch of a loader that does not list first), "directory walk" (one directory's files in name order, as `cp -r`
reads them, by path; another directory each repeat), "list + walk" (the same after listing the
directory, as `cp -r` does; the listing counts in the time), "list + walk, 1 reader" (the same
with one thread, as `cp -r` itself reads), "list + random" (the random sample
after listing every directory, as a loader that scans its data set first reads; the listing
counts) and "find" (`find MNT | wc -l`).
The proxy counts the requests of each pass (`delay_proxy.py --count`): requests per file
explain the ratios.

(c), full runs only: one epoch of torchvision's ImageFolder + DataLoader (bench/loader_epoch.py,
run by /usr/bin/python3, where Debian's python3-torchvision installs) over JPEGs, on local loose
files (page-cached and cold), packfs, a FUSE passthrough of the loose files (page-cached and
cold: any FUSE mount's own limits), loose files on sshfs and packfs over sshfs (1 ms), and over
HTTP (5 ms): `rclone mount` of the loose JPEGs and packfs of their pack set's URL.

Passes run at most --shared-budget seconds (a contender once over it gets --shared-slow-budget
from then on; one that got through less than a tenth is not repeated); the rate of a cut pass
counts, marked "too slow". Tools that are missing or fail to mount are recorded "not available".
Only wrong bytes, or packfs (or raw reads) failing to mount or read, raise Broken.
"""
import json
import os
import random
import shutil
import subprocess
import time

from common import (Broken, TooSlow, drop_caches, is_mounted, make_small_files, mount, out,
                    packfs_stats, sh, stop_process, unmount, uring_enabled)
from bench_remote import Proxy, Servers, free_port, raw_gets, wait_port
from bench_small import PASSTHROUGH, stats_delta
import bench_shared_loader

CHECK_FILES = 300  # files per contender compared byte for byte before measuring
# "list + walk" is a directory walk after listing the directory (cp -r): the listing tells the
# kernel every inode, which is what lets packfs push a read's neighbours (fuse/push.h).
# "list + random" is the random sample after listing every directory, as a loader that scans its
# data set first (torchvision's ImageFolder) reads: no lookups, so no lookup hints.
# "list + walk, 1 reader" is that walk by one thread, as `cp -r` itself reads: where the files
# after a READ can be pushed before the reader asks for them (several readers taking a directory's
# files in turn ask first).
# "epoch" reads every file once at random, by path: past the first part of each directory
# packfs lists it and walks it (fuse/push.h), which a sample (random) never makes it do.
PATTERNS = ("random", "epoch", "directory walk", "list + walk", "list + walk, 1 reader",
            "list + random", "find")
LISTED = ("list + walk", "list + walk, 1 reader", "list + random")
SSHD = "/usr/sbin/sshd"


class Unavailable(Exception):
    """A third-party tool this part needs is missing or does not start: recorded, not a failure."""


# --- data -----------------------------------------------------------------------------------------

def ensure_data(args, work, ds):
    """WORK/shared/www with loose/ (the files, 1000 a directory) and media/ (their pack set)."""
    d = os.path.join(work, "shared")
    www = os.path.join(d, "www")
    spec = f"{args.shared_files} {args.size_min} {args.size_max}"
    stamp = os.path.join(d, "data.done")
    if os.path.exists(stamp) and open(stamp).read() == spec:
        return www
    shutil.rmtree(www, ignore_errors=True)
    print(f"data: shared: {args.shared_files} files of {args.size_min}-{args.size_max} bytes",
          flush=True)
    with ds.building("shared: files and pack set"):
        make_small_files(os.path.join(www, "loose"), args.shared_files, args.size_min,
                         args.size_max, seed=22)
        sh([os.path.join(args.build, "mkpack"), "pack", "--no-fsync",
            os.path.join(www, "loose"), os.path.join(www, "media")], stderr=subprocess.DEVNULL)
    with open(stamp, "w") as f:
        f.write(spec)
    return www


def extents(args, packdir):
    """key -> (shard path relative to the web root, as "media/pack-0000.zip", data offset,
    size)."""
    res = {}
    for line in out([os.path.join(args.build, "mkpack"), "ls", "--json", packdir]).splitlines():
        m = json.loads(line)
        res[m["key"]] = (m["shard"], m["offset"], m["size"])
    return res


class Lists:
    """The keys each pass reads: random slice r of a shuffled order, directory r in name order,
    and the check list (the first CHECK_FILES of random slice 0)."""

    def __init__(self, args, www, d):
        self.ext = extents(args, os.path.join(www, "media"))
        self.www, self.d = www, d
        os.makedirs(d, exist_ok=True)
        keys = sorted(self.ext)
        self.dirs = sorted({k.split("/", 1)[0] for k in keys})
        self.by_dir = {x: [k for k in keys if k.startswith(x + "/")] for x in self.dirs}
        order = list(keys)
        random.Random(22).shuffle(order)
        self.order = order
        self.sample = min(args.shared_sample, len(keys))
        self.entries = len(keys) + len(self.dirs) + 1  # what `find MNT` prints

    def keys(self, pattern, r):
        if pattern == "check":
            return self.order[:CHECK_FILES]
        if pattern in ("random", "list + random"):
            n = self.sample
            return [self.order[(r * n + i) % len(self.order)] for i in range(n)]
        if pattern == "epoch":
            order = sorted(self.ext)
            random.Random(2200 + r).shuffle(order)
            return order
        return self.by_dir[self.dirs[r % len(self.dirs)]]

    def path_list(self, pattern, r):
        path = os.path.join(self.d, f"{pattern}-{r}.txt")
        with open(path, "w") as f:
            f.write("\n".join(self.keys(pattern, r)) + "\n")
        return path

    def walk_dir(self, r):
        """(directory, list of its files' names in name order) of the listed walk r."""
        d = self.dirs[r % len(self.dirs)]
        path = os.path.join(self.d, f"names-{r}.txt")
        with open(path, "w") as f:
            f.write("\n".join(k.split("/", 1)[1] for k in self.by_dir[d]) + "\n")
        return d, path

    def pread_list(self, pattern, r, shard_root):
        """readfiles --pread lines with the shards under shard_root (the web root, e.g. through
        sshfs)."""
        path = os.path.join(self.d, f"pread-{pattern}-{r}.txt")
        with open(path, "w") as f:
            for k in self.keys(pattern, r):
                shard, off, size = self.ext[k]
                f.write(f"{os.path.join(shard_root, shard)}\t{off}\t{size}\t{k}\n")
        return path

    def get_items(self, pattern, r):
        """raw_gets items: each loose file as one ranged GET of all its bytes."""
        return [(k, "loose/" + k, 0, self.ext[k][2]) for k in self.keys(pattern, r)]


# --- servers ----------------------------------------------------------------------------------------

class Sshd:
    """A throwaway sshd on 127.0.0.1 with its own host key, authorized key and config under d,
    in the foreground as our child; stop() ends it. ssh_config() is a client config that logs in
    with the generated key and trusts only the generated host key."""

    def __init__(self, d):
        for tool in (SSHD, shutil.which("sshfs"), shutil.which("ssh-keygen")):
            if not tool or not os.access(tool, os.X_OK):
                raise Unavailable("sshfs / openssh-server not installed "
                                  "(scripts/install-deps.sh --bench installs them)")
        self.d = d
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for key in ("host_key", "client_key"):
            sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "packfs-bench",
                "-f", os.path.join(d, key)])
        shutil.copy(os.path.join(d, "client_key.pub"), os.path.join(d, "authorized_keys"))
        with open(os.path.join(d, "known_hosts"), "w") as f:
            f.write("packfs-bench-sshd " + open(os.path.join(d, "host_key.pub")).read())
        # sshd insists on its privilege separation directory, which only the system's service
        # would otherwise create; removed again by stop() when it was not there.
        self.made_run_dir = not os.path.isdir("/run/sshd")
        if self.made_run_dir:
            os.makedirs("/run/sshd", mode=0o755)
        self.p = None
        for _ in range(3):
            self.port = free_port()
            with open(os.path.join(d, "sshd_config"), "w") as f:
                f.write(f"""ListenAddress 127.0.0.1
Port {self.port}
HostKey {d}/host_key
AuthorizedKeysFile {d}/authorized_keys
PidFile {d}/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
LogLevel ERROR
""")
            self.p = subprocess.Popen([SSHD, "-D", "-e", "-f", os.path.join(d, "sshd_config")],
                                      stdout=subprocess.DEVNULL,
                                      stderr=open(os.path.join(d, "sshd.log"), "a"))
            if wait_port(self.port, 10):
                return
            self.stop()
        raise Unavailable("sshd did not start: " + open(os.path.join(d, "sshd.log")).read()[-500:])

    def ssh_config(self, port, name):
        """A client config (path) for host `bench` at 127.0.0.1:port (the proxy in front)."""
        path = os.path.join(self.d, f"ssh_config-{name}")
        with open(path, "w") as f:
            f.write(f"""Host bench
  HostName 127.0.0.1
  Port {port}
  User root
  IdentityFile {self.d}/client_key
  IdentitiesOnly yes
  HostKeyAlias packfs-bench-sshd
  UserKnownHostsFile {self.d}/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
""")
        return path

    def stop(self):
        if self.p:
            stop_process(self.p)
            self.p = None
        if self.made_run_dir:
            try:
                os.rmdir("/run/sshd")
            except OSError:
                pass
            self.made_run_dir = False


def wait_gone(mnt, budget=5):
    """After an unmount: waits for the daemons that served mnt (processes whose command line
    names it: sshfs, rclone, packfs) to exit, and kills those still there after budget."""
    end = time.perf_counter() + budget
    while True:
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if mnt.encode() in argv and int(pid) != os.getpid():
                left.append(int(pid))
        if not left:
            return
        if time.perf_counter() > end:
            for pid in left:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            return
        time.sleep(0.05)


# --- contenders -------------------------------------------------------------------------------------

class Contender:
    """One way of reading the files. kind: "dir" (readfiles over root, a mount made by the
    stacked `mounts` [(cmd, mnt)], e.g. sshfs then packfs over it), "pread" (readfiles --pread of
    the shards under shard_root, through `mounts`) or "gets" (raw ranged GETs through the proxy).
    role: loose, packfs, raw or local (packfs of the same pack set on the local disk: the
    report's columns); ours: its failures break the bench."""

    def __init__(self, name, role, kind, root=None, mounts=(), shard_root=None, ours=False,
                 via_proxy=True):
        self.name, self.role, self.kind, self.root = name, role, kind, root
        self.via_proxy = via_proxy  # its reads go through the proxy (not a local contender)
        self.mounts, self.shard_root, self.ours = list(mounts), shard_root, ours
        self.dead = None   # why it cannot run
        self.over = False  # a pass ran past the budget: later passes get the slow budget
        self.slow = None   # a pass got through < 1/10: not repeated
        self.procs = []    # daemons started in the foreground (see foreground_mount)

    def ready(self, budget):
        """(Re)mounts the stack; returns its seconds, or None (dead set) when it cannot."""
        if self.dead:
            return None
        self.close()
        t = 0
        for i, m in enumerate(self.mounts):
            cmd, mnt = m[0], m[1]
            try:
                if len(m) > 2:
                    secs, proc = foreground_mount(cmd, mnt, budget, m[2])
                    self.procs.append(proc)
                else:
                    secs = mount(cmd, mnt, budget)
                t += secs
                continue
            except TooSlow as e:
                why = f"{os.path.basename(cmd[0])}: {e}"
            except subprocess.CalledProcessError as e:
                why = (f"{os.path.basename(cmd[0])} failed to mount: "
                       + (e.stderr or b"").decode(errors="replace").strip()[-300:])
            self.close()
            # packfs failing on a mount that works is ours to fix; the layer under it is not.
            if self.ours and i == len(self.mounts) - 1:
                raise Broken(f"shared: {self.name}: {why}")
            self.dead = "not available: " + why
            print(f"  {self.name}: {self.dead}", flush=True)
            return None
        return t

    def close(self):
        for m in reversed(self.mounts):
            unmount(m[1])
            wait_gone(m[1])
        for p in self.procs:  # gone (wait_gone): reaped here
            p.wait()
        self.procs = []


def foreground_mount(cmd, mnt, budget, log):
    """Starts a daemon that stays in the foreground (rclone: its --daemon child keeps the
    parent's stderr open, so waiting for the parent never ends) with its output in `log`, and
    waits for mnt to be mounted; (seconds, the process), which exits when mnt is unmounted."""
    unmount(mnt)
    os.makedirs(mnt, exist_ok=True)
    t0 = time.perf_counter()
    with open(log, "ab") as f:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                             start_new_session=True)
    while not is_mounted(mnt):
        if p.poll() is not None:
            raise subprocess.CalledProcessError(p.returncode, cmd, stderr=open(log, "rb").read())
        if time.perf_counter() - t0 > budget:
            p.kill()
            p.wait()
            raise TooSlow(f"mount not ready after {budget:.0f} s")
        time.sleep(0.01)
    return time.perf_counter() - t0, p


def sshfs_contenders(args, work, www, sshd, proxy, delay, uring):
    """`uring`: the kernel offers FUSE io_uring (enable_uring on while the group runs): packfs
    also runs with -o io_uring, and the plain contender says -o noio_uring."""
    mnt = lambda n: os.path.join(work, "mnt", f"shared-{n}")  # noqa: E731
    cfg = sshd.ssh_config(proxy.port, f"{delay:g}ms")
    # sshfs with its defaults (one ssh connection, its caches), read-only.
    sshfs = (["sshfs", "-F", cfg, "bench:" + www, mnt("sshfs"), "-o", "ro"], mnt("sshfs"))
    over = os.path.join(mnt("sshfs"), "media")
    packfs = ([os.path.join(args.build, "packfs"), "-o", "noio_uring", over, mnt("packfs")],
              mnt("packfs"))
    cs = [Contender("loose files on sshfs", "loose", "dir", os.path.join(mnt("sshfs"), "loose"),
                    [sshfs]),
          Contender("packfs over sshfs", "packfs", "dir", mnt("packfs"), [sshfs, packfs],
                    ours=True)]
    if uring:
        ring = ([os.path.join(args.build, "packfs"), "-o", "io_uring", over,
                 mnt("packfs-uring")], mnt("packfs-uring"))
        cs.append(Contender("packfs over sshfs -o io_uring", "ring", "dir", mnt("packfs-uring"),
                            [sshfs, ring], ours=True))
    if not args.quick:
        cs.append(Contender("raw pread on sshfs", "raw", "pread", mounts=[sshfs],
                            shard_root=mnt("sshfs")))
    return cs


def loader_contenders(args, work, www, sshd, proxy, delay):
    """The DataLoader epoch's contenders (bench_shared_loader.py): the JPEGs loose and packed,
    locally and through sshfs."""
    mnt = lambda n: os.path.join(work, "mnt", f"shared-{n}")  # noqa: E731
    packfs = os.path.join(args.build, "packfs")
    loose, packset = bench_shared_loader.image_dirs(www)
    cfg = sshd.ssh_config(proxy.port, f"{delay:g}ms")
    sshfs = (["sshfs", "-F", cfg, "bench:" + www, mnt("sshfs"), "-o", "ro"], mnt("sshfs"))
    over = os.path.join(mnt("sshfs"), os.path.relpath(packset, www))
    warm = Contender("local loose files, page cache warm", "cached", "dir", loose,
                     via_proxy=False)
    warm.warm = True  # read once before the epoch instead of dropping caches: decoding's limit
    # Any FUSE mount's own limits here: bench/fuse_passthrough.cc over the loose files, its page
    # cache warm (a FUSE file's cache, no request sent) and cold (a LOOKUP and a READ a file).
    passthrough = os.path.join(args.build, "fuse_passthrough")
    pt = [([passthrough, loose, mnt("passthrough")], mnt("passthrough"))]
    pt_warm = Contender(f"{PASSTHROUGH} of the local loose files, page cache warm",
                        "passthrough", "dir", mnt("passthrough"), pt, via_proxy=False)
    pt_warm.warm = True
    cs = [warm, Contender("local loose files", "loose", "dir", loose, via_proxy=False),
          Contender("packfs (local)", "packfs", "dir", mnt("packfs"),
                    [([packfs, packset, mnt("packfs")], mnt("packfs"))], ours=True,
                    via_proxy=False),
          pt_warm,
          Contender(f"{PASSTHROUGH} of the local loose files", "passthrough", "dir",
                    mnt("passthrough"), pt, via_proxy=False),
          Contender(f"loose files on sshfs {delay:g} ms", "loose", "dir",
                    os.path.join(mnt("sshfs"), os.path.relpath(loose, www)), [sshfs]),
          Contender(f"packfs over sshfs {delay:g} ms", "packfs", "dir", mnt("packfs"),
                    [sshfs, ([packfs, over, mnt("packfs")], mnt("packfs"))], ours=True)]
    for c, storage in zip(cs, ("local",) * 5 + (f"sshfs {delay:g} ms",) * 2):
        c.storage = storage
    return cs


def rclone_contender(name, d, srv, path, mnt):
    """`rclone mount` of an http remote of srv's `path` (defaults, --read-only)."""
    c = Contender(name, "loose", "dir", mnt)
    rclone = shutil.which("rclone")
    if not rclone:
        c.dead = "not available: rclone not installed (scripts/install-deps.sh --bench)"
        return c
    conf = os.path.join(d, "rclone.conf")
    open(conf, "a").close()  # an empty config of its own: never the user's
    c.mounts = [([rclone, "mount", ":http:", mnt, "--http-url", srv.url + path, "--read-only",
                  "--config", conf, "--cache-dir", os.path.join(d, "rclone-cache")], mnt,
                 os.path.join(d, "rclone.log"))]
    return c


def packfs_http_contender(name, args, d, srv, path, mnt, role="packfs", options=()):
    """packfs of the pack set at srv's `path`."""
    return Contender(name, role, "dir", mnt, [(
        [os.path.join(args.build, "packfs"), "--cache-dir", os.path.join(d, "packfs-cache"),
         *options, srv.url + path, mnt], mnt)], ours=True)


def http_loader_contenders(args, work, d, srv):
    """The DataLoader epoch over HTTP: `rclone mount` of the loose JPEGs, packfs of their pack
    set's URL (bench_shared_loader.py)."""
    mnt = lambda n: os.path.join(work, "mnt", f"shared-{n}")  # noqa: E731
    storage = f"http {args.shared_http_delay_ms:g} ms"
    cs = [rclone_contender(f"rclone mount (loose files) {storage}", d, srv, "/jpeg/",
                           mnt("rclone")),
          packfs_http_contender(f"packfs (http) {storage}", args, d, srv, "/jpeg-pack",
                                mnt("packfs-http"))]
    for c in cs:
        c.storage = storage
    return cs


def http_contenders(args, work, d, srv, www):
    mnt = lambda n: os.path.join(work, "mnt", f"shared-{n}")  # noqa: E731
    cs = []
    if not args.quick:
        cs.append(rclone_contender("rclone mount (loose files)", d, srv, "/loose/", mnt("rclone")))
    cs.append(packfs_http_contender("packfs (http)", args, d, srv, "/media", mnt("packfs-http")))
    cs.append(Contender("raw ranged GETs (loose files)", "raw", "gets", ours=True))
    if not args.quick:
        # Without pushing the files after a READ from what the walk's read-ahead fetched
        # (fuse/push.h): what pushing adds once reads walk a shard.
        cs.append(packfs_http_contender("packfs (http) -o nopush", args, d, srv, "/media",
                                        mnt("packfs-http-nopush"), role="nopush",
                                        options=("-o", "nopush")))
        # The same pack set from the local disk, no network: what packfs's own request path
        # allows in each pattern, the ceiling of packfs (http) once it needs few GETs.
        cs.append(Contender("packfs (local shards)", "local", "dir", mnt("packfs-local"),
                            [([os.path.join(args.build, "packfs"), os.path.join(www, "media"),
                               mnt("packfs-local")], mnt("packfs-local"))], ours=True,
                            via_proxy=False))
    return cs


# --- passes -----------------------------------------------------------------------------------------

def readfiles(args, cmd, budget, verify=None, threads=8):
    cmd = [os.path.join(args.build, "readfiles")] + cmd + ["--threads", str(threads), "--budget",
                                                            str(budget)]
    if verify:
        cmd += ["--verify", verify]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget + 120)
    except subprocess.TimeoutExpired:
        return {"files": 0, "bytes": 0, "errors": 0, "mismatches": 0, "seconds": budget + 120,
                "files_per_s": 0, "mib_per_s": 0, "complete": False, "hung": True}
    if p.returncode not in (0, 1, 3) or not p.stdout.strip():
        raise RuntimeError(f"readfiles {' '.join(cmd[1:3])} failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def find_pass(root, budget):
    """`find ROOT | wc -l`, cut at budget; {entries, seconds, complete}."""
    t0 = time.perf_counter()
    p = subprocess.Popen(["find", root], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    n = 0
    complete = True
    for _ in p.stdout:
        n += 1
        if time.perf_counter() - t0 > budget:
            complete = False
            p.kill()
            break
    p.wait()
    return {"entries": n, "seconds": time.perf_counter() - t0, "complete": complete,
            "errors": 0 if complete and p.returncode == 0 else int(p.returncode != 0)}


def with_scan(res):
    """A listed pass's rate with its listing counted (readfiles --scan times it apart)."""
    res["read_files_per_s"] = res["files_per_s"]
    res["seconds"] += res.get("scan_seconds", 0)
    res["files_per_s"] = res["files"] / res["seconds"] if res["seconds"] else 0
    return res


def one_pass(args, c, lists, pattern, r, budget, srv_port=None, verify=None):
    if c.kind == "gets":
        return raw_gets(srv_port, lists.get_items(pattern, r), 8, budget, verify_root=verify)
    if c.kind == "pread":
        return readfiles(args, ["--pread", lists.pread_list(pattern, r, c.shard_root)], budget,
                         verify)
    if pattern == "find":
        return find_pass(c.root, budget)
    if pattern.startswith("list + walk"):
        # As `cp -r DIR` does: list the directory, then read its files in name order; the
        # listing counts in the rate (readfiles --scan times it apart).
        d, names = lists.walk_dir(r)
        res = readfiles(args, ["--root", os.path.join(c.root, d), "--list", names, "--scan"],
                        budget, verify, threads=1 if pattern.endswith("1 reader") else 8)
        return with_scan(res)
    if pattern == "list + random":
        # Every directory listed first (counted in the rate), then the random sample by path.
        return with_scan(readfiles(args, ["--root", c.root, "--list",
                                          lists.path_list(pattern, r), "--scan"], budget, verify))
    return readfiles(args, ["--root", c.root, "--list", lists.path_list(pattern, r)], budget,
                     verify)


def delta(after, before):
    """What a pass cost at the proxy: requests (client chunks held), by HTTP method, bytes."""
    if not after or not before:
        return None
    heads = {k: v - before["heads"].get(k, 0) for k, v in after["heads"].items()}
    return {"requests": after["chunks"] - before["chunks"],
            "request_bytes": after["chunk_bytes"] - before["chunk_bytes"],
            "response_bytes": after["response_bytes"] - before["response_bytes"],
            "connections": after["connections"] - before["connections"],
            "heads": {k: v for k, v in heads.items() if v}}


def check(args, c, lists, www, group, proxy, rows, srv_port=None):
    """Untimed byte check of CHECK_FILES files through c; returns what is broken, or None."""
    t = None if c.dead else c.ready(args.mount_budget) if c.mounts else 0
    if t is None:
        rows.append({"bench": "check", "contender": f"{group}: {c.name}", "dead": c.dead})
        return None
    res = one_pass(args, c, lists, "check", 0, 10 * args.shared_budget, srv_port,
                   verify=os.path.join(www, "loose"))
    c.close()
    rows.append({"bench": "check", "contender": f"{group}: {c.name}", **res})
    print(f"check {group}: {c.name:30s} {res['files']} files compared, {res['mismatches']} "
          f"wrong, {res['errors']} read errors", flush=True)
    if res["mismatches"]:
        return f"{c.name} ({group}): wrong bytes in {res['mismatches']} of {res['files']} files"
    if c.ours and (res["errors"] or not res["complete"]):
        return f"{c.name} ({group}): {res['errors']} read errors, {res['files']} of " \
               f"{res['listed']} read"
    if res["errors"] or not res["complete"]:
        c.dead = f"not available: {res['errors']} read errors in its check, " \
                 f"{res['files']} of {res['listed']} read"
    return None


def run_group(args, group, delay, cs, lists, www, proxy, rows, srv_port=None):
    """Byte checks, then every pattern x repeat x contender (interleaved), cold; returns the
    list of what broke."""
    broken = [b for b in (check(args, c, lists, www, group, proxy, rows, srv_port) for c in cs)
              if b]
    if broken:
        return broken
    for pattern in PATTERNS:
        for r in range(args.repeat):
            for c in cs[r % len(cs):] + cs[:r % len(cs)]:
                if c.dead or (c.slow and r > 0) or (pattern in ("find",) + LISTED
                                                    and c.kind != "dir"):
                    continue
                m0 = proxy.counts()
                mount_s = c.ready(args.mount_budget) if c.mounts else 0
                if mount_s is None:
                    continue
                drop_caches()
                ours = c.role in ("packfs", "ring", "nopush", "local")
                st0 = packfs_stats(c.root) if ours else None
                before = proxy.counts()
                budget = args.shared_slow_budget if c.over else args.shared_budget
                res = one_pass(args, c, lists, pattern, r, budget, srv_port)
                after = proxy.counts()
                st1 = packfs_stats(c.root) if st0 else None
                c.close()
                row = {"bench": "shared", "group": group, "delay_ms": delay,
                       "pattern": pattern, "contender": c.name, "role": c.role,
                       "repeat": r, "mount_seconds": mount_s, **res,
                       "proxy": delta(after, before), "mount_proxy": delta(before, m0)}
                if st0:
                    row["packfs_stats"] = stats_delta(st0, st1)
                    if row["packfs_stats"] and "push" in st1:  # fuse/push.h's counters
                        push = {k: v - st0.get("push", {}).get(k, 0)
                                for k, v in st1["push"].items()}
                        row["packfs_stats"]["push"] = push
                        row["packfs_stats"]["pushed_files"] = push.get("files", 0)
                n = res.get("entries", res.get("files", 0))
                if pattern == "find":
                    if res["complete"] and res["entries"] != lists.entries:
                        what = f"find listed {res['entries']} entries, not {lists.entries}"
                        if c.ours:
                            broken.append(f"{c.name} ({group}): {what}")
                        else:
                            row["wrong_listing"] = what
                elif c.ours and res["errors"]:
                    broken.append(f"{c.name} ({group}) {pattern} r{r}: {res['errors']} read "
                                  "errors")
                if not res["complete"]:
                    c.over = not c.ours
                    row["too_slow"] = "too slow: %d %s in %.1f s" % (
                        n, "entries" if pattern == "find" else "files", res["seconds"])
                    if pattern != "find" and n < 0.1 * res.get("listed", n or 1):
                        c.slow = c.slow or row["too_slow"]
                rows.append(row)
                req = (row["proxy"] or {}).get("requests")
                rate = n / res["seconds"] if res["seconds"] else 0
                print(f"shared {group} {pattern} r{r} {c.name:30s} "
                      + (f"{res['seconds']:8.2f} s ({n} entries)" if pattern == "find" else
                         f"{rate:8.0f} files/s")
                      + (f", {req / max(n, 1):.2f} requests/{'entry' if pattern == 'find' else 'file'}"
                         if req is not None else "")
                      + ("" if res["complete"] else f"  ({row['too_slow']})"), flush=True)
    for c in cs:
        if c.dead:
            rows.append({"bench": "shared", "group": group, "delay_ms": delay,
                         "contender": c.name, "role": c.role, "dead": c.dead})
    return broken


# --- the benchmark ----------------------------------------------------------------------------------

def bench_shared(args, work, ds, rows):
    www = ensure_data(args, work, ds)
    d = os.path.join(work, "shared")
    lists = Lists(args, www, os.path.join(d, "lists"))
    rows.append({"bench": "shared-meta", "files": len(lists.ext),
                 "bytes": sum(e[2] for e in lists.ext.values()), "sample": lists.sample,
                 "dirs": len(lists.dirs), "dir_files": len(lists.by_dir[lists.dirs[0]]),
                 "entries": lists.entries, "delays_ms": args.shared_delays_ms,
                 "http_delay_ms": args.shared_http_delay_ms})
    print(f"shared: {len(lists.ext)} files in {len(lists.dirs)} director"
          f"{'y' if len(lists.dirs) == 1 else 'ies'}, random passes of "
          f"{lists.sample}, sshfs at {args.shared_delays_ms} ms, http at "
          f"{args.shared_http_delay_ms:g} ms, {args.repeat} repeats", flush=True)
    broken = []
    # (a) sshfs, one proxy per delay in front of one throwaway sshd (started only for the groups
    # that use it, and stopped below whatever happens).
    groups = set(args.shared_groups)
    sshd = None
    try:
        if groups & {"sshfs", "loader"}:
            sshd = Sshd(os.path.join(d, "sshd"))
    except Unavailable as e:
        print(f"shared sshfs: {e}", flush=True)
        for name, role in (("loose files on sshfs", "loose"), ("packfs over sshfs", "packfs"),
                           ("raw pread on sshfs", "raw")):
            rows.append({"bench": "shared", "group": "sshfs", "contender": name, "role": role,
                         "dead": f"not available: {e}"})
    if sshd:
        try:
            for delay in args.shared_delays_ms:
                proxy = Proxy(sshd.port, d, delay, name=f"ssh-proxy-{delay:g}")
                cs = []
                try:
                    if "sshfs" in groups:
                        # The ring only while this group runs: other packfs contenders take
                        # /dev/fuse, as on a kernel with enable_uring off (the default).
                        with uring_enabled() as uring:
                            cs = sshfs_contenders(args, work, www, sshd, proxy, delay, uring)
                            broken += run_group(args, f"sshfs {delay:g} ms", delay, cs, lists,
                                                www, proxy, rows)
                    if ("loader" in groups and delay == min(args.shared_delays_ms)
                            and not broken):
                        lcs = loader_contenders(args, work, www, sshd, proxy, delay)
                        cs += lcs
                        broken += bench_shared_loader.run(args, work, ds, rows, www, lcs, proxy)
                finally:
                    for c in cs:
                        c.close()
                    proxy.stop()
        finally:
            sshd.stop()
    if "http" not in groups:
        if broken:
            raise Broken("shared: " + "; ".join(dict.fromkeys(broken)))
        return
    # (b) an object store over HTTP: nginx behind the proxy.
    srv = Servers(www, os.path.join(d, "nginx"), args.shared_http_delay_ms, autoindex=True)
    cs = http_contenders(args, work, d, srv, www)
    try:
        broken += run_group(args, f"http {args.shared_http_delay_ms:g} ms",
                            args.shared_http_delay_ms, cs, lists, www, srv.proxy, rows,
                            srv_port=srv.proxy_port)
        if not broken and not args.quick:
            lcs = http_loader_contenders(args, work, d, srv)
            cs += lcs
            broken += bench_shared_loader.run(args, work, ds, rows, www, lcs, srv.proxy)
    finally:
        for c in cs:
            c.close()
        srv.stop()
    if broken:
        raise Broken("shared: " + "; ".join(dict.fromkeys(broken)))
