#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The delay relay's own ceiling (issue 16): one TCP stream of bulk data
through tests/tools/delayrelay alone, no NFS, at each given one-way delay.

  bench/relay_ceiling.py [--baselines] RELAY_BIN MIB DELAY_MS [DELAY_MS ...]

Prints one JSON line per delay: {"delay_ms", "bytes", "secs", "mb_s"},
secs from the first byte sent to the last byte received by the sink (a
thread of this process). The sender is Python: on an idle host it moves
several hundred MB/s straight over loopback, so a figure far below that is
the relay's. Exit 1 when the relay does not start or the stream breaks.

--baselines first measures the same stream with no hop at all ("hop":
"none") and through the plainest forwarder there is ("hop": "forwarder": a
process of its own doing blocking recv_into + sendall of 1 MiB, no delay),
twice each, alternating, with "delay_ms": null: what one hop costs on this
host whatever relays it. (The report's median of two runs is the larger.)
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

IO = 1 << 20  # bytes per send and per recv


def stream(srv, dest, nbytes):
    """Send nbytes to dest, which leads to srv's listener, where a thread
    of this process sinks them; return the seconds from the first byte
    sent to the last received. Raise OSError when the stream breaks."""
    got = [0, 0.0]

    def sink():
        c, _ = srv.accept()
        # One buffer for every recv: a new 1 MiB object per recv is new
        # memory faulted in each time, which held the sink itself to ~700
        # MB/s on the benchmark's VM.
        into = memoryview(bytearray(IO))
        while got[0] < nbytes:
            n = c.recv_into(into)
            if not n:
                break
            got[0] += n
        got[1] = time.monotonic()
        c.close()

    t = threading.Thread(target=sink)
    t.start()
    s = socket.create_connection(dest)
    buf = b"x" * IO
    t0 = time.monotonic()
    for _ in range(nbytes // IO):
        s.sendall(buf)
    t.join()
    s.close()
    if got[0] != nbytes:
        raise OSError("the stream broke after %d bytes" % got[0])
    return got[1] - t0


def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    return srv


def one(relay, delay, nbytes):
    """Send nbytes through a relay at delay ms; return the JSON dict."""
    srv = listener()
    pair = "127.0.0.1:0=127.0.0.1:%d" % srv.getsockname()[1]
    p = subprocess.Popen([relay, "--delay-ms", str(delay), "--pair", pair],
                         stdout=subprocess.PIPE, text=True)
    try:
        port = None
        for line in p.stdout:
            if line.startswith("listen "):
                port = int(line.split()[1].rsplit(":", 1)[1])
            if line.strip() == "ready":
                break
        if port is None:
            raise OSError("the relay did not start")
        secs = stream(srv, ("127.0.0.1", port), nbytes)
        return {"delay_ms": delay, "bytes": nbytes, "secs": round(secs, 3),
                "mb_s": round(nbytes / secs / 1e6, 1)}
    finally:
        p.terminate()
        p.wait()
        srv.close()


def forwarder(lst, to):
    """In a child process: forward one connection accepted on lst to the
    address to, copying 1 MiB at a time; exit at EOF."""
    a, _ = lst.accept()
    b = socket.create_connection(to)
    buf = memoryview(bytearray(IO))
    while True:
        n = a.recv_into(buf)
        if not n:
            break
        b.sendall(buf[:n])
    b.close()
    a.close()


def baseline(hop, nbytes):
    """The stream straight to the sink (hop "none") or through forwarder()
    (hop "forwarder"); return the JSON dict."""
    srv = listener()
    pid = None
    try:
        dest = srv.getsockname()
        if hop == "forwarder":
            lst = listener()
            pid = os.fork()
            if pid == 0:
                try:
                    forwarder(lst, dest)
                finally:
                    os._exit(0)
            dest = lst.getsockname()
            lst.close()
        secs = stream(srv, dest, nbytes)
        return {"delay_ms": None, "hop": hop, "bytes": nbytes,
                "secs": round(secs, 3), "mb_s": round(nbytes / secs / 1e6, 1)}
    finally:
        if pid:
            os.waitpid(pid, 0)
        srv.close()


def main():
    args = sys.argv[1:]
    base = bool(args) and args[0] == "--baselines"
    if base:
        args = args[1:]
    if len(args) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    relay, mib = args[0], int(args[1])
    try:
        if base:
            for hop in ("none", "forwarder", "none", "forwarder"):
                print(json.dumps(baseline(hop, mib << 20)), flush=True)
        for d in args[2:]:
            print(json.dumps(one(relay, float(d), mib << 20)), flush=True)
    except OSError as e:
        print("relay_ceiling: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
