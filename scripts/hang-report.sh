#!/usr/bin/env bash
# Says what is running and where it waits (process states, kernel stacks of blocked processes,
# FUSE mounts); with --abort it then aborts the FUSE connections of packfs and the benchmark's
# FUSE contenders, so readers stuck on a hung server get ENOTCONN and end (a packfs server over
# FUSE io_uring is continued, or killed, for that). scripts/test.sh runs
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

# The servers of a mount: packfs processes holding the mount point open, or (servers older than
# that) whose last argument is the mount point, absolute or relative to the process's directory.
servers_of() {
  local pid arg cwd fd
  for pid in $(pgrep -x packfs); do
    # A server holds its mount point open (O_PATH): found whatever its command line says.
    for fd in /proc/"$pid"/fd/*; do
      [[ "$(readlink "$fd" 2>/dev/null)" == "$1" ]] && { echo "$pid"; continue 2; }
    done
    arg=$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | tail -n 1)
    [[ -n "$arg" ]] || continue
    if [[ "$arg" != /* ]]; then
      cwd=$(readlink "/proc/$pid/cwd") || continue
      arg=$cwd/$arg
    fi
    [[ "$(realpath -m -- "$arg")" == "$1" ]] && echo "$pid"
  done
}

# A server on FUSE io_uring holds its requests in the ring: the kernel ends them only once the
# server runs again (a stopped server never does), so after the abort it is continued and, if it
# has not ended a second later, killed. A /dev/fuse server is left to notice the abort, unmount
# and exit by itself.
end_ring_servers() {
  local pid fd ring left=()
  for pid in $(servers_of "$1"); do
    ring=0
    for fd in /proc/"$pid"/fd/*; do
      [[ "$(readlink "$fd" 2>/dev/null)" == *io_uring* ]] && { ring=1; break; }
    done
    ((ring)) || continue
    echo "--- its server $pid serves over FUSE io_uring: continuing it so it sees the abort"
    kill -CONT "$pid" 2>/dev/null
    left+=("$pid")
  done
  ((${#left[@]})) || return 0
  sleep 1
  for pid in "${left[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "--- its server $pid is still there: killing it"
      kill -KILL "$pid" 2>/dev/null
    fi
  done
}

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
      [[ "$type" == fuse.packfs ]] && end_ring_servers "$mnt"
    fi
  done < <(fuse_mounts)
fi
exit 0
