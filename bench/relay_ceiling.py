#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The delay relay's own ceiling (issue 16): one TCP stream of bulk data
through tests/tools/delayrelay alone, no NFS, at each given one-way delay.

  bench/relay_ceiling.py RELAY_BIN MIB DELAY_MS [DELAY_MS ...]

Prints one JSON line per delay: {"delay_ms", "bytes", "secs", "mb_s"},
secs from the first byte sent to the last byte received by the sink (a
thread of this process). The sender is Python: on an idle host it moves
several hundred MB/s straight over loopback, so a figure far below that is
the relay's. Exit 1 when the relay does not start or the stream breaks.
"""
import json
import socket
import subprocess
import sys
import threading
import time

IO = 1 << 20  # bytes per send and per recv


def one(relay, delay, nbytes):
    """Send nbytes through a relay at delay ms; return the JSON dict."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
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
        got = [0, 0.0]

        def sink():
            c, _ = srv.accept()
            # One buffer for every recv: a new 1 MiB object per recv is
            # new memory faulted in each time, which held the sink itself
            # to ~700 MB/s on the benchmark's VM.
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
        s = socket.create_connection(("127.0.0.1", port))
        buf = b"x" * IO
        t0 = time.monotonic()
        for _ in range(nbytes // IO):
            s.sendall(buf)
        t.join()
        s.close()
        if got[0] != nbytes:
            raise OSError("the stream broke after %d bytes" % got[0])
        secs = got[1] - t0
        return {"delay_ms": delay, "bytes": nbytes, "secs": round(secs, 3),
                "mb_s": round(nbytes / secs / 1e6, 1)}
    finally:
        p.terminate()
        p.wait()
        srv.close()


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    relay, mib = sys.argv[1], int(sys.argv[2])
    try:
        for d in sys.argv[3:]:
            print(json.dumps(one(relay, float(d), mib << 20)), flush=True)
    except OSError as e:
        print("relay_ceiling: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
