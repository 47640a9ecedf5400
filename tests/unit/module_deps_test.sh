#!/usr/bin/env bash
# Each core module (and fuse/'s library) includes and calls only the modules it declares in
# CMakeLists.txt (packfs_module ... DEPS): an include of an undeclared module's header, or a call
# into its compiled code, fails here and names the file or symbol.
# Usage: module_deps_test.sh SOURCE_DIR SPECS   (SPECS: lines "name:library:dep+dep", written
# by CMake from the declarations)
set -euo pipefail
src=$1
specs=$2
declare -A lib deps
while IFS=: read -r name path list; do
  [[ -n $name ]] || continue
  lib[$name]=$path
  deps[$name]=" ${list//+/ } "
done < "$specs"
((${#lib[@]} >= 8)) || { echo "expected 7 core modules and fuse in $specs"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dir_of() { [[ $1 == fuse ]] && echo "$src/fuse" || echo "$src/core/$1"; }
for n in "${!lib[@]}"; do
  # Strong definitions only: inline functions and templates (weak, W/V) live in every user.
  nm -g "${lib[$n]}" > "$tmp/$n.nm"
  awk 'NF == 3 && $2 ~ /^[TDBR]$/ { print $3 }' "$tmp/$n.nm" | sort -u > "$tmp/$n.def"
  awk 'NF == 2 && $1 == "U" { print $2 }' "$tmp/$n.nm" | sort -u > "$tmp/$n.undef"
done
# The check itself works: format calls base's code, which nm must see.
[[ -n $(comm -12 "$tmp/format.undef" "$tmp/base.def") ]] ||
  { echo "nm found no call from packfs_format into packfs_base: the check is broken"; exit 1; }
fail=0
allowed() { [[ $1 == "$2" || ${deps[$1]} == *" $2 "* ]]; }
for n in "${!lib[@]}"; do
  d=$(dir_of "$n")
  while IFS= read -r hit; do
    [[ $hit =~ \#include\ \"core/([a-z]+)/ ]] && m=${BASH_REMATCH[1]}
    if ! allowed "$n" "$m"; then
      echo "${hit%%:*}: includes core/$m/, which module $n does not declare" \
           "(CMakeLists.txt: add $m to its DEPS, or move the code)"
      fail=1
    fi
  done < <(grep -HE '^#include "core/[a-z]+/' "$d"/*.h "$d"/*.cc | grep -v "^$src/fuse/main.cc:")
  for m in "${!lib[@]}"; do
    allowed "$n" "$m" && continue
    used=$(comm -12 "$tmp/$n.undef" "$tmp/$m.def" | head -3 | c++filt | tr '\n' ' ')
    if [[ -n $used ]]; then
      echo "packfs_$n calls packfs_$m, which it does not declare: $used"
      fail=1
    fi
  done
done
((fail == 0)) && echo "${#lib[@]} modules: every include and call is declared"
exit "$fail"
