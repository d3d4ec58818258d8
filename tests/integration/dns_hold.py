#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A DNS server on UDP ADDR:53 that holds every query unanswered until told.

usage: dns_hold.py ADDR DIR

Writes DIR/ready once bound, DIR/queries (the number of queries received,
rewritten at each), DIR/names (each query's name, a line each) and, while
DIR/release exists, answers every held query
and every later one NXDOMAIN (RFC 1035 section 4.1.1: the query's id and
question, QR set, RCODE 3), writing DIR/answered with the number answered.
For tests of what a resolver that does not answer does to the daemon: the
test decides when the answer comes, so it checks order, not time.
"""
import os
import select
import socket
import sys


def nxdomain(q):
    """The NXDOMAIN reply to query q (bytes), or None if q is too short."""
    if len(q) < 12:
        return None
    i = 12
    while i < len(q) and q[i] != 0:
        i += 1 + q[i]
    end = i + 5                         # the root label, QTYPE, QCLASS
    if end > len(q):
        return None
    flags = 0x8000 | (q[2] & 0x01) << 8 | 0x0080 | 3  # QR, RD echoed, RA
    return q[0:2] + flags.to_bytes(2, "big") + b"\x00\x01" + b"\x00" * 6 + q[12:end]


def qname(q):
    """The name query q asks for, dotted ("" if malformed)."""
    labels, i = [], 12
    while i < len(q) and q[i] != 0:
        labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
        i += 1 + q[i]
    return ".".join(labels)


def put(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main():
    addr, d = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    put(os.path.join(d, "ready"), "1\n")
    held, seen, answered = [], 0, 0
    release = os.path.join(d, "release")
    while True:
        r, _, _ = select.select([s], [], [], 0.05)
        if r:
            q, peer = s.recvfrom(4096)
            seen += 1
            with open(os.path.join(d, "names"), "a") as f:
                f.write(qname(q) + "\n")
            put(os.path.join(d, "queries"), "%d\n" % seen)
            held.append((q, peer))
        if held and os.path.exists(release):
            for q, peer in held:
                a = nxdomain(q)
                if a:
                    s.sendto(a, peer)
                    answered += 1
            held = []
            put(os.path.join(d, "answered"), "%d\n" % answered)


if __name__ == "__main__":
    main()
