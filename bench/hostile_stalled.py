#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# The stalled-connection run of bench/hostile.sh: 500 connections send 10
# bytes of a record announcing 1,000, 100 send one byte of a record a
# second, and one normal client times NULL calls all along; runs until the
# proxy has closed every hostile connection (at most 120 s). Prints and
# appends one JSON line: seconds until all were closed, descriptors held
# at the peak and after, NULL latency (max, p50) during the run, and the
# closes by reason from /metrics.
#   hostile_stalled.py NFS_PORT PROXY_PID METRICS_ADDR OUT_JSONL
import json, os, select, socket, statistics, struct, sys, time, urllib.request

port, pid, maddr, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
STALLED, TRICKLE = 500, 100


def metric(name):
    text = urllib.request.urlopen('http://%s/metrics' % maddr, timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(name + ' '):
            return float(line.split()[1])
    return 0.0


def closed(reason):
    return metric('nfscached_connections_closed_total{reason="%s"}' % reason)


def nfds():
    return len(os.listdir('/proc/%s/fd' % pid))


def null_call(s, xid):
    body = struct.pack('>10I', xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0)
    t = time.monotonic()
    s.sendall(struct.pack('>I', 0x80000000 | len(body)) + body)
    got = b''
    while len(got) < 4 + 24:
        got += s.recv(4096)
    return time.monotonic() - t


before = {r: closed(r) for r in ('record_timeout', 'idle', 'limit')}
normal = socket.create_connection(('127.0.0.1', port))
conns = []
for i in range(STALLED + TRICKLE):
    conns.append(socket.create_connection(('127.0.0.1', port)))
start = time.monotonic()
for s in conns[:STALLED]:
    s.sendall(struct.pack('>I', 0x80000000 | 1000) + b'0123456789')
peak = nfds()
open_ = set(range(len(conns)))
lat, xid, next_byte, pos = [], 1, start, 0
while open_ and time.monotonic() - start < 120:
    now = time.monotonic()
    if now >= next_byte:
        byte = struct.pack('>I', 0x80000000 | 40)[pos % 4:pos % 4 + 1]
        for i in list(open_):
            if i >= STALLED:
                try:
                    conns[i].send(byte)
                except OSError:
                    pass
        pos += 1
        next_byte += 1.0
    r, _, _ = select.select([conns[i] for i in open_], [], [], 0.1)
    for s in r:
        try:
            if s.recv(1, socket.MSG_DONTWAIT) == b'':
                open_.discard(conns.index(s))
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            open_.discard(conns.index(s))
    lat.append(null_call(normal, xid))
    xid += 1
    peak = max(peak, nfds())
took = time.monotonic() - start
after = {r: closed(r) - before[r] for r in before}
res = {'run': 'stalled', 'stalled': STALLED, 'trickling': TRICKLE,
       'record_timeout_s': 5, 'all_closed': not open_, 'seconds_to_close_all': round(took, 2),
       'peak_fds': peak, 'fds_after': nfds(),
       'normal_null_p50_ms': round(statistics.median(lat) * 1000, 2),
       'normal_null_max_ms': round(max(lat) * 1000, 2), 'normal_calls': len(lat),
       'closed_record_timeout': after['record_timeout'], 'closed_idle': after['idle'],
       'closed_limit': after['limit'],
       'proxy_rss_mib': round(int([l.split()[1] for l in open('/proc/%s/status' % pid)
                                   if l.startswith('VmRSS:')][0]) / 1024, 1)}
print(json.dumps(res))
open(out, 'a').write(json.dumps(res) + '\n')
sys.exit(0 if not open_ and after['record_timeout'] == STALLED + TRICKLE else 1)
