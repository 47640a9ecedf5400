#!/usr/bin/env bash
# Installs what packfs needs to build and test, with apt-get. Idempotent: quiet when all present.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds the benchmark contenders and tools)
set -euo pipefail

pkgs=(g++ clang libclang-rt-14-dev cmake ninja-build pkg-config git
      libfuse3-dev liburing-dev fuse3 libsqlite3-dev sqlite3 libxxhash-dev libcli11-dev libgtest-dev
      libdeflate-dev zlib1g-dev libsnappy-dev libzstd-dev liblz4-dev nlohmann-json3-dev
      libcurl4-openssl-dev libssl-dev
      nginx-light curl
      unzip zip python3 ffmpeg attr tar coreutils util-linux
      groff-base man-db procps)
# The LeRobot test-data generator writes parquet with Node.js (scripts/lerobot-parquet). Debian's
# nodejs/npm only when no node/npm is on PATH: a NodeSource nodejs bundles npm and conflicts with
# Debian's npm package.
if ! command -v node >/dev/null; then
  pkgs+=(nodejs npm)
elif ! command -v npm >/dev/null; then
  pkgs+=(npm)
fi
if [[ "${1:-}" == "--bench" ]]; then
  pkgs+=(fio fuse-zip archivemount squashfs-tools squashfuse gnuplot-nox hyperfine time)
  # bench_shared.py: sshfs to a throwaway sshd of its own (openssh-server only for the sshd
  # binary; the bench never uses the system's sshd or its config), and rclone's http remote.
  # python3-torchvision (its DataLoader epoch) is large: that bench installs it on demand.
  pkgs+=(sshfs openssh-server rclone)
fi

# One dpkg-query for all packages (it prints nothing for packages it has never heard of).
declare -A installed=()
while read -r name status; do
  [[ "$status" == "install ok installed" ]] && installed[${name%%:*}]=1
done < <(dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" 2>/dev/null || true)
missing=()
for p in "${pkgs[@]}"; do
  [[ -n "${installed[$p]:-}" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
