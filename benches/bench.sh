#!/usr/bin/env bash
# The scan, watch and reclaim benchmark, in one run: the seed's scale (700k leaked Metal dirs) and a 1M-entry mixed
# tree, CacheWatch against diskus, pdu (parallel-disk-usage), du and gdu.
#
#   scan     each tool on each tree: one untimed warm-up run, then RUNS runs under /usr/bin/time,
#            interleaved (run k of every tool before run k+1);
#            medians of wall, user, sys, CPU, peak RSS and each one's ratio to the best peer; then
#            cachewatch scan --json's allocated/apparent totals against du -B1 / du -b (MATCH).
#   watch    cachewatch watch on the seed tree: resident (VmRSS) and peak (VmHWM) after the first
#            scan and its first figures (the monitor's info log line "first scan and figures done",
#            logged once the first reclaimable figures are computed, the events queued meanwhile
#            handled and the free heap returned), and over IDLE s of idle from there, and the CPU
#            used while idle. Also shown: the resident set when the roots' totals first appear on
#            /metrics (the point read before: the figures may still be computing then).
#   reclaim  two fresh copies of the seed tree, one after the other (each deleted after use):
#            cachewatch reclaim --older-than 12h --yes on one, find ... -mmin +720 -exec rm -rf on
#            the other; wall, CPU, peak RSS; then the young dirs must be exactly what is left.
# Ends with a summary block (machine, date, figures) to paste into the README.
#
# usage: benches/bench.sh [options]
#   --dirs N          seed tree: N gpuarchiver dirs of one file each     [700000]
#   --young N         of which N young (mtime now), the rest a day old    [700]
#   --mixed N         mixed tree of about N entries; 0: none              [1000000]
#   --seed-tree PATH  use this seed tree (read-only; e.g. /work/bench/seed-700k) instead of
#                     generating one; --young still says how many of it are young
#   --work DIR        generated trees, copies, logs                      [${TMPDIR:-/tmp}/cachewatch-bench]
#   --runs N          timed runs per tool (median)                        [3]
#   --sections LIST   comma-separated: scan,watch,reclaim                 [scan,watch,reclaim]
#   --idle SECS       watch: idle time measured after the first scan      [60]
#   --cachewatch BIN  the binary to measure [built: cargo build --release -p cachewatch-cli,
#                     in $CARGO_TARGET_DIR or target/]
#   --no-install      do not install missing peers (a missing peer is skipped)
# Quick check: benches/bench.sh --dirs 20000 --mixed 50000 --runs 1 --idle 10
# Generated trees are reused (WORK/seed-DIRS-YOUNG, WORK/mixed-N). The whole output is also saved
# as WORK/bench-DATE.log. Installing peers needs the network (cargo install, apt-get).
set -euo pipefail

DIRS=700000 YOUNG=700 MIXED=1000000 SEED_TREE="" WORK=${TMPDIR:-/tmp}/cachewatch-bench
RUNS=3 SECTIONS=scan,watch,reclaim IDLE=60 CW="" INSTALL=1
usage() { sed -n '/^# usage:/,/^# as WORK/p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
    case $1 in
        --dirs) DIRS=$2; shift 2 ;;
        --young) YOUNG=$2; shift 2 ;;
        --mixed) MIXED=$2; shift 2 ;;
        --seed-tree) SEED_TREE=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --sections) SECTIONS=$2; shift 2 ;;
        --idle) IDLE=$2; shift 2 ;;
        --cachewatch) CW=$2; shift 2 ;;
        --no-install) INSTALL=0; shift ;;
        -h|--help) usage 0 ;;
        *) echo "unknown option: $1" >&2; usage 2 ;;
    esac
