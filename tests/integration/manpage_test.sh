#!/usr/bin/env bash
# manpage_test: the manual pages packfs(1) and mkpack(1) format without a single groff/man warning,
# carry the project version and the usual sections, and agree with the programs' --help: every
# option `--help` shows (of packfs, of mkpack, and of every mkpack subcommand) appears in the page
# (for mkpack, in the subsection of that subcommand), every subcommand has a subsection, and every
# option a subsection documents exists. Failures name the option, the command and the page.
# Also checks that --version prints the version and a git revision.
# Usage: tests/integration/manpage_test.sh SOURCE_DIR BUILD_DIR VERSION
set -uo pipefail
src=$1 build=$2 version=$3
packfs_page=$src/fuse/packfs.1
mkpack_page=$src/mkpack/mkpack.1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
  echo "FAIL: man (man-db) or groff (groff-base) is missing: run scripts/install-deps.sh"
  exit 1
fi
for p in "$build/packfs" "$build/mkpack"; do
  [[ -x $p ]] || { echo "FAIL: $p is not built"; exit 1; }
done

# 1. man --warnings prints nothing (it exits 0 even with warnings, so look at stderr).
for page in "$packfs_page" "$mkpack_page"; do
  warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
  [[ -z $warnings ]] || fail "$page: man --warnings reports:"$'\n'"$warnings"
  text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>/dev/null)
  [[ $(wc -l <<<"$text") -gt 50 ]] || fail "$page: renders to almost nothing"
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" FILES EXAMPLES "SEE ALSO"; do
    grep -q "^\.SH \"\?$section\"\?\$" "$page" || fail "$page: no section $section"
  done
  grep -q "^\.TH .*\"packfs $version\"" "$page" ||
    fail "$page: the .TH line does not name \"packfs $version\" (bump it with the project version)"
done

# The roff source as plain text: font escapes dropped, \- as -, so options read as typed.
plain() { sed -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' -e 's/\\-/-/g' -e 's/\\e/\\/g' "$@"; }
# Options listed in the Options: section of CLI11 --help output (one per line: -x and --long).
help_options() {
  awk '/^Options:/ {in_opts = 1; next} /^[A-Z][A-Za-z]*:/ {in_opts = 0}
       in_opts && /^  -/ {print $1}' | tr ',' '\n' | sed -n 's/^\(--\?[A-Za-z0-9][A-Za-z0-9-]*\).*/\1/p'
}
# Whether text on stdin mentions option $1 as a whole word.
mentions() { grep -q -- "\(^\|[^A-Za-z0-9-]\)$1\([^A-Za-z0-9-]\|\$\)"; }

# 2. packfs --help against packfs(1).
help=$("$build/packfs" --help) || fail "packfs --help exits non-zero"
packfs_text=$(plain "$packfs_page")
while read -r opt; do
  mentions "$opt" <<<"$packfs_text" || fail "option $opt of 'packfs --help' is missing from fuse/packfs.1"
done < <(help_options <<<"$help")
# The other way: every option documented in OPTIONS exists.
options_section=$(plain "$packfs_page" | awk '/^\.SH OPTIONS/ {on = 1; next} /^\.SH/ {on = 0} on')
while read -r opt; do
  mentions "$opt" <<<"$help" ||
    fail "option $opt is documented in fuse/packfs.1 OPTIONS but 'packfs --help' does not show it"
done < <(grep -o -- '\(^\|[ "]\)--\?[A-Za-z][A-Za-z0-9-]*' <<<"$options_section" |
         sed 's/^[ "]//' | grep '^-' | sort -u)

# 3. mkpack --help and every subcommand's --help against mkpack(1).
help=$("$build/mkpack" --help) || fail "mkpack --help exits non-zero"
mkpack_text=$(plain "$mkpack_page")
subs=$(awk '/^Subcommands:/ {on = 1; next} /^[A-Z][A-Za-z]*:/ {on = 0} on && /^  [a-z]/ {print $1}' <<<"$help")
[[ -n $subs ]] || fail "mkpack --help lists no subcommands"
while read -r opt; do
  mentions "$opt" <<<"$mkpack_text" || fail "option $opt of 'mkpack --help' is missing from mkpack/mkpack.1"
done < <(help_options <<<"$help")
documented=$(sed -n 's/^\.SS "mkpack \([a-z-]*\).*/\1/p' "$mkpack_page")
for sub in $subs; do
  section=$(plain "$mkpack_page" | awk -v h=".SS \"mkpack $sub " \
            'index($0, h) == 1 {on = 1; next} /^\.S[SH]/ {on = 0} on')
  if [[ -z $section ]]; then
    fail "subcommand '$sub' (in 'mkpack --help') has no .SS \"mkpack $sub ...\" subsection in mkpack/mkpack.1"
    continue
  fi
  grep -q "^\.B mkpack $sub\$" "$mkpack_page" || fail "subcommand '$sub' is missing from the SYNOPSIS of mkpack/mkpack.1"
  sub_help=$("$build/mkpack" "$sub" --help) || fail "mkpack $sub --help exits non-zero"
  while read -r opt; do
    [[ $opt == -h || $opt == --help ]] && continue  # documented once, under OPTIONS
    mentions "$opt" <<<"$section" ||
      fail "option $opt of 'mkpack $sub --help' is missing from the '$sub' subsection of mkpack/mkpack.1"
  done < <(help_options <<<"$sub_help")
  # Options the subsection documents as items (.TP tags) must exist.
  while read -r opt; do
    mentions "$opt" <<<"$sub_help" ||
      fail "option $opt is documented in the '$sub' subsection of mkpack/mkpack.1 but 'mkpack $sub --help' does not show it"
  done < <(awk '/^\.TP/ {getline; print}' <<<"$section" | grep -o -- '--\?[A-Za-z][A-Za-z0-9-]*' |
           grep '^-' | sort -u)
done
for sub in $documented; do
  grep -qx "$sub" <<<"$subs" || fail "mkpack/mkpack.1 documents subcommand '$sub' which 'mkpack --help' does not list"
done

# 4. --version: the version and a git revision.
v=$("$build/packfs" --version) || fail "packfs --version exits non-zero"
[[ $v =~ ^packfs\ $version\ \(git\ ([0-9a-f]{7,40}|unknown)\)$ ]] || fail "packfs --version prints '$v'"
v=$("$build/mkpack" --version) || fail "mkpack --version exits non-zero"
[[ $v =~ ^mkpack\ $version\ \((git\ )?([0-9a-f]{7,40}|unknown)\)$ ]] || fail "mkpack --version prints '$v'"

if ((failures > 0)); then
  echo "$failures problem(s)"
  exit 1
fi
echo "manual pages OK"
