#!/usr/bin/env bash
# Says what is running and where it waits (process states, kernel stacks of blocked processes,
# FUSE mounts); with --abort it then aborts the FUSE connections of packfs and the benchmark's
# FUSE contenders, so readers stuck on a hung server get ENOTCONN and end. scripts/test.sh runs
# it when a run outlives its time budget; run it by hand when a mount seems stuck.
# Usage: scripts/hang-report.sh [--abort [MOUNTPOINT...]]   (root: kernel stacks and the abort
# need it). With mount points, only those are aborted (a test aborts its own mount, not the
# mounts of the tests running beside it).
set -uo pipefail

echo "--- processes (state D = blocked in the kernel; wchan = where)"
ps -eo pid,ppid,stat,etimes,wchan:32,args --sort=start_time | cut -c1-220
for stat in /proc/[0-9]*/stat; do
  pid=${stat#/proc/}
  pid=${pid%/stat}
  # The state is the field after the parenthesized command name (which may hold spaces).
  state=$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "$stat" 2>/dev/null) || continue
  if [[ "$state" == "D" ]]; then
    echo "--- kernel stack of $pid ($(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-160))"
    cat "/proc/$pid/stack" 2>/dev/null || echo "(unreadable)"
  fi
done

# mountinfo: field 3 is major:minor, 5 the mount point, the field after "-" the file system type.
# A FUSE connection's directory under /sys/fs/fuse/connections is named by the kernel's device
# number (major << 20 | minor).
fuse_mounts() {
  awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { print $3, $(i + 1), $5; break } }' \
    /proc/self/mountinfo | awk '$2 ~ /^fuse/'
}
echo "--- FUSE mounts (device, type, mount point)"
fuse_mounts

if [[ "${1:-}" == "--abort" ]]; then
  shift
  only=("$@")
  # The connections directory is a file system of its own (fusectl), not always mounted.
  if [[ ! -e /sys/fs/fuse/connections/. ]] || ! grep -q ' /sys/fs/fuse/connections ' /proc/mounts; then
    mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null ||
      echo "--- cannot mount fusectl on /sys/fs/fuse/connections: no abort"
  fi
  while read -r dev type mnt; do
    case "$type" in
      fuse.packfs | fuse.fuse-zip | fuse.archivemount | fuse.squashfuse | fuse.squashfuse_ll) ;;
      *) continue ;;
    esac
    if ((${#only[@]})); then
      keep=0
      for m in "${only[@]}"; do [[ "$mnt" == "$m" ]] && keep=1; done
      ((keep)) || continue
    fi
    conn=/sys/fs/fuse/connections/$(( ${dev%%:*} << 20 | ${dev##*:} ))
    if [[ -w "$conn/abort" ]]; then
      echo "--- aborting $type at $mnt ($conn, $(cat "$conn/waiting" 2>/dev/null) requests waiting)"
      echo 1 > "$conn/abort"
    fi
  done < <(fuse_mounts)
fi
exit 0