done
has() { case ",$SECTIONS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

HERE=$(cd "$(dirname "$0")/.." && pwd)
GEN="$HERE/benches/gen_tree.py"
TABLE="$HERE/benches/bench_table.py"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
RES="$WORK/results"
rm -rf "$RES"; mkdir -p "$RES"
SUMMARY="$RES/summary.md"; : > "$SUMMARY"
LOG="$WORK/bench-$(date -u +%Y%m%dT%H%M%SZ).log"
exec > >(tee "$LOG") 2>&1
T0=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
export PATH="$HOME/.cargo/bin:$PATH"
# CacheWatch reads no user config and writes its history DB under WORK.
export CACHEWATCH_CONFIG="$WORK/config.toml" CACHEWATCH_DATA_DIR="$WORK/data"
: > "$CACHEWATCH_CONFIG"
mkdir -p "$CACHEWATCH_DATA_DIR"
unset CACHEWATCH_LOG || true

say() { printf '\n== %s  [%s, +%ds]\n' "$*" "$(date -u +%H:%M:%S)" $(( $(date +%s) - T0 )); }
mib() { awk -v k="$1" 'BEGIN{printf "%.1f", k/1024}'; }

# ---------------------------------------------------------------- tools
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
install_peer() { # NAME: install it unless present or --no-install
    command -v "$1" >/dev/null && return 0
    [ "$INSTALL" = 1 ] || { echo "$1 missing (--no-install): skipped"; return 0; }
    echo "installing $1 ..."
    case $1 in
        diskus) cargo install --locked diskus ;;
        pdu) cargo install --locked parallel-disk-usage ;;
        gdu) $SUDO apt-get install -y gdu ;;  # Debian 12: package gdu, binary gdu (5.22)
        time) $SUDO apt-get install -y time ;;
    esac >"$WORK/install-$1.log" 2>&1 || echo "installing $1 failed (see $WORK/install-$1.log): skipped"
}
say "tools"
[ -x /usr/bin/time ] || install_peer time
for p in diskus pdu gdu; do install_peer "$p"; done
[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) is needed"; exit 1; }
if [ -z "$CW" ]; then
    (cd "$HERE" && nice -n 5 cargo build --release --quiet -p cachewatch-cli)
    CW="${CARGO_TARGET_DIR:-$HERE/target}/release/cachewatch"
fi
[ -x "$CW" ] || { echo "no cachewatch binary at $CW"; exit 1; }
CW_REV=$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$HERE" diff --quiet 2>/dev/null || CW_REV="$CW_REV+dirty"
echo "cachewatch: $CW ($CW_REV)"
for p in diskus pdu gdu du; do
    if command -v "$p" >/dev/null; then echo "$p: $(command -v "$p"), $("$p" --version 2>&1 | head -1 | sed 's/^Version:[[:space:]]*//')"; fi
done

# ---------------------------------------------------------------- trees
say "trees"
if [ -n "$SEED_TREE" ]; then
    SEED=$(cd "$SEED_TREE" && pwd)
    echo "seed tree (given, used read-only): $SEED"
else
    SEED="$WORK/seed-$DIRS-$YOUNG"
    if [ ! -d "$SEED" ]; then
        echo "generating the seed tree: $DIRS dirs ($YOUNG young) in $SEED"
        rm -rf "$SEED.partial"
        python3 "$GEN" seed "$SEED.partial" "$DIRS" "$YOUNG"
        mv "$SEED.partial" "$SEED"
    else
        echo "seed tree (reused): $SEED"
    fi
fi
SEED_DIRS=$(find "$SEED" -mindepth 2 -maxdepth 3 -type d -name 'gpuarchiver-*' | wc -l)
SEED_ENTRIES=$(find "$SEED" -xdev | wc -l)
echo "seed tree: $SEED_DIRS gpuarchiver dirs, $SEED_ENTRIES entries, $(du -sh -x "$SEED" | cut -f1)"
MIXED_TREE=""
if [ "$MIXED" -gt 0 ] && has scan; then
    MIXED_TREE="$WORK/mixed-$MIXED"
    if [ ! -d "$MIXED_TREE" ]; then
        echo "generating the mixed tree: about $MIXED entries in $MIXED_TREE"
        rm -rf "$MIXED_TREE.partial"
        python3 "$GEN" mixed "$MIXED_TREE.partial" "$MIXED"
        mv "$MIXED_TREE.partial" "$MIXED_TREE"
    else
        echo "mixed tree (reused): $MIXED_TREE"
    fi
    MIXED_ENTRIES=$(find "$MIXED_TREE" -xdev | wc -l)
    echo "mixed tree: $MIXED_ENTRIES entries ($(find "$MIXED_TREE" -xdev -type d | wc -l) dirs, $(find "$MIXED_TREE" -xdev -type l | wc -l) symlinks, $(find "$MIXED_TREE" -xdev -type f -links +1 | wc -l) hard-linked files), $(du -sh -x "$MIXED_TREE" | cut -f1) allocated, $(du -sh -x --apparent-size "$MIXED_TREE" | cut -f1) apparent"
fi

