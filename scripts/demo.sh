#!/usr/bin/env bash
# The main job, end to end: install dependencies, build, generate a sample media folder, pack it,
# list, resolve and verify it, mount it with packfs and read from it (ffprobe of a packed video);
# then convert a WebDataset (tar shards) to a pack set and mount the tars as they are; then mount a
# LeRobot v3 robot dataset (several episodes per MP4) and read it as a LeRobot v2.1 dataset (one
# parquet and one MP4 per episode), with no copy.
# Usage: scripts/demo.sh [WORKDIR]   (default: a temporary directory, removed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/install-deps.sh
echo "== building"
scripts/build.sh build -DCMAKE_UNITY_BUILD=ON >/dev/null
bin=$root/build

work=${1:-}
cleanup_work=0
if [[ -z "$work" ]]; then
  work=$(mktemp -d /tmp/packfs-demo.XXXXXX)
  cleanup_work=1
fi
mnt=$work/mnt
cleanup() {
  if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" || true; fi
  if ((cleanup_work)); then rm -rf "$work"; fi
}
trap cleanup EXIT

step() { printf '\n$ %s\n' "$*"; "$@"; }
# Runs a command and shows only the first N lines of its output (no pipe: the command completes).
step_head() {
  local n=$1 out
  shift
  printf '\n$ %s | head -%s\n' "$*" "$n"
  out=$("$@")
  printf '%s\n' "$out" | sed -n "1,${n}p"  # sed reads it all: no SIGPIPE
}

echo "== generating a sample dataset in $work/src"
mkdir -p "$work/src/images" "$work/src/clips" "$work/src/labels"
ffmpeg -loglevel error -f lavfi -i testsrc=size=320x240:rate=10 -frames:v 300 \
  "$work/src/images/%04d.jpg"
for i in 0 1; do
  ffmpeg -loglevel error -f lavfi -i "testsrc2=size=320x240:rate=25:duration=$((2 + i))" \
    -c:v libx264 -bf 2 -pix_fmt yuv420p "$work/src/clips/clip$i.mp4"
done
for i in $(seq -w 0 299); do echo "{\"id\": $((10#$i)), \"label\": $((10#$i % 7))}" > "$work/src/labels/$i.json"; done
echo "$(find "$work/src" -type f | wc -l) files, $(du -sh "$work/src" | cut -f1)"

step "$bin/mkpack" pack "$work/src" "$work/media" --max-pack-bytes 4000000
step ls -l "$work/media"
step_head 5 "$bin/mkpack" ls --long "$work/media"
step_head 6 unzip -l "$work/media/pack-0000.zip"
step "$bin/mkpack" resolve "$work/media" images/0001.jpg
step "$bin/mkpack" verify "$work/media"

if [[ -x "$bin/packfs" ]]; then
  mkdir -p "$mnt"
  step "$bin/packfs" "$work/media" "$mnt"
  step ls "$mnt"
  step_head 3 ls -l "$mnt/images"
  step getfattr -n user.packfs.ref "$mnt/images/0001.jpg"
  echo
  echo "$ diff -r $work/src $mnt"
  diff -r "$work/src" "$mnt" && echo "identical"
  step ffprobe -v error -show_entries stream=codec_name,width,height,nb_frames -of compact "$mnt/clips/clip0.mp4"
  step fusermount3 -u "$mnt"

  echo
  echo "== a WebDataset: two tar shards of samples (NNNNNN.jpg + NNNNNN.json), as Python's tarfile writes them"
  mkdir -p "$work/wds"
  python3 - "$work/src" "$work/wds" <<'PY'
import sys, tarfile
src, out = sys.argv[1], sys.argv[2]
for shard in range(2):
    with tarfile.open(f"{out}/shard-{shard:06d}.tar", "w", format=tarfile.PAX_FORMAT) as t:
        for i in range(shard * 150, shard * 150 + 150):
            t.add(f"{src}/images/{i + 1:04d}.jpg", arcname=f"{i:06d}.jpg")
            t.add(f"{src}/labels/{i:03d}.json", arcname=f"{i:06d}.json")
PY
  step ls -l "$work/wds"
  step "$bin/mkpack" convert-wds "$work/wds" "$work/wds-pack"
  step "$bin/packfs" "$work/wds" "$mnt"
  step_head 4 ls -l "$mnt"
  echo
  echo "$ cmp $mnt/000042.json <(unzip -p $work/wds-pack/pack-0000.zip 000042.json)"
  cmp "$mnt/000042.json" <(unzip -p "$work/wds-pack/pack-0000.zip" 000042.json) && echo "identical"
  step cat "$mnt/000042.json"
  step fusermount3 -u "$mnt"

  echo
  echo "== a LeRobot v3 dataset: 3 episodes x 2 cameras, the episodes of a camera joined in one MP4"
  echo "   (encoded one by one and joined with ffmpeg's concat demuxer, as LeRobot does)"
  python3 scripts/make-lerobot-dataset.py "$work/robot" --episodes 3 --cameras 2 --codec h264 \
    --episodes-per-file 3 --frames 40:60 --size 160x120 >/dev/null
  step find "$work/robot/videos" -name '*.mp4'
  step "$bin/packfs" "$work/robot" "$mnt"
  echo "$ # the mount is a LeRobot v2.1 dataset: one parquet and one MP4 per episode, v3 under v3/"
  step ls "$mnt" "$mnt/data/chunk-000"
  step grep -m1 codebase_version "$mnt/meta/info.json"
  step find "$mnt/videos/chunk-000" -name '*.mp4'
  step cat "$mnt/meta/episodes.jsonl"
  step ffprobe -v error -count_frames -show_entries stream=codec_name,nb_read_frames:format=duration \
    -of compact "$mnt/videos/chunk-000/observation.images.front/episode_000001.mp4"
  echo
  echo "$ # the episode decodes exactly like its own separate encode:"
  echo "$ diff <(ffmpeg -i \$mnt/.../episode_000001.mp4 -f framemd5 - | cut -d, -f6) <(ffmpeg -i original | ...)"
  diff <(ffmpeg -v error -i "$mnt/videos/chunk-000/observation.images.front/episode_000001.mp4" \
           -f framemd5 - | grep -v '^#' | cut -d, -f6) \
       <(ffmpeg -v error -i "$work/robot.originals/observation.images.front/episode_000001.mp4" \
           -f framemd5 - | grep -v '^#' | cut -d, -f6) && echo "identical frames"
  step fusermount3 -u "$mnt"
  step "$bin/mkpack" convert-lerobot "$work/robot" "$work/robot-pack"
  step_head 12 cat "$work/robot-pack/video_index.json"
fi
echo
echo "demo finished"
