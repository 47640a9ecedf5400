"""Video (issue 4, part 5): `ffprobe` and a full `ffmpeg -f null` decode of a packed MP4 through
the packfs mount vs the loose file, cold (fresh mount + dropped caches) and warm."""
import os
import subprocess

from common import mount, sh, timed, unmount


def ensure_video(args, work):
    d = os.path.join(work, "video")
    src = os.path.join(d, "src", "clip.mp4")
    pack = os.path.join(d, "media")
    stamp = os.path.join(d, f"done-{args.video_s}")
    if not os.path.exists(stamp):
        sh(["rm", "-rf", d])
        os.makedirs(os.path.dirname(src))
        print(f"data: {args.video_s} s H.264 720p clip", flush=True)
        sh(["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
            f"testsrc2=size=1280x720:rate=30:duration={args.video_s}", "-c:v", "libx264",
            "-preset", "ultrafast", "-b:v", "8M", "-movflags", "+faststart", src])
        sh([os.path.join(args.build, "mkpack"), "pack", "--no-fsync", os.path.dirname(src), pack],
           stderr=subprocess.DEVNULL)
        open(stamp, "w").close()
    return src, pack


def bench_video(args, work, ds, rows):
    src, pack = ensure_video(args, work)
    mnt = os.path.join(work, "mnt", "video")
    packfs = [os.path.join(args.build, "packfs"), pack, mnt]
    files = {"loose": src, "packfs": os.path.join(mnt, "clip.mp4")}
    tools = {"ffprobe": lambda f: sh(["ffprobe", "-v", "error", "-show_format", "-show_streams", f]),
             "ffmpeg decode": lambda f: sh(["ffmpeg", "-v", "error", "-i", f, "-f", "null", "-"])}
    size = os.path.getsize(src)
    try:
        for cache in ("cold", "warm"):
            for r in range(args.repeat):
                for tool, fn in tools.items():
                    for name, f in files.items():
                        def prepare():
                            if name == "packfs" and (cache == "cold" or r == 0):
                                mount(packfs, mnt, args.mount_budget)
                            if cache == "warm":
                                sh(["cat", f])
                        t = timed(lambda: fn(f), cold=cache == "cold", before=prepare)
                        rows.append({"bench": "video", "tool": tool, "cache": cache,
                                     "contender": name, "repeat": r, "seconds": t, "bytes": size})
                        print(f"video {cache} r{r} {tool:13s} {name:7s} {t:7.3f} s", flush=True)
    finally:
        unmount(mnt)