# ---------------------------------------------------------------- scan
# tool_argv TOOL TREE: sets ARGV to the command that scans TREE with TOOL.
tool_argv() {
    case $1 in
        cachewatch) ARGV=("$CW" scan --root "cache=$2") ;;
        diskus) ARGV=(diskus "$2") ;;
        # -x one filesystem; --max-depth=1: print the total only
        pdu) ARGV=(pdu -x --max-depth=1 "$2") ;;
        du) ARGV=(du -s -x "$2") ;;
        # -n non-interactive, -s total only, -p no progress, -x one filesystem
        gdu) ARGV=(gdu -n -s -p -x --no-prefix "$2") ;;
    esac
}
scan_tree() { # LABEL TREE
    local label=$1 tree=$2 tools=() files=() t
    say "scan: $label ($tree), warm cache, $RUNS runs each, interleaved (run k of every tool, then run k+1)"
    for t in cachewatch diskus pdu du gdu; do
        [ "$t" = cachewatch ] || command -v "$t" >/dev/null || continue
        tools+=("$t"); files+=("$RES/scan-$label-$t")
        tool_argv "$t" "$tree"
        "${ARGV[@]}" >/dev/null 2>&1 || true   # untimed warm-up
        : > "$RES/scan-$label-$t"
    done
    # Interleaved so that a change in the machine's load during the runs falls on every tool alike.
    for _ in $(seq "$RUNS"); do
        for t in "${tools[@]}"; do
            tool_argv "$t" "$tree"
            /usr/bin/time -q -f '%e %U %S %M %x' -o "$RES/time.out" "${ARGV[@]}" >/dev/null 2>"$RES/scan-$label-$t.err" || true
            tail -1 "$RES/time.out" >> "$RES/scan-$label-$t"
        done
    done
    python3 "$TABLE" scan "$label" "${tools[@]}" -- "${files[@]}" | tee "$RES/table-$label" | grep -v '^MD|'
    grep '^MD|' "$RES/table-$label" | sed 's/^MD|//' >> "$SUMMARY"
    local du_b1 du_b cw
    du_b1=$(du -s -x -B1 "$tree" | cut -f1)
    du_b=$(du -s -x -b "$tree" | cut -f1)
    cw=$("$CW" scan --json --root "cache=$tree" | python3 -c 'import json,sys; r=json.load(sys.stdin)["roots"][0]; print(r["allocated_bytes"], r["apparent_bytes"], r["items"], r["files"], r["dirs"])') || cw="? ? ? ? ?"
    read -r a b items nf nd <<<"$cw"
    local verdict=MATCH
    [ "$a" = "$du_b1" ] && [ "$b" = "$du_b" ] || verdict=MISMATCH
    echo "totals: cachewatch allocated $a apparent $b ($items items, $nf files, $nd dirs); du -B1 $du_b1, du -b $du_b: $verdict"
    echo "|| scan $label | totals vs du | | | | | $verdict ($a B allocated, $b B apparent) |" >> "$SUMMARY"
}
if has scan; then
    scan_tree "seed-$SEED_DIRS" "$SEED"
    [ -z "$MIXED_TREE" ] || scan_tree "mixed-$MIXED" "$MIXED_TREE"
fi

