#!/bin/bash
# crash_flood_rss.sh BIN WORKDIR: the peak resident size of `BIN crashes` over three
# crafted 8 MiB .ips reports of about 2.8 million `{}` frames each (just under the 8 MiB read cap),
# then over one of them alone, and of `BIN watch` on that dir once its first scan is done (VmHWM
# and VmRSS). Linux (/usr/bin/time -v, /proc).
set -u
[ $# -eq 2 ] || { echo "usage: crash_flood_rss.sh BIN WORKDIR"; exit 2; }
BIN=$1; W=$2; L=$(basename "$BIN")
[ -e "$W" ] && { echo "WORKDIR $W exists: give a new path"; exit 2; }
mkdir -p "$W/reports" "$W/one" "$W/data"
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
cap = 8 * 1024 * 1024
for i, d in enumerate(["reports", "reports", "reports", "one"]):
    n = i if d == "reports" else 0
    head = '{"app_name":"flood","bug_type":"309","timestamp":"2026-03-14 10:0%d:00.00 +0000"}\n' % n
    body_open = '{"procName":"flood","exception":{"type":"EXC_BAD_ACCESS","signal":"SIGSEGV"},"faultingThread":0,"threads":[{"triggered":true,"frames":[{}'
    body_close = ']}]}\n'
    frames = (cap - len(head) - len(body_open) - len(body_close) - 1) // 3
    with open("%s/%s/flood-2026-03-14-10000%d.ips" % (w, d, n), "w") as f:
        f.write(head + body_open + ",{}" * frames + body_close)
    print("%s: %d frames" % (d, frames + 1))
PY
ls -l "$W/reports" "$W/one"
for d in reports one; do
  /usr/bin/time -v "$BIN" crashes --root diagnostic-reports="$W/$d" > "$W/$d.out" 2> "$W/$d.time"
  echo "$L crashes ($d): max RSS $(awk -F': ' '/Maximum resident/{print $2}' "$W/$d.time") kB, $(awk -F': ' '/Elapsed/{print $2}' "$W/$d.time") elapsed"
done
"$BIN" watch --data-dir "$W/data" --root diagnostic-reports="$W/reports" -v > "$W/watch.log" 2>&1 &
PID=$!
for _ in $(seq 600); do grep -q "first scan and figures done" "$W/watch.log" && break; sleep 0.1; done
sleep 2
echo "$L watch: $(grep -E 'VmHWM|VmRSS' /proc/$PID/status | tr -s ' \t\n' ' ')"
kill $PID; wait $PID 2>/dev/null
