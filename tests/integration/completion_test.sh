#!/usr/bin/env bash
# completion_test: sources scripts/completion/{packfs,mkpack} in a clean bash and checks what they
# complete: mkpack subcommands, every option that `--help` shows for packfs, mkpack and each mkpack
# subcommand (a failure names the option and the command), option values (--group-by, --missing,
# --on-collision, -o mount options after a comma), directories for pack-directory positionals, and
# the keys of a pack set for `mkpack resolve DIR`.
# Usage: tests/integration/completion_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# complete_words 'WORD...': the words offered for the last word of the command line, one per line, as
# bash would compute them (the completion function run with COMP_WORDS/COMP_CWORD set), in a
# fresh bash that has only the completion file sourced. PATH has the build tree first so that
# `mkpack ls` inside the completion is the built one.
complete_words() {
  local -a words
  read -ra words <<<"$1"
  [[ $1 == *" " ]] && words+=("")  # a trailing space: completing an empty word
  (cd "$tmp/cwd" && PATH="$build:$PATH" bash --norc --noprofile -c '
    source "$1/scripts/completion/packfs" || exit 3
    source "$1/scripts/completion/mkpack" || exit 3
    shift
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    fn=$(complete -p "$1" | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
    [[ -n $fn ]] || exit 4
    "$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' bash "$src" "${words[@]}")
}
expect_has() {  # expect_has "WORDS..." WANT : the completion of WORDS offers WANT
  local got
  got=$(complete_words "$1")
  grep -qxF -- "$2" <<<"$got" || fail "completing '$1' does not offer '$2' (offers: $(tr '\n' ' ' <<<"$got"))"
}
expect_only() {  # expect_only "WORDS..." WANT... : offers exactly these, in any order
  local words=$1 got want
  shift
  got=$(complete_words "$words" | sort)
  want=$(printf '%s\n' "$@" | sort)
  [[ $got == "$want" ]] || fail "completing '$words' offers '$(tr '\n' ' ' <<<"$got")', want '$*'"
}
help_options() {
  awk '/^Options:/ {in_opts = 1; next} /^[A-Z][A-Za-z]*:/ {in_opts = 0}
       in_opts && /^  -/ {print $1}' | tr ',' '\n' | sed -n 's/^\(--\?[A-Za-z0-9][A-Za-z0-9-]*\).*/\1/p'
}

for p in "$build/packfs" "$build/mkpack"; do
  [[ -x $p ]] || { echo "FAIL: $p is not built"; exit 1; }
done
mkdir -p "$tmp/cwd/photos/a" "$tmp/cwd/media" "$tmp/cwd/mnt"
echo x > "$tmp/cwd/photos/a/1.jpg"
echo y > "$tmp/cwd/photos/a/2.jpg"
echo z > "$tmp/cwd/photos/b.txt"
touch "$tmp/cwd/notadir"
"$build/mkpack" pack --no-fsync "$tmp/cwd/photos" "$tmp/cwd/media/set" >/dev/null 2>&1 ||
  fail "mkpack pack of the test tree failed"

# Both files define a completion for their program, and only through functions.
out=$(bash --norc --noprofile -c 'source "$1/scripts/completion/packfs"; source "$1/scripts/completion/mkpack";
      complete -p packfs; complete -p mkpack' bash "$src" 2>&1)
grep -q -- '-F _packfs packfs$' <<<"$out" || fail "scripts/completion/packfs does not register: $out"
grep -q -- '-F _mkpack mkpack$' <<<"$out" || fail "scripts/completion/mkpack does not register: $out"

# mkpack: subcommands, then every option of every subcommand's --help.
subs=$("$build/mkpack" --help | awk '/^Subcommands:/ {on = 1; next} /^[A-Z][A-Za-z]*:/ {on = 0}
                                     on && /^  [a-z]/ {print $1}')
[[ -n $subs ]] || fail "mkpack --help lists no subcommands"
for sub in $subs; do expect_has "mkpack " "$sub"; done
expect_only "mkpack ver" verify
expect_only "mkpack un" unpack
while read -r opt; do expect_has "mkpack -" "$opt"; done < <("$build/mkpack" --help | help_options)
for sub in $subs; do
  while read -r opt; do
    expect_has "mkpack $sub -" "$opt"
  done < <("$build/mkpack" "$sub" --help | help_options)
done
# Values and positionals.
expect_only "mkpack pack --group-by " none dir stem
expect_only "mkpack pack --group-by s" stem
expect_only "mkpack pack --missing " error skip
expect_only "mkpack pack --no-" --no-catalog --no-fsync
expect_only "mkpack verify ph" photos
expect_only "mkpack verify photos/" photos/a
expect_only "mkpack pack --group-by stem photos m" media mnt
expect_only "mkpack ls -l me" media
expect_only "mkpack resolve media/set a/" a/1.jpg a/2.jpg
expect_only "mkpack resolve --json media/set b" b.txt
expect_has "mkpack pack --files-from no" notadir

# packfs: every option of --help, option values, directories.
while read -r opt; do expect_has "packfs -" "$opt"; done < <("$build/packfs" --help | help_options)
expect_only "packfs --on-collision " error first last
expect_only "packfs --catalog no" none notadir
expect_has "packfs -o " allow_other
expect_only "packfs -o ro,allow_other,um" ro,allow_other,umask=
expect_only "packfs -o nozero" nozerocopy
expect_only "packfs -o io_" io_uring
expect_only "packfs media/set m" media mnt
expect_only "packfs -f --threads 4 media/set mn" mnt
# Every mount option packfs(1) documents under MOUNT OPTIONS is offered.
while read -r o; do
  expect_has "packfs -o " "$o"
done < <(sed -n '/^\.SH "\?MOUNT OPTIONS/,/^\.PP/p' "$src/fuse/packfs.1" | awk '/^\.TP/ {getline; print}' |
         sed -e 's/\\f[BIRP]//g' -e 's/^\.B[IR]* //' -e 's/ .*//' -e 's/=.*/=/' | grep -v '^$')

if ((failures > 0)); then
  echo "$failures problem(s)"
  exit 1
fi
echo "completions OK"
