"""Shared helpers of the packfs benchmarks: running commands, dropping caches, medians, mounting the
FUSE contenders with a time budget, and generating (once per work directory) the data sets that
several benchmarks read.

Nothing here measures anything by itself; each bench_*.py module times its own contenders.
"""
import fcntl
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import time
from contextlib import contextmanager

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TooSlow(Exception):
    """A contender ran past its time budget; the message says how far it got."""


class Broken(Exception):
    """The benchmark itself is broken (wrong bytes, packfs cannot mount or read): not a speed
    finding. bench.py records it and exits non-zero, so CI fails on it (and never on speed)."""


def sh(cmd, **kw):
    """Runs cmd (list, or str through the shell); raises on a non-zero exit."""
    kw.setdefault("stdout", subprocess.DEVNULL)
    return subprocess.run(cmd, shell=isinstance(cmd, str), check=True, **kw)


def out(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), check=True, capture_output=True,
                          text=True, **kw).stdout


def drop_caches():
    """Writes dirty pages back, then drops page cache, dentries and inodes (root only)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def can_drop_caches():
    return os.access("/proc/sys/vm/drop_caches", os.W_OK)


def med(xs):
    return statistics.median(xs) if xs else None


def spread(xs):
    """(min, max) of the runs, for the tables' spread column."""
    return (min(xs), max(xs)) if xs else (None, None)


def timed(fn, cold=False, before=None):
    """Seconds one call of fn takes; `before` runs (untimed) first, then the cache drop."""
    if before:
        before()
    if cold:
        drop_caches()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def machine_info():
    info = {"nproc": os.cpu_count(), "kernel": os.uname().release}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["mem_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
        info["loadavg_start"] = os.getloadavg()
        info["fs"] = out(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "-T", "/var/tmp"]).strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


# --- mounts ---------------------------------------------------------------------------------------

def stop_process(p):
    """Terminates p (a Popen) if it still runs and waits for it; kills it after 10 s."""
    if p.poll() is None:
        p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def is_mounted(mnt):
    return subprocess.run(["mountpoint", "-q", mnt]).returncode == 0


def unmount(mnt):
    for _ in range(50):
        if not is_mounted(mnt):
            return
        if subprocess.run(["fusermount3", "-u", mnt], stderr=subprocess.DEVNULL).returncode == 0:
            return
        time.sleep(0.1)
    subprocess.run(["fusermount3", "-uz", mnt], stderr=subprocess.DEVNULL)