# ---------------------------------------------------------------- watch
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
if has watch; then
    say "watch: $SEED, first scan then $IDLE s idle"
    TCK=$(getconf CLK_TCK)
    echo "inotify: max_user_watches $(cat /proc/sys/fs/inotify/max_user_watches) (the tree has $(find "$SEED" -xdev -type d | wc -l) dirs; above the limit the monitor rescans every 60 s instead)"
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # Warnings as usual, plus the monitor actor's info lines (the "first scan and figures done" one).
    RUST_LOG="warn,cachewatch::monitor::actor=info" \
        "$CW" watch --no-auto-reclaim --root "cache=$SEED" --metrics "127.0.0.1:$PORT" >"$RES/watch.out" 2>"$RES/watch.err" &
    WPID=$!
    trap 'kill -TERM $WPID 2>/dev/null || true' EXIT
    ts=$(date +%s.%N); first=""
    while kill -0 "$WPID" 2>/dev/null; do
        if curl -sf "http://127.0.0.1:$PORT/metrics" 2>/dev/null | awk '/^cachewatch_root_allocated_bytes\{/ && $NF > 0 {ok=1} END {exit !ok}'; then
            first=$(awk -v a="$ts" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'); break
        fi
        sleep 0.2
        if awk -v a="$ts" -v b="$(date +%s.%N)" 'BEGIN{exit !(b-a > 900)}'; then break; fi
    done
    if [ -z "$first" ]; then
        echo "no first scan seen on /metrics (watch exited or 900 s passed); see $RES/watch.err"
        tail -5 "$RES/watch.err"
        echo "|| watch, seed $SEED_DIRS dirs | cachewatch watch | first scan not seen | | | | |" >> "$SUMMARY"
    else
        rssm=$(status_kib "$WPID" VmRSS); hwmm=$(status_kib "$WPID" VmHWM)
        echo "roots' totals on /metrics after $first s: resident $(mib "$rssm") MiB, peak $(mib "$hwmm") MiB (figures may still be computing)"
        # A binary older than that log line: read once its CPU time stood still for 3 s instead.
        ready="" cm=$(cpu_ticks "$WPID") still=0 point="figures done"
        while kill -0 "$WPID" 2>/dev/null; do
            if grep -q 'first scan and figures done' "$RES/watch.err"; then
                ready=$(awk -v a="$ts" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'); break
            fi
            sleep 0.2
            c=$(cpu_ticks "$WPID"); if [ "$c" = "$cm" ]; then still=$((still + 1)); else still=0 cm=$c; fi
            if [ "$still" -ge 15 ]; then point="CPU quiet for 3 s (no figures-done log line)"; break; fi
            if awk -v a="$ts" -v b="$(date +%s.%N)" 'BEGIN{exit !(b-a > 900)}'; then break; fi
        done
        [ -n "$ready" ] || ready=$(awk -v a="$ts" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
        rss0=$(status_kib "$WPID" VmRSS); hwm0=$(status_kib "$WPID" VmHWM); c0=$(cpu_ticks "$WPID")
        anon0=$(status_kib "$WPID" RssAnon); file0=$(status_kib "$WPID" RssFile)
        echo "first scan and figures done ($point) after $ready s (CPU $(awk -v t="$c0" -v h="$TCK" 'BEGIN{printf "%.2f", t/h}') s): resident $(mib "$rss0") MiB ($(mib "$anon0") MiB anonymous, $(mib "$file0") MiB file pages: the binary and libraries), peak $(mib "$hwm0") MiB"
        maxrss=$rss0; samples=""
        for s in $(seq "$IDLE"); do
            sleep 1
            kill -0 "$WPID" 2>/dev/null || { echo "watch exited during the idle time"; break; }
            r=$(status_kib "$WPID" VmRSS)
            if [ "$r" -gt "$maxrss" ]; then maxrss=$r; fi
            if [ $((s % 10)) = 0 ]; then samples="$samples $(mib "$r")"; fi
        done
        if kill -0 "$WPID" 2>/dev/null; then
            hwm1=$(status_kib "$WPID" VmHWM); rss1=$(status_kib "$WPID" VmRSS); c1=$(cpu_ticks "$WPID")
            idle_cpu=$(awk -v a="$c0" -v b="$c1" -v h="$TCK" 'BEGIN{printf "%.2f", (b-a)/h}')
            echo "idle ${IDLE} s from there: resident every 10 s (MiB):$samples; max resident $(mib "$maxrss") MiB; peak (VmHWM) $(mib "$hwm1") MiB; CPU used $idle_cpu s"
            echo "|| watch, seed $SEED_DIRS dirs | cachewatch watch | first scan after $first s | | | resident $(mib "$rss0") MiB after the first scan and figures ($(mib "$rssm") MiB when its totals first showed on /metrics), max $(mib "$maxrss") MiB over $IDLE s idle; peak (VmHWM) $(mib "$hwm1") MiB | CPU $idle_cpu s over the idle $IDLE s after the figures |" >> "$SUMMARY"
        fi
    fi
    kill -TERM "$WPID" 2>/dev/null || true
    wait "$WPID" 2>/dev/null || true
    trap - EXIT
    n=$(grep -ci 'rescan\|inotify\|overflow' "$RES/watch.err" || true)
    echo "watch stderr: $(wc -l < "$RES/watch.err") lines, $n mentioning rescan/inotify/overflow (in $RES/watch.err)"
fi

# ---------------------------------------------------------------- reclaim
if has reclaim; then
    say "reclaim vs rm -rf on fresh copies of $SEED"
    # One copy at a time (each deleted right after use): the disk is shared.
    need=$(du -s -x -B1 "$SEED" | cut -f1)
    avail=$(df -B1 --output=avail "$WORK" | tail -1)
    if [ "$avail" -lt $(( need + (2 << 30) )) ]; then
        echo "not enough free space for a copy: need $(( need >> 20 )) MiB + 2 GiB, $(( avail >> 20 )) MiB free: skipped"
        echo "|| reclaim | skipped: not enough free space | | | | | |" >> "$SUMMARY"
    else
        OLD=$(( SEED_DIRS - YOUNG ))
        left() { (cd "$1" && find . -mindepth 2 -maxdepth 3 -type d -name 'gpuarchiver-*' | sed 's|^\./||' | LC_ALL=C sort); }
        for who in cw rm; do
            copy="$WORK/copy-$who"
            rm -rf "$copy"
            trap 'rm -rf "$copy"' EXIT
            t=$(date +%s); cp -a "$SEED" "$copy"
            python3 "$GEN" touch-young "$copy" "$YOUNG"  # young again, however old the seed tree
            python3 "$GEN" young "$copy" "$YOUNG" | LC_ALL=C sort > "$RES/young.expected"
            sync -f "$WORK"
            echo "copied to $copy in $(( $(date +%s) - t )) s (synced)"
            if [ $who = cw ]; then
                name="cachewatch reclaim"
                /usr/bin/time -q -f '%e %U %S %M %x' -o "$RES/time.$who" \
                    "$CW" reclaim --root "cache=$copy" --older-than 12h --yes >"$RES/reclaim.out" 2>&1 || true
                echo "cachewatch reclaim's summary:"; tail -8 "$RES/reclaim.out" | sed 's/^/  /'
            else
                name="find -exec rm -rf"
                /usr/bin/time -q -f '%e %U %S %M %x' -o "$RES/time.$who" \
                    find "$copy" -mindepth 2 -maxdepth 3 -type d -name 'gpuarchiver-*' -mmin +720 -prune -exec rm -rf {} + || true
            fi
            left "$copy" > "$RES/left.$who"
            if cmp -s "$RES/left.$who" "$RES/young.expected"; then ok="OK: the $YOUNG young dirs are left"
            else ok="FAIL: $(wc -l < "$RES/left.$who") dirs left, $(comm -3 "$RES/left.$who" "$RES/young.expected" | wc -l) differ from the $YOUNG young ones"; fi
            read -r w u s m x < <(tail -1 "$RES/time.$who")
            printf '%-20s wall %8.2f s   user %7.2f s   sys %7.2f s   peak RSS %8.1f MiB   exit %s   %s\n' "$name" "$w" "$u" "$s" "$(mib "$m")" "$x" "$ok"
            echo "|| reclaim $OLD of $SEED_DIRS dirs | $name | $w s | $u s | $s s | $(mib "$m") MiB | $ok |" >> "$SUMMARY"
            eval "W_$who=$w"
            rm -rf "$copy"; trap - EXIT
        done
        awk -v a="$W_cw" -v b="$W_rm" 'BEGIN{printf "reclaim wall / rm -rf wall: %.2f\n", a/b}'
    fi
fi

# ---------------------------------------------------------------- summary
say "summary (paste into the README)"
cpu=$(lscpu 2>/dev/null | awk -F: '/^Model name/ {gsub(/^ +/, "", $2); print $2; exit}')
echo "date: $(date -u +%Y-%m-%d) ($(date -u +%H:%M) UTC); machine: $(nproc) CPUs, ${cpu:-unknown CPU}, $(awk '/^MemTotal:/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo), Linux $(uname -r), $(findmnt -n -o FSTYPE -T "$WORK" 2>/dev/null || stat -f -c %T "$WORK") work dir; load average $LOAD0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "cachewatch $CW_REV; peers: $(for p in diskus pdu gdu du; do command -v "$p" >/dev/null && printf '%s; ' "$("$p" --version 2>&1 | head -1 | sed "s/^Version:[[:space:]]*/gdu /")"; done)"
echo "trees: seed $SEED_DIRS gpuarchiver dirs of one file ($YOUNG young), $SEED_ENTRIES entries${MIXED_TREE:+; mixed $MIXED_ENTRIES entries}; scan: median of $RUNS warm runs"
echo "| what | tool | wall | user | sys | peak RSS | notes |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
sed 's/^|| /| /' "$SUMMARY"
echo "(full run: $(( $(date +%s) - T0 )) s; log: $LOG)"
