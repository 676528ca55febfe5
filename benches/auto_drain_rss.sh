#!/bin/bash
# auto_drain_rss.sh BIN SEED_TREE WORKDIR: the monitor's resident size during an
# auto-reclaim drain. A fresh copy of SEED_TREE in WORKDIR (a drain deletes it), `BIN watch` with
# one [[auto_reclaim]] rule for metal-gpuarchiver older_than 1h (every 1h: it runs once, after
# the first scan), VmRSS sampled every 0.1 s into WORKDIR/rss.log, VmHWM read once the run is
# logged. Linux (/proc).
set -u
[ $# -eq 3 ] || { echo "usage: auto_drain_rss.sh BIN SEED_TREE WORKDIR (SEED_TREE: gen_tree.py seed DEST 100000 800; copied, never touched)"; exit 2; }
BIN=$1; SRC=$2; W=$3; L=$(basename "$BIN")
[ -e "$W" ] && { echo "WORKDIR $W exists: give a new path"; exit 2; }
mkdir -p "$W/data"
cp -a "$SRC" "$W/tree"
cat > "$W/config.toml" <<T
[[auto_reclaim]]
name = "ci-metal"
producers = ["metal-gpuarchiver"]
older_than = "1h"
every = "1h"
T
before=$(find "$W/tree" -mindepth 2 -maxdepth 3 -name 'gpuarchiver-*' | wc -l)
"$BIN" watch --config "$W/config.toml" --data-dir "$W/data" --root cache="$W/tree" -v > "$W/out.log" 2>&1 &
PID=$!
peak=0; t0=$(date +%s.%N)
while kill -0 $PID 2>/dev/null; do
  rss=$(awk '/VmRSS/{print $2}' /proc/$PID/status 2>/dev/null || echo 0)
  [ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
  echo "$(date +%s.%N) $rss" >> "$W/rss.log"
  if grep -q "auto-reclaim run" "$W/out.log"; then break; fi
  sleep 0.1
done
sleep 1
grep -E "VmHWM|VmRSS" /proc/$PID/status
t1=$(date +%s.%N)
kill $PID; wait $PID 2>/dev/null
left=$(find "$W/tree" -mindepth 2 -maxdepth 3 -name 'gpuarchiver-*' | wc -l)
echo "$L: gpuarchiver dirs before $before, left $left; sampled VmRSS peak ${peak} kB; $(echo "$t1 - $t0" | bc) s"
grep -m3 "auto-reclaim" "$W/out.log"
