#!/usr/bin/env bash
# package_test: builds the Debian package with CPack from the build tree, checks its contents and
# declared dependencies (every library packfs and mkpack link directly comes from a package in
# Depends), installs it with `apt-get install ./packfs_*.deb`, and with the installed programs
# only: packs a small tree, mounts it through `mount -t fuse.packfs SRC MNT -o ro` (run with an
# empty environment, as mount(8) runs helpers with a cleared PATH; the daemon must be
# /usr/bin/packfs) and through a temporary fstab file with `mount -a -T FILE`, reads it back,
# unmounts, and removes the package (`apt-get remove -y packfs`).
# Leaves the machine as it found it: skips (exit 77) when not root, when packfs is installed
# already or when /usr/bin/packfs, /usr/bin/mkpack or /usr/sbin/mount.fuse.packfs exist; on any
# exit it unmounts what it mounted and removes the package if it installed it. Holds a lock so two
# build trees never run it at once.
# Usage: tests/integration/package_test.sh SOURCE_DIR BUILD_DIR VERSION
set -uo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) version=$3
skip() { echo "SKIP: $*"; exit 77; }
die() { echo "FAIL: $*"; exit 1; }
installed() { dpkg-query -W -f='${Status}' packfs 2>/dev/null | grep -q "install ok installed"; }

[[ $(id -u) -eq 0 ]] || skip "installing a package needs root"
for tool in apt-get dpkg dpkg-deb cpack mount umount findmnt; do
  command -v "$tool" >/dev/null || skip "$tool is missing"
done
[[ -e /dev/fuse ]] || skip "no /dev/fuse"
[[ -f $build/CPackConfig.cmake ]] || die "$build/CPackConfig.cmake missing: reconfigure the build"

exec 9>/run/lock/packfs-package-test.lock
flock -w 600 9 || die "another package_test holds /run/lock/packfs-package-test.lock"
installed && skip "the packfs package is installed already; not touching it"
for f in /usr/bin/packfs /usr/bin/mkpack /usr/sbin/mount.fuse.packfs /sbin/mount.fuse.packfs; do
  [[ -e $f || -L $f ]] && skip "$f exists already (not from this test); not overwriting it"
done

