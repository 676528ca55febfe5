#!/usr/bin/env bash
# Scan and reclaim benchmark on one generated tree, in one run. Prints wall time and peak RSS of
#   cachewatch scan --root cache=TREE   vs   du -s -x   and   diskus
#   cachewatch reclaim --older-than 0s --yes   vs   rm -rf   (each on a fresh copy of the archives)
# and their ratios. Caches are warm (every command runs once untimed first); best of RUNS runs.
#
# usage: benches/bench.sh [ARCHIVES=200000] [BUNDLES=200] [WORKDIR=/tmp/cachewatch-bench] [RUNS=3]
# The tree is reused when WORKDIR already holds one of the same size.
set -euo pipefail

ARCHIVES=${1:-200000}
BUNDLES=${2:-200}
WORK=${3:-${TMPDIR:-/tmp}/cachewatch-bench}
RUNS=${4:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
TREE="$WORK/tree-$ARCHIVES-$BUNDLES"

command -v /usr/bin/time >/dev/null || { apt-get install -y time >/dev/null || sudo apt-get install -y time >/dev/null; }
command -v diskus >/dev/null || cargo install diskus
export PATH="$HOME/.cargo/bin:$PATH"

cd "$HERE"
cargo build --release --quiet -p cachewatch-cli
cargo build --release --quiet -p cachewatch-core --example scan
CW="$HERE/target/release/cachewatch"
EX="$HERE/target/release/examples/scan"

mkdir -p "$WORK"
if [ ! -d "$TREE" ]; then
    echo "generating $ARCHIVES archive dirs + $BUNDLES bundles in $TREE ..."
    python3 "$HERE/benches/gen_tree.py" "$TREE.partial" "$ARCHIVES" "$BUNDLES"
    mv "$TREE.partial" "$TREE"
fi
ENTRIES=$(find "$TREE" -xdev | wc -l)
echo "tree: $TREE  entries: $ENTRIES  du -sh: $(du -sh -x "$TREE" | cut -f1)  cpus: $(nproc)"

# Which scanner: the CLI if it has a working `scan`, else the example binary.
if "$CW" scan --root "cache=$TREE" >/dev/null 2>&1; then
    SCAN=("$CW" scan --root "cache=$TREE")
    SCAN_NAME="cachewatch scan"
else
    SCAN=("$EX" "cache=$TREE")
    SCAN_NAME="examples/scan (CLI scan not available)"
fi

# best_of NAME CMD...: best wall seconds and its peak RSS (KiB) over RUNS runs, after one warm-up
# (the user and system CPU seconds of that run are printed too).
best_of() {
    local name=$1; shift
    "$@" >/dev/null 2>&1 || true
    local best="" rss="" usr="" sys=""
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %M %U %S" -o "$WORK/time.out" "$@" >/dev/null 2>&1 || true
        read -r wall kib u s < "$WORK/time.out"
        if [ -z "$best" ] || awk "BEGIN{exit !($wall < $best)}"; then best=$wall; rss=$kib; usr=$u; sys=$s; fi
    done
    printf '%-45s wall %7.3f s   user %6.2f s   sys %6.2f s   peak RSS %8.1f MiB\n' "$name" "$best" "$usr" "$sys" "$(awk "BEGIN{print $rss/1024}")" >&2
    echo "$best $rss"
}

echo "== scan (warm cache, best of $RUNS)"
read -r t_cw m_cw < <(best_of "$SCAN_NAME" "${SCAN[@]}")
read -r t_du m_du < <(best_of "du -s -x" du -s -x "$TREE")
read -r t_dk m_dk < <(best_of "diskus" diskus "$TREE")
awk -v a="$t_cw" -v b="$t_du" -v c="$t_dk" 'BEGIN{printf "ratios: scan/du %.2f  scan/diskus %.2f\n", a/b, a/c}'

echo "== totals (must be equal)"
DU_B1=$(du -s -x -B1 "$TREE" | cut -f1)
DU_B=$(du -s -x -b "$TREE" | cut -f1)
EX_OUT=$("$EX" "cache=$TREE")
echo "du -B1 $DU_B1  du -b $DU_B"
echo "scan   $(echo "$EX_OUT" | head -1 | awk '{print "allocated " $4 "  apparent " $6 "  items " $12}')"
echo "$EX_OUT" | head -1 | awk -v a="$DU_B1" -v b="$DU_B" '{ if ($4 != a || $6 != b) { print "MISMATCH"; exit 1 } else print "equal" }'

echo "== reclaim vs rm -rf (fresh copies of com.apple.gpuarchiver, $ARCHIVES dirs)"
fresh() { rm -rf "$1"; mkdir -p "$1"; cp -a "$TREE/com.apple.gpuarchiver" "$1/"; }
fresh "$WORK/copy-cw"
/usr/bin/time -f "%e %M" -o "$WORK/time.out" "$CW" reclaim --root "cache=$WORK/copy-cw" --older-than 0s --yes >"$WORK/reclaim.out" 2>&1 || echo "reclaim exited $? (see $WORK/reclaim.out)"
read -r t_rc m_rc < "$WORK/time.out"
LEFT=$(find "$WORK/copy-cw/com.apple.gpuarchiver" -mindepth 1 -maxdepth 1 -name 'gpuarchiver-*' | wc -l)
printf '%-45s wall %7.3f s   peak RSS %8.1f MiB   (left: %s dirs)\n' "cachewatch reclaim --older-than 0s --yes" "$t_rc" "$(awk "BEGIN{print $m_rc/1024}")" "$LEFT"
fresh "$WORK/copy-rm"
/usr/bin/time -f "%e %M" -o "$WORK/time.out" find "$WORK/copy-rm/com.apple.gpuarchiver" -mindepth 1 -maxdepth 1 -name 'gpuarchiver-*' -exec rm -rf {} +
read -r t_rm m_rm < "$WORK/time.out"
printf '%-45s wall %7.3f s   peak RSS %8.1f MiB\n' "rm -rf (same dirs, via find -exec rm -rf {} +)" "$t_rm" "$(awk "BEGIN{print $m_rm/1024}")"
awk -v a="$t_rc" -v b="$t_rm" 'BEGIN{printf "ratio: reclaim/rm %.2f\n", a/b}'
rm -rf "$WORK/copy-cw" "$WORK/copy-rm"