def mount(cmd, mnt, budget_s):
    """Runs a daemonizing mount command; raises TooSlow when it has not returned in budget_s."""
    unmount(mnt)
    os.makedirs(mnt, exist_ok=True)
    t0 = time.perf_counter()
    try:
        subprocess.run(cmd, check=True, timeout=budget_s, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    except subprocess.TimeoutExpired:
        unmount(mnt)
        raise TooSlow(f"mount not ready after {budget_s:.0f} s")
    # fuse-zip, archivemount and squashfuse return once mounted; check rather than assume.
    while not is_mounted(mnt):
        if time.perf_counter() - t0 > budget_s:
            raise TooSlow(f"mount not ready after {budget_s:.0f} s")
        time.sleep(0.01)
    return time.perf_counter() - t0


def fuse_bdi(mnt):
    """The /sys/class/bdi directory of a FUSE mount (its readahead window lives there)."""
    dev = out(["mountpoint", "-d", mnt]).strip()
    return f"/sys/class/bdi/{dev}"


def set_readahead_kb(mnt, kb):
    """Sets the mount's readahead window; returns the value in effect (None when not writable).
    The mount is asked something first: packfs raises its window to max_read at its first
    request after INIT (fuse/read_ahead.h), which would otherwise undo a smaller setting."""
    os.stat(mnt)
    path = fuse_bdi(mnt) + "/read_ahead_kb"
    try:
        with open(path, "w") as f:
            f.write(f"{kb}\n")
        with open(path) as f:
            return int(f.read())
    except OSError:
        return None


# The fuse module's switch for FUSE over io_uring (Linux 6.14+); absent on older kernels.
URING_PARAM = "/sys/module/fuse/parameters/enable_uring"
# Whoever switches enable_uring for a while holds this lock meanwhile (flock): the tests that do
# (fuse_uring_test, hang_report_test) and the quick bench that scripts/test.sh runs beside them,
# so that none of them puts back a value another one set, or switches it under another's mounts.
URING_LOCK = os.path.join("/run/lock" if os.path.isdir("/run/lock") else "/tmp",
                          "packfs-enable_uring.lock")
_uring_lock_depth = 0  # uring_switch blocks of this process holding the lock (nested: once)


@contextmanager
def uring_switch(value):
    """Sets enable_uring to `value` ("Y" or "N") for the block and puts the old value back,
    holding URING_LOCK; yields whether the kernel has FUSE over io_uring at all. "N" where it is
    N already (the kernel's default) writes nothing and takes no lock: a whole bench run is such
    a block, and the lock is for the blocks that turn the ring on."""
    global _uring_lock_depth
    if not os.path.exists(URING_PARAM):
        yield False
        return
    lock = None
    if _uring_lock_depth == 0:
        if value == "N":
            with open(URING_PARAM) as f:
                if f.read().strip() == "N":
                    yield True
                    return
        lock = open(URING_LOCK, "a")
        fcntl.flock(lock, fcntl.LOCK_EX)
    _uring_lock_depth += 1
    try:
        with open(URING_PARAM) as f:
            was = f.read().strip()
        with open(URING_PARAM, "w") as f:
            f.write(value)
        try:
            yield True
        finally:
            with open(URING_PARAM, "w") as f:
                f.write(was)
    finally:
        _uring_lock_depth -= 1
        if lock:
            lock.close()  # releases the flock


def uring_enabled():
    """enable_uring on for the block (the `packfs -o io_uring` contenders run only where the
    kernel has it). A mount without -o noio_uring takes the ring by default while it is on."""
    return uring_switch("Y")


# Processes of the storage a shared-storage pass reads through (cpu_snapshot's "transport").
TRANSPORT_COMMS = {"sshfs", "ssh", "sshd", "sftp-server", "nginx", "rclone"}


def busy_cpu_s():
    """The machine's busy CPU seconds so far, over all CPUs (/proc/stat: all but idle and
    iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def proc_stat(pid):
    """(comm, user + system CPU seconds so far) of process `pid`, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            head, tail = f.read().rsplit(")", 1)
        t = tail.split()
        return head.split("(", 1)[1], (int(t[11]) + int(t[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def proc_cpu_s(pid):
    """User + system CPU seconds of a running process so far, or None."""
    st = proc_stat(pid)
    return st[1] if st else None


def cpu_snapshot():
    """CPU seconds so far: the machine's busy time over all CPUs ("busy", busy_cpu_s), and per
    pid those of packfs daemons ("daemon") and of the storage's own processes ("transport":
    TRANSPORT_COMMS and tests/support/delay_proxy.py). cpu_delta of two tells what a pass cost
    each; a process that ended between them is not counted."""
    snap = {"busy": busy_cpu_s(), "pids": {}}
    for pid in os.listdir("/proc"):
        st = proc_stat(pid) if pid.isdigit() else None
        if st is None:
            continue  # not a process, or gone meanwhile
        comm, secs = st
        role = "daemon" if comm == "packfs" else "transport" if comm in TRANSPORT_COMMS else None
        if role is None and comm.startswith("python"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    role = "transport" if b"delay_proxy" in f.read() else None
            except OSError:
                continue
        if role:
            snap["pids"][pid] = (role, secs)
    return snap


def cpu_delta(a, b):
    """{"busy", "daemon", "transport"}: CPU seconds between two cpu_snapshot()s."""
    out = {"busy": b["busy"] - a["busy"], "daemon": 0.0, "transport": 0.0}
    for pid, (role, secs) in b["pids"].items():
        out[role] += secs - a["pids"].get(pid, (role, 0.0))[1]
    return out


def _own_cgroup(hierarchy):
    """This process's path in a cgroup hierarchy ("memory" for v1, "" for v2), or None."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if (hierarchy and hierarchy in ctrls.split(",")) or (not hierarchy and not ctrls):
                return path
    return None


@contextmanager
def memory_limited(limit_bytes):
    """Runs the block with this process, and everything it starts (mounts, readers), in a memory
    cgroup of limit_bytes: page cache included, so a data set larger than it behaves as on a
    machine with that little memory. A child of this process's own cgroup (cgroup v1's memory
    hierarchy, or v2 with the memory controller). Yields None when it is on, else why not."""
    with _limited("memory", "memory.limit_in_bytes", str(int(limit_bytes)),
                  "memory", "memory.max", str(int(limit_bytes))) as why:
        yield why


def pack_extents(mkpack, packdir):
    """key -> (absolute shard path, data offset, size) of a pack set, from `mkpack ls --json`
    (which names shards relative to the dataset root, the pack directory's parent)."""
    root = os.path.dirname(os.path.abspath(packdir))
    res = {}
    for line in out([mkpack, "ls", "--json", packdir]).splitlines():
        m = json.loads(line)
        res[m["key"]] = (os.path.join(root, m["shard"]), m["offset"], m["size"])
    return res


def disk_of(path):
    """'MAJ:MIN' of the whole disk holding path (a partition's parent), or None."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sysdev = f"/sys/dev/block/{dev}"
    if not os.path.exists(sysdev):
        return None
    if os.path.exists(os.path.join(sysdev, "partition")):
        with open(os.path.join(sysdev, "..", "dev")) as f:
            return f.read().strip()
    return dev


@contextmanager
def reads_throttled(path, bytes_per_s):
    """Runs the block with this process, and everything it starts, in a cgroup whose reads from
    the disk holding `path` are limited to bytes_per_s (cgroup v1 blkio.throttle or v2 io.max): a
    slower disk on this machine. Yields None when it is on, else why not."""
    dev = disk_of(path)
    if dev is None:
        yield f"no block device under {path}"
        return
    with _limited("blkio", "blkio.throttle.read_bps_device", f"{dev} {int(bytes_per_s)}",
                  "io", "io.max", f"{dev} rbps={int(bytes_per_s)}") as why:
        yield why


@contextmanager
def _limited(v1_name, v1_file, v1_value, v2_controller, v2_file, v2_value):
    """A child cgroup of this process's own with one limit written, this process moved into it
    for the block (cgroup v1's `v1_name` hierarchy, else v2 with `v2_controller` enabled)."""
    v1 = f"/sys/fs/cgroup/{v1_name}"
    try:
        if os.path.exists(os.path.join(v1, v1_file)) or os.path.exists(os.path.join(v1, "tasks")):
            own = _own_cgroup(v1_name)
            parent, limit_file, value = os.path.join(v1, own.lstrip("/")), v1_file, v1_value
        else:
            own = _own_cgroup("")
            parent, limit_file, value = (os.path.join("/sys/fs/cgroup", own.lstrip("/")),
                                         v2_file, v2_value)
            with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                f.write("+" + v2_controller)
        cg = os.path.join(parent, f"packfs-bench-{os.getpid()}")
        os.makedirs(cg, exist_ok=True)
        with open(os.path.join(cg, limit_file), "w") as f:
            f.write(value)
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    except (OSError, TypeError, AttributeError) as e:
        yield f"no {v1_name} cgroup here ({e})"
        return
    try:
        yield None
    finally:
        with open(os.path.join(parent, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        for _ in range(50):  # the mounts it started may take a moment to leave
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)


def packfs_stats(mnt):
    try:
        return json.loads(out(["getfattr", "-n", "user.packfs.stats", "--only-values", mnt]))
    except (subprocess.CalledProcessError, json.JSONDecodeError, OSError):
        return None


# --- data sets ------------------------------------------------------------------------------------

def _make_dir(job):
    """One directory of make_small_files (a separate process: file creation is kernel time)."""
    dst, d, first, count, size_min, size_max, seed = job
    rnd = random.Random(f"{seed}/{d}")
    blob = os.urandom(size_max + 65536)
    os.makedirs(os.path.join(dst, d), exist_ok=True)
    rel = []
    for i in range(first, first + count):
        size = rnd.randint(size_min, size_max)
        off = rnd.randint(0, 65536)
        name = f"{d}/{i:06d}.jpg"
        fd = os.open(os.path.join(dst, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, blob[off:off + size])
        finally:
            os.close(fd)
        rel.append(name)
    return rel


def make_small_files(dst, n, size_min, size_max, seed=1):
    """n files of uniform random size in [size_min, size_max] bytes, 1000 per directory, with
    incompressible contents (no two files alike); returns their relative paths in creation order.
    Directories are written by one process per core."""
    jobs = [(dst, "%04d" % (first // 1000), first, min(1000, n - first), size_min, size_max, seed)
            for first in range(0, n, 1000)]
    with multiprocessing.Pool(os.cpu_count() or 1) as pool:
        return [name for rel in pool.map(_make_dir, jobs, chunksize=1) for name in rel]


class Dataset:
    """The small-file data set in its forms, built on first use and reused by every benchmark:
    src/ (loose files), ds/media (mkpack pack set), one/one.zip (one zip for fuse-zip and
    archivemount), img.squashfs (uncompressed squashfs) and a shuffled order of reads."""

    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.timings = {}  # data set name -> seconds spent building it (reported per run)
        self.src = os.path.join(work, "src")
        self.packdir = os.path.join(work, "ds", "media")
        self.onezip = os.path.join(work, "one", "one.zip")
        self.squash = os.path.join(work, "img.squashfs")
        self.tardir = os.path.join(work, "tars", "shards")
        self.mkpack = os.path.join(args.build, "mkpack")
        self._stamp = os.path.join(work, "src.done")

    @contextmanager
    def building(self, name):
        """Times the build of one data set into self.timings (shown in the report)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round(self.timings.get(name, 0) + time.perf_counter() - t0, 1)

    def ensure_src(self):
        spec = f"{self.args.files} {self.args.size_min} {self.args.size_max}"
        if os.path.exists(self._stamp) and open(self._stamp).read() == spec:
            return
        shutil.rmtree(self.src, ignore_errors=True)
        for p in (os.path.dirname(self.packdir), os.path.dirname(self.onezip), self.squash):
            shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (
                os.path.exists(p) and os.remove(p))
        print(f"data: {self.args.files} files of {self.args.size_min}-{self.args.size_max} bytes",
              flush=True)
        with self.building("small files"):
            rel = make_small_files(self.src, self.args.files, self.args.size_min,
                                   self.args.size_max)
        order = list(rel)
        random.Random(2).shuffle(order)
        with open(os.path.join(self.work, "order.txt"), "w") as f:
            f.write("\n".join(order) + "\n")
        with open(self._stamp, "w") as f:
            f.write(spec)

    def order(self):
        self.ensure_src()
        with open(os.path.join(self.work, "order.txt")) as f:
            return f.read().split()

    def total_bytes(self):
        self.ensure_src()
        return sum(os.path.getsize(os.path.join(dp, f))
                   for dp, _, fs in os.walk(self.src) for f in fs)

    def ensure_packset(self):
        self.ensure_src()
        if not os.path.isdir(self.packdir):
            print("data: mkpack pack", flush=True)
            os.makedirs(os.path.dirname(self.packdir), exist_ok=True)
            with self.building("pack set"):
                sh([self.mkpack, "pack", "--no-fsync", self.src, self.packdir],
                   stderr=subprocess.DEVNULL)
        return self.packdir

    def extents(self):
        """key -> (absolute shard path, data offset, size), from `mkpack ls --json`."""
        self.ensure_packset()
        return pack_extents(self.mkpack, self.packdir)

    def ensure_onezip(self):
        """All members in one STORED zip (ZIP64 past 65535), as fuse-zip and archivemount take
        a single archive."""
        self.ensure_src()
        if not os.path.exists(self.onezip):
            print("data: one zip for fuse-zip/archivemount", flush=True)
            d = os.path.dirname(self.onezip)
            shutil.rmtree(d, ignore_errors=True)
            with self.building("one zip"):
                sh([self.mkpack, "pack", "--no-fsync", "--no-catalog", "--max-members",
                    "100000000", "--max-pack-bytes", "1T", self.src, d], stderr=subprocess.DEVNULL)
            os.rename(os.path.join(d, "pack-0000.zip"), self.onezip)
        return self.onezip

    def ensure_tarset(self):
        """The same files as tar shards (WebDataset-style, about 10 tars made by GNU tar, whole
        directories each) with a catalog from `mkpack catalog`, mounted by packfs as they are."""
        self.ensure_src()
        done = self.tardir + ".done"
        if not os.path.exists(done):
            print("data: tar shards", flush=True)
            shutil.rmtree(self.tardir, ignore_errors=True)
            os.makedirs(self.tardir)
            with self.building("tar shards"):
                dirs = sorted(os.listdir(self.src))
                per = max(1, (len(dirs) + 9) // 10)
                for i in range(0, len(dirs), per):
                    sh(["tar", "cf", os.path.join(self.tardir, "shard-%06d.tar" % (i // per)),
                        "-C", self.src] + dirs[i:i + per])
                sh([self.mkpack, "catalog", self.tardir], stderr=subprocess.DEVNULL)
            open(done, "w").close()
        return self.tardir

    def ensure_squash(self):
        self.ensure_src()
        if not os.path.exists(self.squash):
            print("data: mksquashfs (uncompressed)", flush=True)
            with self.building("squashfs image"):
                sh(["mksquashfs", self.src, self.squash, "-noI", "-noD", "-noF", "-noX",
                    "-no-xattrs", "-quiet", "-no-progress"])
        return self.squash

    def pack_input(self):
        """The input of the writing benchmark: the first --pack-files files of src/ (whole
        directories of 1000), hard-linked into packsrc/ so every writer reads the same inodes
        (cold means cold) while a run writes a third of the data set, not all of it, 3 times
        per writer and cache state. (src itself when --pack-files covers it.)"""
        self.ensure_src()
        want = min(self.args.pack_files, self.args.files)
        if want >= self.args.files:
            return self.src, self.args.files
        dirs = sorted(os.listdir(self.src))[:max(1, (want + 999) // 1000)]
        dst = os.path.join(self.work, "packsrc")
        stamp = dst + ".done"
        spec = " ".join(dirs)
        if not (os.path.exists(stamp) and open(stamp).read() == spec):
            shutil.rmtree(dst, ignore_errors=True)
            with self.building("pack input (hard links)"):
                os.makedirs(dst)
                sh(["cp", "-al"] + [os.path.join(self.src, d) for d in dirs] + [dst + "/"])
            with open(stamp, "w") as f:
                f.write(spec)
        n = sum(len(os.listdir(os.path.join(dst, d))) for d in dirs)
        return dst, n