tmp=$(mktemp -d /tmp/packfs-package-test.XXXXXX)
we_installed=0
mnt=$tmp/mnt
cleanup() {
  local rc=$?
  if findmnt -rn -M "$mnt" >/dev/null 2>&1; then umount "$mnt" 2>/dev/null || umount -l "$mnt"; fi
  if ((we_installed)) && installed; then
    apt-get remove -y -qq packfs >/dev/null 2>&1 || dpkg --purge packfs >/dev/null 2>&1
  fi
  # apt-get remove keeps an rc entry only with conffiles; the package has none, purge anyway.
  if ((we_installed)); then dpkg --purge packfs >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# 1. Build the .deb into a scratch directory (the build tree stays untouched).
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log"; die "cpack failed"; }
arch=$(dpkg --print-architecture)
deb=$tmp/pkg/packfs_${version}_${arch}.deb
[[ -f $deb ]] || { ls "$tmp/pkg"; die "no packfs_${version}_${arch}.deb"; }
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# 2. Contents and metadata.
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/packfs ./usr/bin/mkpack ./usr/sbin/mount.fuse.packfs \
         ./usr/share/man/man1/packfs.1.gz ./usr/share/man/man1/mkpack.1.gz \
         ./usr/share/bash-completion/completions/packfs ./usr/share/bash-completion/completions/mkpack \
         ./usr/share/doc/packfs/CHANGELOG.md; do
  grep -qxF "$f" <<<"$contents" || die "$f is not in the package"
done
[[ $(dpkg-deb -f "$deb" Package) == packfs ]] || die "package name is not packfs"
[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || die "package version is not $version"
description=$(dpkg-deb -f "$deb" Description)
grep -q ' ;' <<<"$description" && die "Description holds a stray ' ;' (a CMake list joined): $description"
grep -q 'mkpack writes pack sets' <<<"$description" || die "Description lacks its text: $description"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
dep_names=$(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/ //g')
grep -qx fuse3 <<<"$dep_names" || die "Depends lacks fuse3"
# The README's install section names every package the .deb depends on.
for dep in $dep_names; do
  grep -qF "\`$dep\`" "$src/README.md" || die "README.md does not list the dependency $dep"
done
# The libraries the programs link directly (DT_NEEDED): their own packages bring what they need in
# turn (libcurl4's Depends lists its TLS, HTTP/2 and compression libraries, for instance).
needed=$(for b in "$build/packfs" "$build/mkpack"; do
           readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
         done | sort -u)
[[ -n $needed ]] || die "readelf found no NEEDED libraries in packfs/mkpack"
for lib in $(ldd "$build/packfs" "$build/mkpack" |
             awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
             while read -r soname path; do grep -qx "$soname" <<<"$needed" && echo "$path"; done |
             sort -u); do
  # dpkg knows a library by the path its package ships (/lib/... or /usr/lib/... on a merged /usr).
  owner=""
  for path in "$lib" "$(readlink -f "$lib")" "/usr$lib" "${lib#/usr}"; do
    owner=$(dpkg -S "$path" 2>/dev/null | head -n1 | cut -d: -f1)
    [[ -n $owner ]] && break
  done
  [[ -n $owner ]] || die "no Debian package owns $lib (needed by packfs or mkpack)"
  grep -qx "$owner" <<<"$dep_names" || die "$lib comes from package $owner, which Depends does not list"
done

# 3. Install with apt-get, as a user would.
we_installed=1
(cd "$tmp/pkg" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
   -o DPkg::Lock::Timeout=300 "./$(basename "$deb")") >"$tmp/apt.log" 2>&1 ||
  { cat "$tmp/apt.log"; die "apt-get install ./$(basename "$deb") failed"; }
installed || die "dpkg does not list packfs as installed after apt-get install"
for f in /usr/bin/packfs /usr/bin/mkpack /usr/sbin/mount.fuse.packfs; do
  [[ -x $f ]] || die "$f is not installed executable"
done
[[ $(/usr/bin/packfs --version) == "$("$build/packfs" --version)" ]] ||
  die "installed packfs --version differs from the build tree's"
if ! grep -rqs 'path-exclude=/usr/share/man' /etc/dpkg/dpkg.cfg.d/; then
  [[ $(man -w packfs 2>/dev/null) == /usr/share/man/man1/packfs.1.gz ]] || die "man -w packfs does not find the installed page"
  [[ $(man -w mkpack 2>/dev/null) == /usr/share/man/man1/mkpack.1.gz ]] || die "man -w mkpack does not find the installed page"
fi
bash --norc --noprofile -c 'source /usr/share/bash-completion/completions/mkpack && complete -p mkpack' \
  >/dev/null 2>&1 || die "the installed mkpack completion does not load"

# 4. A small pack set, written by the installed mkpack.
mkdir -p "$tmp/tree/images" "$mnt"
for i in 1 2 3; do head -c $((i * 5000)) /dev/urandom >"$tmp/tree/images/$i.jpg"; done
echo "hello" >"$tmp/tree/readme.txt"
/usr/bin/mkpack pack --no-fsync "$tmp/tree" "$tmp/media" >/dev/null 2>&1 || die "installed mkpack pack failed"
/usr/bin/mkpack verify "$tmp/media" >/dev/null 2>&1 || die "installed mkpack verify failed"

check_mount() {  # check_mount HOW: the mount at $mnt serves the tree through /usr/bin/packfs
  local how=$1 f pid found=0
  [[ $(findmnt -rn -o FSTYPE -M "$mnt") == fuse.packfs ]] || die "$how: $mnt is not a fuse.packfs mount"
  for f in images/1.jpg images/2.jpg images/3.jpg readme.txt; do
    cmp -s "$tmp/tree/$f" "$mnt/$f" || die "$how: $mnt/$f differs from the packed file"
  done
  for pid in $(pgrep -x packfs); do
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$mnt"; then
      [[ $(readlink "/proc/$pid/exe") == /usr/bin/packfs ]] ||
        die "$how: the daemon is $(readlink "/proc/$pid/exe"), not /usr/bin/packfs"
      found=1
    fi
  done
  ((found)) || die "$how: no packfs daemon serves $mnt"
}
unmount() {
  umount "$mnt" || die "umount $mnt failed"
  for _ in $(seq 100); do findmnt -rn -M "$mnt" >/dev/null || return 0; sleep 0.1; done
  die "$mnt is still mounted after umount"
}

# 5. mount -t fuse.packfs, with the empty environment mount(8) gives helpers.
out=$(env -i /usr/bin/mount -t fuse.packfs "$tmp/media" "$mnt" -o ro 2>&1) ||
  die "mount -t fuse.packfs failed: $out"
check_mount "mount -t fuse.packfs"
unmount

# 6. An fstab line, through mount -a on a temporary fstab file.
echo "$tmp/media  $mnt  fuse.packfs  ro,allow_other,umask=0227,nofail  0 0" >"$tmp/fstab"
out=$(env -i /usr/bin/mount -a -T "$tmp/fstab" 2>&1) || die "mount -a -T fstab failed: $out"
check_mount "fstab"
[[ $(stat -c %a "$mnt/readme.txt") == 440 ]] || die "fstab: umask=0227 not applied ($(stat -c %a "$mnt/readme.txt"))"
unmount

# 7. Remove the package; nothing of it stays.
out=$(DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq -o DPkg::Lock::Timeout=300 packfs 2>&1) ||
  die "apt-get remove -y packfs failed: $out"
installed && die "packfs is still installed after apt-get remove"
for f in /usr/bin/packfs /usr/bin/mkpack /usr/sbin/mount.fuse.packfs /usr/share/man/man1/packfs.1.gz; do
  [[ -e $f ]] && die "$f is left behind after apt-get remove"
done
echo "package OK: built, installed, mounted with mount -t and fstab, removed"
