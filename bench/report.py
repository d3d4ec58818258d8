#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn bench/run.sh's raw results into docs/benchmarks.md and its plots.

    report.py --results DIR --out DOCSDIR --root REPO

DIR holds run.json and cells/ID/{cell.json, loadgen.jsonl, snaps/*.snap}
(see bench/run.sh and bench/snap.sh). Writes DOCSDIR/benchmarks.md,
DOCSDIR/bench-pagesize.png, DOCSDIR/bench-latency.png and
DOCSDIR/bench-readahead.png (gnuplot). Only the standard library is used.
"""

import argparse
import glob
import json
import os
import platform
import re
import subprocess
import tempfile
import time

PATHS = ("direct", "nfscached", "peer")
DELAYS = (0, 2)
PAGE = 65536
WTMAX = 1048576  # the upstream export's MaxWrite (scripts/lib.sh)
MIB = 1048576

# Measured phases: label -> (workload, snapshot before, snapshot after).
# A phase's counters are the difference of its two snapshots.
PHASES = {
    "w1write": ("W1", "w1write-0", "w1write-1"),  # includes the COMMIT
    "w1read": ("W1", "w1read-0", "w1read-1"),
    "w2": ("W2", "w2-0", "w2-1"),
    "w3": ("W3", "w3-0", "w3-1"),  # includes the COMMIT
    "w4": ("W4", "w4-0", "w4-1"),
    "w5rand": ("W5", "w5rand-0", "w5rand-1"),
    "w5seq3": ("W5", "w5seq-0", "w5seq3-1"),
    "w5seq4": ("W5", "w5seq-0", "w5seq4-1"),
    "w5seq16": ("W5", "w5seq-0", "w5seq16-1"),
    "w5seq": ("W5", "w5seq-0", "w5seq-1"),
    "w6": ("W6", "w6-0", "w6-1"),
    "w6b1": ("W6b", "w6b1-0", "w6b1-1"),
    "w6b2": ("W6b", "w6b2-0", "w6b2-1"),
    "w8cold": ("W8", "w8cold-0", "w8cold-1"),
    "w8warm": ("W8", "w8warm-0", "w8warm-1"),  # after nfscached restarted
    "w9": ("W9", "w9-0", "w9-1"),  # includes the COMMIT
    "w10": ("W10", "w10-0", "w10-1"),  # WRITE + COMMIT pairs
}

PHASE_TITLE = {
    "w1write": "W1 random 1 KiB writes (+COMMIT)",
    "w1read": "W1 random 1 KiB reads of the written blocks",
    "w2": "W2 random 2 KiB read:write 1:2 (COMMIT every 100 writes)",
    "w3": "W3 sequential 64 KiB writes, then COMMIT",
    "w4": "W4 cold sequential 64 KiB reads of 256 MiB",
    "w5rand": "W5 1,000 random 4 KiB reads",
    "w5seq": "W5 sequential scan after the random reads (64 KiB)",
    "w6": "W6 1 GiB sparse file (SETATTR size) read in 64 KiB",
    "w6b1": "W6b mostly-zero 1 GiB file, first pass (64 KiB)",
    "w6b2": "W6b mostly-zero 1 GiB file, second pass",
    "w8cold": "W8 warm restart: first read of a 256 MiB file (64 KiB)",
    "w8warm": "W8 warm restart: the second read, after nfscached restarted",
    "w9": "W9 scattered 4 KiB writes over 1 GiB (+COMMIT)",
    "w10": "W10 4 KiB WRITE + COMMIT pairs, one call in flight",
}


def parse_snap(path):
    """Read one .snap file into a dict of its facts."""
    s = {"time": None, "host": None, "proc": {}, "v3": {}, "v4": {}, "m": {}}
    try:
        with open(path) as f:
            for line in f:
                w = line.split()
                if not w:
                    continue
                if w[0] == "time":
                    s["time"] = float(w[1])
                elif w[0] == "host" and len(w) == 3:
                    s["host"] = (float(w[1]), float(w[2]))
                elif w[0] == "proc" and len(w) == 6:
                    s["proc"][w[1]] = {"cpu": float(w[2]) + float(w[3]),
                                       "hwm_kib": int(w[4]), "rss_kib": int(w[5])}
                elif w[0] in ("v3", "v4") and len(w) == 3:
                    s[w[0]][w[1]] = int(w[2])
                elif w[0] == "m" and len(w) == 3:
                    try:
                        v = float(w[2])
                    except ValueError:
                        continue
                    s["m"][w[1]] = v
                    # A family kept per export: also summed without it.
                    plain = re.sub(r'export="[^"]*",?', "", w[1])
                    plain = plain.replace(",}", "}").replace("{}", "")
                    if plain != w[1]:
                        s["m"][plain] = s["m"].get(plain, 0.0) + v
    except FileNotFoundError:
        return None
    return s


def diff_counts(a, b):
    """b - a for two {name: count} dicts, dropping zeros."""
    out = {}
    for k in set(a) | set(b):
        d = b.get(k, 0) - a.get(k, 0)
        if d:
            out[k] = d
    return out


def upstream_nfscached(a, b):
    """nfscached's own count of upstream calls between two snapshots."""
    pat = re.compile(r'^nfscached_upstream_rpcs_total\{procedure="([a-z_]+)"\}$')
    ca, cb = {}, {}
    for src, dst in ((a["m"], ca), (b["m"], cb)):
        for k, v in src.items():
            mm = pat.match(k)
            if mm:
                dst[mm.group(1).upper()] = int(v)
    return diff_counts(ca, cb)


def metric(s, name):
    return s["m"].get(name, 0.0) if s else 0.0


class Cell:
    """One cell's metadata, phases and snapshots."""

    def __init__(self, d):
        with open(os.path.join(d, "cell.json")) as f:
            self.meta = json.load(f)
        self.id = self.meta["id"]
        self.dir = d
        self.w = self.meta["workload"]
        self.path = self.meta["path"]
        self.delay = self.meta["delay_ms"]
        self.qd = self.meta["qd"]
        self.page = self.meta["page"]
        self.rc = self.meta["loadgen_rc"]
        self.phases = {}
        try:
            with open(os.path.join(d, "loadgen.jsonl")) as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("{"):
                        p = json.loads(line)
                        self.phases[p["label"]] = p
        except FileNotFoundError:
            pass
        self.snaps = {}
        for p in glob.glob(os.path.join(d, "snaps", "*.snap")):
            self.snaps[os.path.basename(p)[:-5]] = parse_snap(p)
        try:
            with open(os.path.join(d, "loadgen.err")) as f:
                self.err = f.read().strip().splitlines()
        except FileNotFoundError:
            self.err = []
        # A scaling cell's other load generators (loadgen.K.jsonl, K >= 1):
        # their phases by label, one dict per generator.
        self.more = []
        for p in sorted(glob.glob(os.path.join(d, "loadgen.*.jsonl"))):
            phases = {}
            with open(p) as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("{"):
                        q = json.loads(line)
                        phases[q["label"]] = q
            self.more.append(phases)

    def key(self):
        return (self.w, self.path, self.delay, self.qd, self.page)

    def upstream(self, label):
        """Upstream calls by procedure during phase label, per the path's
        own witness: nfscached's counters, Ganesha's NFSv3 counters
        (direct), or Ganesha's NFSv4 operation counters (peer)."""
        _, s0, s1 = PHASES[label]
        a, b = self.snaps.get(s0), self.snaps.get(s1)
        if not a or not b:
            return None
        if self.path in ("nfscached", "local"):
            return upstream_nfscached(a, b)
        if self.path == "direct":
            return diff_counts(a["v3"], b["v3"])
        ops = diff_counts(a["v4"], b["v4"])
        for k in ("SEQUENCE", "PUTFH", "PUTROOTFH"):  # in every COMPOUND
            ops.pop(k, None)
        return ops

    def witness(self, label):
        """Ganesha's NFSv3 counters for an nfscached phase (second witness)."""
        _, s0, s1 = PHASES[label]
        a, b = self.snaps.get(s0), self.snaps.get(s1)
        if not a or not b:
            return None
        return diff_counts(a["v3"], b["v3"])

    def delta_metric(self, label, name):
        _, s0, s1 = PHASES[label]
        return metric(self.snaps.get(s1), name) - metric(self.snaps.get(s0), name)

    def proxy_status(self):
        """nfscached's exit status when the cell stopped it, or None."""
        try:
            with open(os.path.join(self.dir, "nfscached.status")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def server_proc(self):
        """CPU seconds and peak RSS (MiB) of the path's own server process
        (nfscached, or the peer Ganesha) over the whole cell. A cell that
        restarts it (W8) has several processes: CPU is summed over them
        (a restart shows as CPU going down between snapshots in time
        order), the peak is the highest any of them reached."""
        name = {"nfscached": "nfscached", "local": "nfscached",
                "peer": "peer"}.get(self.path)
        snaps = sorted((s for s in self.snaps.values()
                        if s and s["time"] is not None and name in s["proc"]),
                       key=lambda s: s["time"])
        if not name or not snaps:
            return None
        cpu, last, hwm = 0.0, 0.0, 0
        for s in snaps:
            p = s["proc"][name]
            if p["cpu"] < last:
                cpu += last
            last = p["cpu"]
            hwm = max(hwm, p["hwm_kib"])
        return cpu + last, hwm / 1024.0


# The scaling cells (issue 39), by (workload, threads).
scaling_cells = {}


def load(results):
    cells = {}
    for d in sorted(glob.glob(os.path.join(results, "cells", "*"))):
        if os.path.exists(os.path.join(d, "cell.json")):
            c = Cell(d)
            if c.meta.get("threads") is not None:
                scaling_cells[(c.w, c.meta["threads"])] = c
            else:
                cells[c.key()] = c
    with open(os.path.join(results, "run.json")) as f:
        run = json.load(f)
    return cells, run


kernel_cells = {}


def load_kernel(results):
    """The K1 cells (the kernel client's sysbench run): path -> dict with
    the cell's metadata and sysbench's reads/s, writes/s and fsyncs/s."""
    k = {}
    for d in sorted(glob.glob(os.path.join(results, "kernel", "K1-*"))):
        try:
            with open(os.path.join(d, "cell.json")) as f:
                c = json.load(f)
            with open(os.path.join(d, "sysbench.out")) as f:
                out = f.read()
        except (OSError, ValueError):
            continue
        for key in ("reads", "writes", "fsyncs"):
            m = re.search(r"^\s*" + key + r"/s:\s*([0-9.]+)", out, re.M)
            c[key] = float(m.group(1)) if m and c.get("rc") == 0 else None
        k[c["path"]] = c
    return k


def kernel_table(k):
    """The informational K1 rows: ops/s per path and nfscached/direct."""
    if not k:
        return None
    tot = {p: (sum(c[x] for x in ("reads", "writes", "fsyncs"))
               if c.get("reads") is not None else None) for p, c in k.items()}
    rows = []
    for p in ("direct", "nfscached"):
        c = k.get(p)
        if not c:
            continue
        rows.append([p, f"{c['delay_ms']} ms", fmt(c["reads"]), fmt(c["writes"]),
                     fmt(c["fsyncs"]), fmt(tot.get(p)),
                     fmt_ratio(ratio(tot.get("nfscached"), tot.get("direct")))
                     if p == "nfscached" else ""])
    return table(["path", "delay", "reads/s", "writes/s", "fsyncs/s", "total/s",
                  "nfscached/direct"], rows)


# ------------------------------------------------------------- values

def get(cells, w, path, delay, qd, page=PAGE):
    return cells.get((w, path, delay, qd, page))


def ph(cell, label):
    return cell.phases.get(label) if cell else None


def to_commit(cell, label, commit, kind):
    """Throughput to stable storage: every WRITE sent in phase label, over
    that phase's whole time (drain included) plus its COMMIT's; None if
    the COMMIT did not succeed in time. kind: "ops_s" or "mb_s"."""
    w, c = ph(cell, label), ph(cell, commit)
    if not w or not c or c["ops"] != 1 or w["wall"] + c["wall"] <= 0:
        return None
    n = w["issued"] if kind == "ops_s" else w["issued"] * w["bs"] / 1e6
    return n / (w["wall"] + c["wall"])


def w3_stable_mbs(cell):
    return to_commit(cell, "w3", "w3commit", "mb_s")


# Summary rows: (label shown, workload, phase, qd, value kind).
SUMMARY = [
    ("W1 writes ops/s (to COMMIT)", "W1", "w1write", 1, "w1"),
    ("W1 writes ops/s (to COMMIT)", "W1", "w1write", 16, "w1"),
    ("W1 reads ops/s", "W1", "w1read", 1, "ops_s"),
    ("W1 reads ops/s", "W1", "w1read", 16, "ops_s"),
    ("W2 ops/s", "W2", "w2", 16, "ops_s"),
    ("W3 MB/s (to COMMIT)", "W3", "w3", 1, "w3"),
    ("W3 MB/s (to COMMIT)", "W3", "w3", 16, "w3"),
    ("W4 MB/s", "W4", "w4", 1, "mb_s"),
    ("W4 MB/s", "W4", "w4", 16, "mb_s"),
    ("W5 random ops/s", "W5", "w5rand", 1, "ops_s"),
    ("W5 scan MB/s", "W5", "w5seq", 1, "mb_s"),
    ("W6 MB/s", "W6", "w6", 16, "mb_s"),
    ("W6b pass 1 MB/s", "W6b", "w6b1", 16, "mb_s"),
    ("W6b pass 2 MB/s", "W6b", "w6b2", 16, "mb_s"),
    ("W8 read after restart MB/s", "W8", "w8warm", 16, "mb_s"),
]


def value(cells, w, label, path, delay, qd, kind, page=PAGE):
    c = get(cells, w, path, delay, qd, page)
    if kind == "w3":
        return w3_stable_mbs(c) if c else None
    if kind == "w1":
        return to_commit(c, "w1write", "w1commit", "ops_s") if c else None
    p = ph(c, label)
    if not p or p["ops"] == 0:
        return None
    return p[kind]


def fmt(v, digits=None):
    if v is None:
        return "n/a"
    if digits is not None:
        return f"{v:.{digits}f}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ratio(r):
    return "n/a" if r is None else f"{r:.2f}x"


def fmt_calls(calls, limit=6):
    if calls is None:
        return "n/a"
    if not calls:
        return "none"
    items = sorted(calls.items(), key=lambda kv: (-kv[1], kv[0]))
    s = " ".join(f"{k} {v}" for k, v in items[:limit])
    if len(items) > limit:
        s += " ..."
    return s


# ------------------------------------------------------------ targets

def targets(cells, ceilings=None):
    """Each target: (text, measured text, met True/False/None); ceilings:
    relay_ceilings() of the run."""
    out = []

    def r_of(w, label, delay, qd, kind, other):
        return ratio(value(cells, w, label, "nfscached", delay, qd, kind),
                     value(cells, w, label, other, delay, qd, kind))

    for qd in (1, 16):
        c = get(cells, "W1", "nfscached", 2, qd)
        r = r_of("W1", "w1read", 2, qd, "ops_s", "direct")
        up = c.upstream("w1read") if c else None
        reads = up.get("READ", 0) if up is not None else None
        met = None if r is None or reads is None else (r >= 20 and reads == 0)
        out.append((f"W1 reads, 2 ms, {qd} in flight: >= 20x direct, 0 upstream READs",
                    f"{fmt_ratio(r)}, {fmt(reads, 0) if reads is not None else 'n/a'} READs", met))
    for qd in (1, 16):
        rp = r_of("W1", "w1read", 0, qd, "ops_s", "peer")
        rd = r_of("W1", "w1read", 0, qd, "ops_s", "direct")
        met = None if rp is None or rd is None else (rp >= 2 and rd >= 1)
        out.append((f"W1 reads, 0 ms, {qd} in flight: >= 2x peer and >= 1x direct",
                    f"{fmt_ratio(rp)} peer, {fmt_ratio(rd)} direct", met))
    r = r_of("W2", "w2", 2, 16, "ops_s", "direct")
    out.append(("W2, 2 ms: >= 10x direct", fmt_ratio(r), None if r is None else r >= 10))
    for delay in DELAYS:
        for qd in (1, 16):
            c = get(cells, "W3", "nfscached", delay, qd)
            p = ph(c, "w3")
            up = c.upstream("w3") if c else None
            if not p or up is None:
                out.append((f"W3, {delay} ms, {qd} in flight: upstream WRITEs <= bytes/wsize + 2", "n/a", None))
                continue
            nbytes = p["issued"] * p["bs"]
            # write-back's WRITE size: writeback_wsize as the proxy
            # reports it (default 256 KiB), at most the export's wtmax
            wsize = int(metric(c.snaps.get("w3-1"), "nfscached_config_writeback_wsize_bytes")) or WTMAX
            wsize = min(wsize, WTMAX)
            limit = -(-nbytes // wsize) + 2
            writes = up.get("WRITE", 0)
            out.append((f"W3, {delay} ms, {qd} in flight: upstream WRITEs <= bytes/wsize + 2",
                        f"{writes} WRITEs for {nbytes / MIB:.0f} MiB, wsize {wsize // 1024} KiB (limit {limit})",
                        writes <= limit))
    for qd in (1, 16):
        r = r_of("W4", "w4", 2, qd, "mb_s", "direct")
        out.append((f"W4, 2 ms, {qd} in flight: >= 5x direct", fmt_ratio(r), None if r is None else r >= 5))
    for delay in DELAYS:
        ra = readahead(get(cells, "W5", "nfscached", delay, 1))
        name = f"W5, {delay} ms: full window by the 4th sequential READ"
        if ra is None:
            out.append((name, "n/a", None))
        elif ra["window4"] is None or ra["steady"] is None:
            out.append((name, "no readahead counters in nfscached's metrics", False))
        else:
            met = ra["steady"] > 0 and ra["window4"] >= 0.99 * ra["steady"]
            out.append((name, f"window sent at READ 4: {ra['window4'] / 1024:.0f} KiB; "
                        f"windows later in the scan: {ra['steady'] / 1024:.0f} KiB", met))
    for delay, nv, dv, r, p, up, disk, hit_mbs in w8_rows(cells):
        read = p["issued"] * p["bs"] if p else None
        name = f"W8, {delay} ms: after a restart, at most 1 MiB of the file fetched upstream"
        if up is None or read is None:
            out.append((name, "n/a", None))
        else:
            out.append((name, f"{up / MIB:.2f} MiB fetched of {read / MIB:.0f} MiB read, {fmt_ratio(r)} direct",
                        up <= MIB))
    for delay in DELAYS:
        c = get(cells, "W6", "nfscached", delay, 16)
        up = c.upstream("w6") if c else None
        n = up.get("READ", 0) if up is not None else None
        out.append((f"W6, {delay} ms: 0 upstream READs", "n/a" if n is None else f"{n} READs",
                    None if n is None else n == 0))
    for delay in DELAYS:
        c = get(cells, "W6b", "nfscached", delay, 16)
        up = c.upstream("w6b2") if c else None
        n = up.get("READ", 0) if up is not None else None
        out.append((f"W6b, {delay} ms: second pass 0 upstream READs", "n/a" if n is None else f"{n} READs",
                    None if n is None else n == 0))
    out.extend(fast_path_targets(cells))
    out.extend(relay_targets(cells, ceilings or {}))
    out.extend(local_targets(cells))
    # Each cell against its own cache_size (W8 runs a smaller one); the
    # worst is the cell with the highest peak RSS / budget.
    worst, worst_id, budget = None, None, None
    for c in cells.values():
        if c.path != "nfscached":
            continue
        sp = c.server_proc()
        if sp is None:
            continue
        if worst is None or sp[1] / c.meta["cache_mib"] > worst / budget:
            worst, worst_id, budget = sp[1], c.id, c.meta["cache_mib"]
    if worst is None:
        out.append(("Every workload: nfscached RSS <= its cache budget + 10%", "n/a", None))
    else:
        out.append(("Every workload: nfscached RSS <= its cache budget + 10%",
                    f"worst: peak {worst:.0f} MiB for {budget} MiB ({worst_id})", worst <= budget * 1.1))
    return out


def fast_path_targets(cells):
    """Issue 16's targets: nfscached against direct where it must reach the
    upstream (cold reads, write-back, parallel streams)."""
    out = []
    for w, label, delay, qd, kind, want, what in (
            ("W2", "w2", 0, 16, "ops_s", 1.0, "W2"),
            ("W3", "w3", 0, 1, "w3", 1.0, "W3 (to COMMIT)"),
            ("W3", "w3", 0, 16, "w3", 1.0, "W3 (to COMMIT)"),
            ("W4", "w4", 0, 1, "mb_s", 1.0, "W4"),
            ("W4", "w4", 0, 16, "mb_s", 1.0, "W4"),
            ("W6b", "w6b1", 0, 16, "mb_s", 1.0, "W6b pass 1"),
            ("W5", "w5rand", 0, 1, "ops_s", 0.9, "W5 random"),
            ("W2", "w2", 2, 16, "ops_s", 2.0, "W2"),
            ("W4", "w4", 2, 16, "mb_s", 2.0, "W4")):
        x = ratio(value(cells, w, label, "nfscached", delay, qd, kind),
                  value(cells, w, label, "direct", delay, qd, kind))
        out.append((f"{what}, {delay} ms, {qd} in flight: >= {want:.1f}x direct", fmt_ratio(x),
                    None if x is None else x >= want))
    return out


def phase_cpu(cell, label):
    """nfscached's CPU seconds over phase label (user + system), or None."""
    if not cell:
        return None
    _, s0, s1 = PHASES[label]
    a, b = cell.snaps.get(s0), cell.snaps.get(s1)
    if not a or not b or "nfscached" not in a["proc"] or "nfscached" not in b["proc"]:
        return None
    d = b["proc"]["nfscached"]["cpu"] - a["proc"]["nfscached"]["cpu"]
    return d if d >= 0 else None


def cpu_section(cells):
    """Issue 16: nfscached's own CPU time per unit of work, 0 ms, 16 in
    flight: a cached READ (W1 reads), a MiB of miss (W4, every byte
    fetched), an absorbed WRITE (W1 writes, their write-back and COMMIT
    included)."""
    rows = []
    for what, w, label, unit in (
            ("cached 1 KiB READ (W1 reads)", "W1", "w1read", "op"),
            ("MiB of cold sequential miss (W4)", "W4", "w4", "mib"),
            ("absorbed 1 KiB WRITE (W1 writes, write-back and COMMIT included)", "W1", "w1write", "op")):
        c = get(cells, w, "nfscached", 0, 16)
        p, cpu = ph(c, label), phase_cpu(c, label)
        if not p or cpu is None or not p.get("ops"):
            rows.append([what, "n/a", "n/a", "n/a"])
            continue
        n = p["ops"] if unit == "op" else p["ops"] * p["bs"] / MIB
        rows.append([what, fmt(n, 0) if unit == "op" else f"{n:.0f} MiB", f"{cpu:.2f}",
                     fmt(cpu * 1e6 / n)])
    return ["## nfscached's CPU per unit of work", "",
            "CPU time (user + system) of the nfscached process over the phase, from /proc, divided by "
            "the work done in it; 0 ms, 16 calls in flight.", "",
            table(["work", "done in the phase", "CPU s", "CPU us per unit"], rows), ""]


def bound_section(cells):
    """Issue 42 item 3: what bounds W3 (64 KiB WRITEs to COMMIT, 0 ms, 16
    in flight) on this machine. Per path, over the write phase and its
    COMMIT: how busy the machine's CPUs were, and whose CPU it was (the
    upstream Ganesha, nfscached, and the rest: the load generator, the
    kernel's flusher threads). A path that keeps every CPU busy is bounded
    by CPU: the proxy's own CPU then comes out of the same cores."""
    rows = []
    for path in ("direct", "nfscached"):
        c = get(cells, "W3", path, 0, 16)
        _, s0, s1 = PHASES["w3"]
        a, b = (c.snaps.get(s0), c.snaps.get(s1)) if c else (None, None)
        if not a or not b or not a.get("host") or not b.get("host"):
            rows.append([path] + ["n/a"] * 6)
            continue
        secs = b["time"] - a["time"]
        busy = b["host"][0] - a["host"][0]
        total = b["host"][1] - a["host"][1]
        own = {n: b["proc"][n]["cpu"] - a["proc"][n]["cpu"]
               for n in ("upstream", "nfscached") if n in a["proc"] and n in b["proc"]}
        mib = (ph(c, "w3") or {}).get("bytes", 0) / MIB
        rows.append([path, f"{secs:.2f}", f"{busy / total * 100:.0f}%" if total else "n/a",
                     f"{own.get('upstream', 0):.2f}",
                     f"{own['nfscached']:.2f}" if "nfscached" in own else "-",
                     f"{busy - sum(own.values()):.2f}",
                     fmt(busy * 1e6 / mib) if mib else "n/a"])
    return ["## What bounds W3 at 0 ms", "",
            "W3 (64 KiB WRITEs, then COMMIT; 0 ms, 16 in flight), from the first WRITE to the COMMIT's "
            "reply: the machine's CPU seconds (all CPUs, /proc/stat) and whose they were. With the CPUs "
            "busy throughout, the path is bounded by CPU: nfscached's own CPU, and the upstream's "
            "COMMITs of what it has written back, come out of the same cores as the load generator's "
            "and the upstream's.", "",
            table(["path", "seconds", "CPUs busy", "upstream CPU s", "nfscached CPU s",
                   "the rest (load generator, kernel threads) s", "machine CPU us per MiB"], rows), ""]


# The scaling rows: (label, workload, phase, unit of work).
SCALE_ROWS = (
    ("W1 cached 1 KiB READs", "W1", "w1read", "op"),
    ("W6 sparse 64 KiB READs", "W6", "w6", "mib"),
    ("W4 cold sequential 64 KiB READs", "W4", "w4", "mib"),
    ("W2 2 KiB READ/WRITE 1:2", "W2", "w2", "op"),
)


def scale_figures(c, label, unit):
    """A scaling cell's phase over all its generators: (ops/s, MB/s, CPU
    us per unit), None where missing. The CPU is nfscached's over the
    first generator's phase (its snapshots), the work every generator's
    counted calls: the generators start together with equal time boxes."""
    gens = [c.phases] + c.more
    ps = [g.get(label) for g in gens]
    if not ps or any(p is None for p in ps):
        return None, None, None
    ops_s = sum(p["ops_s"] for p in ps)
    mb_s = sum(p["mb_s"] for p in ps)
    n = sum(p["ops"] if unit == "op" else p["ops"] * p["bs"] / MIB for p in ps)
    cpu = phase_cpu(c, label)
    return ops_s, mb_s, (cpu * 1e6 / n if cpu is not None and n else None)


def scaling_targets():
    """Issue 39's 2-core targets: W1 reads with 2 loops >= 1.3x one loop,
    CPU per cached READ with 2 loops <= 1.10x one loop's."""
    t1, t2 = scaling_cells.get(("W1", 1)), scaling_cells.get(("W1", 2))
    a = scale_figures(t1, "w1read", "op") if t1 else (None, None, None)
    b = scale_figures(t2, "w1read", "op") if t2 else (None, None, None)
    r = ratio(b[0], a[0])
    cpu_r = ratio(b[2], a[2])
    return [
        ("W1 reads, threads = 2 vs 1 (0 ms, 16 in flight over 4 connections): >= 1.3x",
         fmt_ratio(r), None if r is None else r >= 1.3),
        ("CPU per cached READ, threads = 2 vs 1: <= 1.10x",
         fmt_ratio(cpu_r), None if cpu_r is None else cpu_r <= 1.10),
    ]


def scaling_section():
    """Issue 39: throughput and CPU per unit of work by `threads`."""
    if not scaling_cells:
        return []
    rows = []
    for what, w, label, unit in SCALE_ROWS:
        base = None
        for t in sorted(t for (cw, t) in scaling_cells if cw == w):
            ops_s, mb_s, cpu = scale_figures(scaling_cells[(w, t)], label, unit)
            if t == 1:
                base = ops_s
            rows.append([what, str(t), fmt(ops_s), fmt(mb_s), fmt(cpu),
                         "us/op" if unit == "op" else "us/MiB",
                         fmt_ratio(ratio(ops_s, base)) if t != 1 else "1"])
    out = ["## Scaling with `threads`", "",
           f"nfscached with `threads` = 1, 2 and, where the machine has the cores, 4 and 8 ({os.cpu_count()} "
           "CPUs here, shared with the load generators and the upstream Ganesha); 0 ms, 16 calls in "
           "flight over 4 connections (4 load generators of 4 calls, started together; W4 and W6 each "
           "read a quarter of the file). Throughput sums the generators; CPU is nfscached's over the "
           "first generator's phase, per unit of the work all of them counted. Stage 1 of issue 39: "
           "loop 0 runs every handler and loops 1..N-1 the client connections.", "",
           table(["workload", "threads", "ops/s", "MB/s", "CPU", "unit", "vs threads = 1"], rows), "",
           table(["target", "measured", "met"],
                 [[t, v, "n/a" if ok is None else ("**yes**" if ok else "no")]
                  for t, v, ok in scaling_targets()]), ""]
    return out


def local_targets(cells):
    """Issue 18's targets: commit = "local" (path "local") against direct."""
    out = []

    def r(w, label, delay, qd):
        return ratio(value(cells, w, label, "local", delay, qd, "ops_s"),
                     value(cells, w, label, "direct", delay, qd, "ops_s"))

    for w, label, delay, qd, want, what in (
            ("W2", "w2", 2, 16, 10, "W2"),
            ("W2", "w2", 0, 16, 1, "W2"),
            ("W10", "w10", 2, 1, 10, "W10 4 KiB WRITE+COMMIT pairs, 1 in flight,")):
        x = r(w, label, delay, qd)
        out.append((f"{what} {delay} ms, commit = \"local\": >= {want}x direct", fmt_ratio(x),
                    None if x is None else x >= want))
    return out


def fdatasync_ms(results):
    """The probe's mean 4 KiB O_DSYNC write latency (ms), or None."""
    try:
        with open(os.path.join(results, "fdatasync.json")) as f:
            return json.load(f)["mean_ms"]
    except (OSError, ValueError, KeyError):
        return None


def local_section(cells, results):
    """Local commit (issue 18): W2 and W10 on direct, nfscached (commit =
    "upstream") and local (commit = "local"), with each path's upstream
    COMMITs and the journal's fdatasync latency."""
    rows = []
    for w, label, qd in (("W2", "w2", 16), ("W10", "w10", 1)):
        for delay in DELAYS:
            v = {p: value(cells, w, label, p, delay, qd, "ops_s") for p in ("direct", "nfscached", "local")}
            if all(x is None for x in v.values()):
                continue
            c = get(cells, w, "local", delay, qd)
            up = c.upstream(label) if c else None
            rows.append([w, f"{delay} ms", qd, fmt(v["direct"]), fmt(v["nfscached"]), fmt(v["local"]),
                         fmt_ratio(ratio(v["local"], v["direct"])),
                         "n/a" if up is None else fmt(up.get("COMMIT", 0), 0)])
    if not rows:
        return []
    ms = fdatasync_ms(results) if results else None
    return ["## Local commit", "",
            "`commit = \"local\"` (docs/disk-tier.md \"Local commit\"): the **local** path is nfscached with a",
            "`cache_dir` on this machine's disk (ext4 on the build directory, not tmpfs) and `commit = \"local\"`",
            "on the export, so a COMMIT waits for one journal commit (fdatasync) instead of the upstream;",
            "**nfscached** is the same proxy with the default `commit = \"upstream\"`. W2 is the workload above;",
            "W10 sends 4 KiB sequential WRITEs, each followed by a COMMIT, one call in flight (ops/s counts",
            "both). The fdatasync latency of that disk, measured before the cells (500 4 KiB O_DSYNC writes): "
            + ("n/a" if ms is None else f"{ms:.3f} ms mean") + ".", "",
            table(["workload", "delay", "in flight", "direct ops/s", "nfscached ops/s", "local ops/s",
                   "local/direct", "local's upstream COMMITs in the phase"], rows), ""]


RA_BYTES = "nfscached_readahead_issued_bytes_total"
RA_WINDOWS = "nfscached_readahead_windows_total"


def readahead(c):
    """W5 through nfscached: the readahead window its 4th sequential READ
    sent (issued bytes between the snapshots after READ 3 and READ 4), the
    mean window sent after READ 16 (the steady state), and the bytes
    fetched from upstream beyond what the client had asked for after READ
    4 and READ 16. None if the cell did not run; window4/steady None if
    nfscached has no readahead counters."""
    if not c or c.path != "nfscached":
        return None
    sn = c.snaps
    need = ("w5seq-0", "w5seq3-1", "w5seq4-1", "w5seq16-1", "w5seq-1")
    if any(k not in sn or sn[k] is None for k in need):
        return None
    out = {"window4": None, "steady": None}
    if RA_BYTES in sn["w5seq4-1"]["m"]:
        out["window4"] = metric(sn["w5seq4-1"], RA_BYTES) - metric(sn["w5seq3-1"], RA_BYTES)
        nwin = metric(sn["w5seq-1"], RA_WINDOWS) - metric(sn["w5seq16-1"], RA_WINDOWS)
        if nwin > 0:
            out["steady"] = (metric(sn["w5seq-1"], RA_BYTES) - metric(sn["w5seq16-1"], RA_BYTES)) / nwin
    fb = "nfscached_cache_fetch_bytes_total"
    base = metric(sn["w5seq-0"], fb)
    out["ahead4"] = max(0.0, metric(sn["w5seq4-1"], fb) - base - 4 * 65536)
    out["ahead16"] = max(0.0, metric(sn["w5seq16-1"], fb) - base - 16 * 65536)
    return out


# ------------------------------------------------------------ tables

def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def summary_table(cells):
    rows = []
    for delay in DELAYS:
        for name, w, label, qd, kind in SUMMARY:
            v = {p: value(cells, w, label, p, delay, qd, kind) for p in PATHS}
            rows.append([name, f"{delay} ms", qd, fmt(v["direct"]), fmt(v["nfscached"]),
                         fmt(v["peer"]), fmt_ratio(ratio(v["nfscached"], v["direct"])),
                         fmt_ratio(ratio(v["nfscached"], v["peer"]))])
    return table(["workload", "delay", "in flight", "direct", "nfscached", "peer",
                  "nfscached/direct", "nfscached/peer"], rows)


def phase_table(cells, label, w):
    rows = []
    for delay in DELAYS:
        for qd in (1, 16):
            for path in PATHS:
                c = get(cells, w, path, delay, qd)
                p = ph(c, label)
                if not c or not p:
                    continue
                sp = c.server_proc()
                extra = ""
                if label == "w3":
                    extra = fmt(w3_stable_mbs(c))
                elif label == "w1write":
                    extra = fmt(to_commit(c, "w1write", "w1commit", "ops_s"))
                up = c.upstream(label)
                row = [path, f"{delay} ms", qd, f"{p['ops']:,}", fmt(p["ops_s"]), fmt(p["mb_s"]),
                       fmt(p["p50_us"]), fmt(p["p99_us"])]
                if label in ("w3", "w1write"):
                    row.append(extra)
                row += [fmt_calls(up), fmt(sp[0]) if sp else "", fmt(sp[1], 0) if sp else ""]
                if p["errors"] or p["verify_fail"]:
                    row[0] += f" (**{p['errors']} errors, {p['verify_fail']} bad reads**)"
                rows.append(row)
    head = ["path", "delay", "in flight", "ops", "ops/s", "MB/s", "p50 us", "p99 us"]
    if label == "w3":
        head.append("MB/s to COMMIT")
    elif label == "w1write":
        head.append("ops/s to COMMIT")
    head += ["upstream calls", "server CPU s", "server peak RSS MiB"]
    return table(head, rows)


def witness_table(cells):
    """nfscached's upstream READ/WRITE/COMMIT counts next to Ganesha's."""
    rows = []
    for c in sorted(cells.values(), key=lambda c: c.id):
        if c.path != "nfscached":
            continue
        for label in PHASES:
            if label not in c.phases or label in ("w5seq4", "w5seq16"):
                continue
            a, b = c.upstream(label), c.witness(label)
            if a is None or b is None:
                continue
            keys = ("READ", "WRITE", "COMMIT")
            same = all(a.get(k, 0) == b.get(k, 0) for k in keys)
            rows.append([c.id, label, " ".join(f"{k} {a.get(k, 0)}" for k in keys),
                         " ".join(f"{k} {b.get(k, 0)}" for k in keys), "yes" if same else "**no**"])
    return table(["cell", "phase", "nfscached counts", "Ganesha counts", "agree"], rows)


def w8_rows(cells):
    """W8 per delay: the second read's MB/s through nfscached and direct,
    their ratio, the bytes nfscached fetched upstream during it, and its
    disk tier's hit throughput (disk hit bytes over the phase's wall time)."""
    rows = []
    for delay in DELAYS:
        c = get(cells, "W8", "nfscached", delay, 16)
        dc = get(cells, "W8", "direct", delay, 16)
        p, dp = ph(c, "w8warm"), ph(dc, "w8warm")
        nv = p["mb_s"] if p and p["ops"] else None
        dv = dp["mb_s"] if dp and dp["ops"] else None
        up = disk = hit_mbs = None
        if c and p:
            up = c.delta_metric("w8warm", "nfscached_upstream_read_bytes_total")
            disk = c.delta_metric("w8warm", "nfscached_disk_hit_bytes_total")
            if p["wall"] > 0:
                hit_mbs = disk / p["wall"] / 1e6
        rows.append((delay, nv, dv, ratio(nv, dv), p, up, disk, hit_mbs))
    return rows


def w8_table(cells):
    out = []
    for delay, nv, dv, r, p, up, disk, hit_mbs in w8_rows(cells):
        read = f"{p['issued'] * p['bs'] / MIB:.0f} MiB" if p else ""
        out.append([f"{delay} ms", fmt(dv), fmt(nv), fmt_ratio(r), read,
                    "" if up is None else f"{up / MIB:.2f} MiB",
                    "" if disk is None else f"{disk / MIB:.0f} MiB", fmt(hit_mbs)])
    return table(["delay", "direct MB/s", "nfscached MB/s", "nfscached/direct", "read",
                  "fetched upstream", "disk hit bytes", "disk tier hit MB/s"], out)


def relay_table(cells):
    """Direct to Ganesha with and without the relay, one call in flight."""
    rows = []
    for name, w, label, kind in (("W1 random 1 KiB WRITE ops/s", "W1", "w1write", "ops_s"),
                                 ("W1 random 1 KiB READ ops/s", "W1", "w1read", "ops_s"),
                                 ("W3 sequential 64 KiB WRITE MB/s (to COMMIT)", "W3", "w3", "w3"),
                                 ("W4 sequential 64 KiB READ MB/s", "W4", "w4", "mb_s"),
                                 ("W5 random 4 KiB READ ops/s", "W5", "w5rand", "ops_s")):
        vals = [value(cells, w, label, "direct", d, 1, kind) for d in ("none", 0, 2)]
        lat = [ph(get(cells, w, "direct", d, 1), label) for d in ("none", 0, 2)]
        rows.append([name] + [fmt(v) for v in vals] +
                    [" / ".join(fmt(x["p50_us"]) if x else "n/a" for x in lat)])
    return table(["direct, 1 in flight", "no relay", "relay 0 ms", "relay 2 ms",
                  "p50 us (no relay / 0 ms / 2 ms)"], rows)


def hop_note(cells):
    """What one forwarding hop that does no work costs a cold random read:
    the 0 ms relay (splice(2), no copy, no parsing) put between the client
    and Ganesha. nfscached adds a hop of its own to the same path, so its
    W5 random ratio to direct cannot beat this one's on the machine (W5's
    >= 0.9x target asks a hop to cost at most a ninth of a direct READ)."""
    bare = value(cells, "W5", "w5rand", "direct", "none", 1, "ops_s")
    hop = value(cells, "W5", "w5rand", "direct", 0, 1, "ops_s")
    via = value(cells, "W5", "w5rand", "nfscached", 0, 1, "ops_s")
    if bare is None or hop is None:
        return None
    p = [ph(get(cells, "W5", path, d, 1), "w5rand") for path, d in
         (("direct", "none"), ("direct", 0), ("nfscached", 0))]
    us = [x["p50_us"] if x else None for x in p]
    text = (f"One forwarding hop that does no work, the 0 ms relay alone, takes W5's cold random 4 KiB READs "
            f"from {fmt(bare)} to {fmt(hop)} ops/s ({fmt_ratio(hop / bare)}; p50 {fmt(us[0])} -> {fmt(us[1])} us, "
            f"the hop {fmt(us[1] - us[0]) if us[0] is not None and us[1] is not None else 'n/a'} us)")
    if via is not None and us[2] is not None and us[1] is not None:
        text += (f"; nfscached's hop on top of it: {fmt(hop)} -> {fmt(via)} ops/s ({fmt_ratio(via / hop)}; "
                 f"p50 +{fmt(us[2] - us[1])} us)")
    return text + (". A proxy adds such a hop to every miss, so W5 random's 0.9x target needs a hop under a "
                   "ninth of a direct READ's latency, which this machine's do-nothing hop is not.")


def ceiling_lines(results):
    """The JSON lines of RESULTS/relay_ceiling.jsonl (bench/relay_ceiling.py),
    [] when the file is missing."""
    path = os.path.join(results, "relay_ceiling.jsonl") if results else ""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def relay_ceilings(results):
    """{delay_ms: [MB/s per run]}: one bulk TCP stream through the relay
    alone; {} without the measurement."""
    per = {}
    for d in ceiling_lines(results):
        if d.get("hop") is None:
            per.setdefault(d["delay_ms"], []).append(d["mb_s"])
    return per


def hop_baselines(results):
    """{hop: [MB/s per run]} of relay_ceiling.py --baselines: the same
    stream with no hop ("none") and through a minimal copying forwarder
    ("forwarder"); {} without them."""
    per = {}
    for d in ceiling_lines(results):
        if d.get("hop") is not None:
            per.setdefault(d["hop"], []).append(d["mb_s"])
    return per


def median(vs):
    return sorted(vs)[len(vs) // 2]


def relayed_mb_s(cell, label):
    """MB/s that crossed the relay during phase label, both ways: for
    nfscached's paths its own count of upstream bytes, for direct and peer
    the client's bytes (neither keeps data); None without the phase or
    for one under 0.2 s or 100 calls."""
    p = ph(cell, label)
    # A phase of a few calls (W5's probes of the window) takes too little
    # time for a rate: its readahead alone would read as GB/s.
    if not p or p["wall"] < 0.2 or p["ops"] < 100 or label not in PHASES:
        return None
    if cell.path in ("nfscached", "local"):
        n = (cell.delta_metric(label, "nfscached_upstream_received_bytes_total") +
             cell.delta_metric(label, "nfscached_upstream_sent_bytes_total"))
    else:
        n = p["bytes"]
    return n / p["wall"] / 1e6


def relay_targets(cells, ceilings):
    """Issue 16: at each delay the relay's own ceiling is at least 3x the
    fastest phase any path moved through it, or those cells measure the
    relay, not the paths."""
    out = []
    for delay in DELAYS:
        fastest, where = None, None
        for c in cells.values():
            if c.delay != delay:
                continue
            for label in c.phases:
                v = relayed_mb_s(c, label)
                if v is not None and (fastest is None or v > fastest):
                    fastest, where = v, f"{c.id} {label}"
        name = f"The relay's ceiling, {delay} ms: >= 3x the fastest phase through it"
        ceiling = median(ceilings[float(delay)]) if float(delay) in ceilings else None
        if fastest is None or ceiling is None:
            out.append((name, "n/a", None))
            continue
        out.append((name, f"{fmt(ceiling)} MB/s, fastest {fmt(fastest)} MB/s ({where}): "
                    f"{fmt_ratio(ratio(ceiling, fastest))}", ceiling >= 3 * fastest))
    return out


def relay_ceiling_section(results):
    """The relay's own ceiling, as the median MB/s per delay. [] when
    there is no measurement."""
    per = relay_ceilings(results)
    if not per:
        return []
    rows = [[fmt(k), " / ".join(fmt(v) for v in vs), fmt(median(vs))]
            for k, vs in sorted(per.items())]
    out = ["## The relay's own ceiling", "",
           "One TCP stream of bulk data (1 GiB) through `delayrelay` alone (no NFS; bench/relay_ceiling.py), "
           "runs in alternating order. A cell whose path moves more than a third of this measures the relay "
           "(the targets table compares it with the fastest phase at each delay).",
           "", table(["one-way delay ms", "MB/s per run", "median MB/s"], rows), ""]
    base = hop_baselines(results)
    if "none" in base and "forwarder" in base:
        out += [f"For scale, the same stream with no hop at all ran at "
                f"{' / '.join(fmt(v) for v in base['none'])} MB/s (median {fmt(median(base['none']))}), "
                f"and through the plainest forwarder (a process of its own: blocking `recv_into` + `sendall` "
                f"of 1 MiB, no delay) at {' / '.join(fmt(v) for v in base['forwarder'])} "
                f"(median {fmt(median(base['forwarder']))}): one hop on this host costs that much whatever "
                "forwards it.", ""]
    return out


def relay_warning(cells):
    """A warning when the 0 ms relay itself slows direct sequential READs
    (one call in flight) by more than 2x: then it, not the path under
    test, bounds every large transfer made with few calls in flight."""
    bare = value(cells, "W4", "w4", "direct", "none", 1, "mb_s")
    relayed = value(cells, "W4", "w4", "direct", 0, 1, "mb_s")
    if bare is None or relayed is None or relayed * 2 > bare:
        return None
    return (f"**Caveat: the delay relay bounds this run.** Straight to Ganesha, sequential 64 KiB READs with "
            f"one call in flight run at {fmt(bare)} MB/s; through the relay at 0 ms, at {fmt(relayed)} MB/s "
            f"(p50 {fmt(ph(get(cells, 'W4', 'direct', 0, 1), 'w4')['p50_us'])} us). Figures for large "
            "transfers with few calls in flight measure the relay more than the path (see \"The relay's own "
            "cost\" below).")


def sweep_table(cells):
    rows = []
    for page in (4096, 16384, 65536, 1048576):
        wr = value(cells, "W1", "w1write", "nfscached", 2, 16, "ops_s", page)
        rd = value(cells, "W1", "w1read", "nfscached", 2, 16, "ops_s", page)
        sq = value(cells, "W4", "w4", "nfscached", 2, 16, "mb_s", page)
        c1 = get(cells, "W1", "nfscached", 2, 16, page)
        c4 = get(cells, "W4", "nfscached", 2, 16, page)
        up1 = c1.upstream("w1read") if c1 else None
        up4 = c4.upstream("w4") if c4 else None
        rss = max([c.server_proc()[1] for c in (c1, c4) if c and c.server_proc()] or [0])
        rows.append([f"{page // 1024} KiB", fmt(wr), fmt(rd),
                     "n/a" if up1 is None else up1.get("READ", 0), fmt(sq),
                     "n/a" if up4 is None else up4.get("READ", 0), fmt(rss, 0)])
    return table(["page size", "W1 write ops/s", "W1 read ops/s", "W1 upstream READs",
                  "W4 MB/s", "W4 upstream READs", "peak RSS MiB"], rows)


def readahead_table(cells):
    rows = []
    for delay in DELAYS:
        for path in PATHS:
            c = get(cells, "W5", path, delay, 1)
            if not c:
                continue
            ra = readahead(c)
            kib = lambda v: "n/a" if v is None else f"{v / 1024:.0f}"
            rows.append([path, f"{delay} ms", " ".join(f"{x / 1000:.1f}" for x in w5_lat(c)[:16]),
                         "" if ra is None else f"{kib(ra['window4'])} / {kib(ra['steady'])}",
                         "" if ra is None else f"{kib(ra['ahead4'])} / {kib(ra['ahead16'])}"])
    return table(["path", "delay", "latency of sequential READs 1..16 (ms)",
                  "window sent at READ 4 / later (KiB)",
                  "fetched ahead after READ 4 / 16 (KiB)"], rows)


def w5_lat(c):
    """Latencies (us) of W5's first 16 sequential READs, in order."""
    out = []
    for label in ("w5seq3", "w5seq4", "w5seq16"):
        out += (ph(c, label) or {}).get("lat_us", [])
    return out


# -------------------------------------------------------------- plots

def gnuplot(script, cwd):
    """Run a gnuplot script; a plot that fails (no data in a partial run)
    is reported and skipped, not fatal."""
    r = subprocess.run(["gnuplot"], input=script, text=True, cwd=cwd,
                       capture_output=True)
    if r.returncode != 0:
        print("report: a plot failed:", r.stderr.strip().splitlines()[-1:])


def plots(cells, out):
    tmp = tempfile.mkdtemp(prefix="bench-plot-")
    with open(os.path.join(tmp, "sweep.dat"), "w") as f:
        f.write("# page_kib w1write w1read w4mbs\n")
        for page in (4096, 16384, 65536, 1048576):
            vals = [value(cells, "W1", "w1write", "nfscached", 2, 16, "ops_s", page),
                    value(cells, "W1", "w1read", "nfscached", 2, 16, "ops_s", page),
                    value(cells, "W4", "w4", "nfscached", 2, 16, "mb_s", page)]
            f.write(f"{page // 1024} " + " ".join("NaN" if v is None else f"{v:.3f}" for v in vals) + "\n")
    # Direct and peer at the same delay and depth, for reference lines.
    ref = {p: [value(cells, "W1", "w1read", p, 2, 16, "ops_s"), value(cells, "W4", "w4", p, 2, 16, "mb_s")]
           for p in ("direct", "peer")}

    def refs(i, what):
        out = ""
        for p, dt in (("direct", 2), ("peer", 3)):
            v = ref[p][i]
            if v is not None:
                out += f', \\\n     {v:.3f} with lines dt {dt} title "{p}{what}"'
        return out
    gnuplot(f"""
set terminal pngcairo size 1100,450 font ",10"
set output "{out}/bench-pagesize.png"
set multiplot layout 1,2 title "W7: nfscached page size sweep (2 ms one-way, 16 in flight)"
set logscale x 2
set xtics ("4K" 4, "16K" 16, "64K" 64, "1M" 1024)
set xlabel "page size"
set grid
set key top left
set logscale y
set ylabel "ops/s"
set title "W1: random 1 KiB I/O on a 64 MiB file"
plot "sweep.dat" using 1:2 with linespoints lw 2 title "nfscached writes", \\
     "sweep.dat" using 1:3 with linespoints lw 2 title "nfscached reads"{refs(0, " reads")}
unset logscale y
set ylabel "MB/s"
set yrange [0:*]
set title "W4: cold sequential 64 KiB reads of 256 MiB"
plot "sweep.dat" using 1:4 with linespoints lw 2 title "nfscached"{refs(1, "")}
unset multiplot
""", tmp)
    lat_rows = [("W1w", "W1", "w1write", 1), ("W1r", "W1", "w1read", 1), ("W2", "W2", "w2", 16),
                ("W3", "W3", "w3", 1), ("W4", "W4", "w4", 1), ("W5r", "W5", "w5rand", 1),
                ("W5s", "W5", "w5seq", 1), ("W6", "W6", "w6", 16), ("W6b2", "W6b", "w6b2", 16)]
    with open(os.path.join(tmp, "lat.dat"), "w") as f:
        f.write("# name " + " ".join(f"{p}_p50 {p}_p99" for p in PATHS) + "\n")
        for name, w, label, qd in lat_rows:
            vals = []
            for p in PATHS:
                x = ph(get(cells, w, p, 2, qd), label)
                vals += [x["p50_us"] / 1000 if x and x["ops"] else "NaN",
                         x["p99_us"] / 1000 if x and x["ops"] else "NaN"]
            f.write(f'"{name} ({qd})" ' + " ".join(str(v) for v in vals) + "\n")
    gnuplot(f"""
set terminal pngcairo size 1100,500 font ",10"
set output "{out}/bench-latency.png"
set multiplot layout 1,2 title "Latency per call at 2 ms one-way (workload (calls in flight))"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [0.01:*]
set ylabel "ms (log)"
set grid ytics
set xtics rotate by -45
set key top left
set title "p50"
plot "lat.dat" using 2:xtic(1) title "direct", "" using 4 title "nfscached", "" using 6 title "peer"
set title "p99"
plot "lat.dat" using 3:xtic(1) title "direct", "" using 5 title "nfscached", "" using 7 title "peer"
unset multiplot
""", tmp)
    with open(os.path.join(tmp, "ra.dat"), "w") as f:
        f.write("# read direct nfscached peer (ms)\n")
        lats = {}
        for p in PATHS:
            lats[p] = w5_lat(get(cells, "W5", p, 2, 1))
        for i in range(16):
            f.write(f"{i + 1} " + " ".join(f"{lats[p][i] / 1000:.3f}" if i < len(lats[p]) else "NaN"
                                           for p in PATHS) + "\n")
    gnuplot(f"""
set terminal pngcairo size 900,450 font ",10"
set output "{out}/bench-readahead.png"
set title "W5: the first 16 sequential 64 KiB READs after 1,000 random reads (2 ms one-way)"
set xlabel "sequential READ number"
set ylabel "latency, ms (log)"
set logscale y
set grid
set xrange [0.5:16.5]
set key outside right top
plot "ra.dat" using 1:2 with linespoints lw 2 title "direct", \\
     "" using 1:3 with linespoints lw 2 title "nfscached", \\
     "" using 1:4 with linespoints lw 2 title "peer"
""", tmp)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


# ------------------------------------------------------------- machine

def sh(cmd, cwd=None):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=cwd).stdout.strip()
    except OSError:
        return ""


def machine(root):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = sh("awk '/MemTotal/ { printf \"%.1f GiB\", $2 / 1048576 }' /proc/meminfo")
    osr = sh(". /etc/os-release && echo \"$PRETTY_NAME\"")
    commit = sh("git rev-parse HEAD", root)
    # The report and its plots are this run's own output: a rerun over a
    # committed report changes them, which is not a change to what ran.
    dirty = sh("git status --porcelain --untracked-files=no -- . "
               "':(exclude)docs/benchmarks.md' ':(exclude)docs/bench-*.png'", root)
    return {
        "cpu": f"{cpu} ({os.cpu_count()} CPUs)",
        "mem": mem,
        "os": f"{osr}, kernel {platform.release()}",
        "ganesha": sh("dpkg-query -W -f='${Version}' nfs-ganesha"),
        "libnfs": sh("dpkg-query -W -f='${Version}' libnfs13"),
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
    }


# -------------------------------------------------------------- report

run_grace = 20
stop_wait = 10


def problems(cells):
    out = []
    for c in sorted(cells.values(), key=lambda c: c.id):
        bad = [f"{p['label']}: {p['errors']} failed calls, {p['verify_fail']} bad reads"
               for p in c.phases.values() if p["errors"] or p["verify_fail"]]
        bad += [f"{p['label']}: calls unanswered {run_grace} s after the phase's time box "
                "(a COMMIT has none); the run went on without them"
                for p in c.phases.values() if p.get("timed_out")]
        st = c.proxy_status()
        if st not in (None, 0):
            bad.append(f"nfscached exit status {st} when stopped"
                       + (f" (killed: no exit within {stop_wait} s of SIGTERM)" if st == 137 else ""))
        if c.rc == -1:
            out.append(f"- `{c.id}`: its servers did not start, twice (see the logs under the cell's "
                       "directory); not measured")
            continue
        if c.rc != 0 or bad:
            if c.rc != 0 and not bad and c.err:
                bad = [c.err[-1]]
            out.append(f"- `{c.id}`: load generator exit status {c.rc}. " + "; ".join(bad))
    return out


def hostile_section(results):
    """Lines of the overload and stalled-connection section, from the last
    "load" and "stalled" lines of RESULTS/hostile.jsonl (bench/hostile.sh);
    [] when that file is absent."""
    path = os.path.join(results, "hostile.jsonl")
    if not os.path.exists(path):
        return []
    last = {}
    for line in open(path):
        j = json.loads(line)
        last[j["run"]] = j
    out = ["## Overload and stalled connections (bench/hostile.sh)", ""]
    ld, st = last.get("load"), last.get("stalled")
    if ld:
        out += [f"{ld['clients']} clients, each with {ld['qd']} calls in flight on its own connection "
                f"({ld['clients'] * ld['qd']:,} in all), random 4 KiB reads and writes 1:1 on a 4 MiB "
                "file each, every READ verified:", "",
                table(["ops/s", "errors", "wrong bytes", "COMMIT timeouts", "proxy peak RSS",
                       "cache_size", "descriptors at peak", "after"],
                      [[f"{ld['ops_s']:,.0f}", str(ld['errors']), str(ld['verify_fail']),
                        str(ld['commit_timeouts']), f"{ld['proxy_peak_rss_mib']} MiB",
                        f"{ld['cache_size_mib']} MiB", str(ld['peak_fds']), str(ld['fds_after'])]]),
                ""]
    if st:
        out += [f"{st['stalled']} connections stalled 10 bytes into a 1,000-byte record and "
                f"{st['trickling']} sending one byte a second, record_timeout = "
                f"{st['record_timeout_s']} s, while a normal client times NULL calls:", "",
                table(["all closed after", "closed record_timeout", "idle", "limit",
                       "descriptors at peak", "after", "normal NULL p50", "max"],
                      [[f"{st['seconds_to_close_all']} s", f"{st['closed_record_timeout']:.0f}",
                        f"{st['closed_idle']:.0f}", f"{st['closed_limit']:.0f}",
                        str(st['peak_fds']), str(st['fds_after']),
                        f"{st['normal_null_p50_ms']} ms", f"{st['normal_null_max_ms']} ms"]]),
                ""]
    return out


def write_report(cells, run, root, out, results_dir=""):
    m = machine(root)
    tg = targets(cells, relay_ceilings(results_dir))
    secs = run["end"] - run["start"]
    lines = []
    a = lines.append
    a("# Benchmarks")
    a("")
    a("Generated by `bench/run.sh` (see the README's Benchmark section); do not edit by hand.")
    a("Everything below comes from one run of that command.")
    a("")
    a(f"- Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(run['start']))}, "
      f"{secs // 60} min {secs % 60} s from start to the last cell"
      + ("" if float(run.get("scale", 1)) == 1 else f", **time boxes scaled x{run['scale']}**")
      + (f", **only cells matching `{run['only']}`**" if run.get("only") else ""))
    a(f"- Commit: `{m['commit']}`")
    if run.get("load_start"):
        a(f"- Load average (1, 5, 15 min) when the run started: {run['load_start']}; when it ended: "
          f"{run.get('load_end', '?')}. Anything above 0 is other work sharing the 2 CPUs.")
    a(f"- Machine: {m['cpu']}, {m['mem']} RAM; {m['os']}")
    a(f"- NFS-Ganesha {m['ganesha']} (upstream and peer), libnfs {m['libnfs']} (load generator)")
    a("")
    warn = relay_warning(cells)
    if warn:
        a(warn)
        a("")
    a("## Summary")
    a("")
    a("Higher is better everywhere. Ratios divide nfscached's figure by the other path's at the same")
    a("delay and number of calls in flight.")
    a("")
    a(summary_table(cells))
    a("")
    kt = kernel_table(kernel_cells)
    if kt:
        a("Informational, no target: the Linux kernel's NFS client (Debian 12's kernel in the kernel")
        a("tests' QEMU guest, `tests/kernel/vm.sh`) running `sysbench fileio --file-test-mode=rndrw")
        a("--file-block-size=2K` (4 files of 8 MiB; sysbench's mix of 1.5 reads per write and an fsync")
        a("every 100 requests) on the mount, for the run's K1 time box, behind the 2 ms relay. The guest")
        a("is emulated (TCG), so its CPU bounds both paths: read the ratio, not the rates.")
        a("")
        a(kt)
        a("")
    a("## Targets")
    a("")
    a(table(["target", "measured", "met"],
            [[t, v, "n/a" if ok is None else ("**yes**" if ok else "no")] for t, v, ok in tg]))
    a("")
    probs = problems(cells)
    if probs:
        a("## Problems seen in this run")
        a("")
        lines.extend(probs)
        a("")
    a("## What runs")
    a("")
    a("Every cell starts fresh: a new upstream NFS-Ganesha (FSAL VFS on a new directory), the project's")
    a("delay relay (`tests/tools/delayrelay`) in front of both of its ports, and then one of three paths:")
    a("")
    a("- **direct**: client -> relay -> Ganesha (NFSv3);")
    a("- **nfscached**: client -> nfscached -> relay -> Ganesha; `page_size` 64 KiB unless stated,")
    a(f"  `cache_size` {next((c.meta['cache_mib'] for c in cells.values()), 256)} MiB"
      + (", `cache_preallocate = true` (each cell starts once the page pool has faulted its budget"
         " in: a daemon that has run a while; on this virtual machine a first touch of memory costs"
         " far more than the copy after it, docs/operations.md \"Memory\")"
         if run.get("prealloc", False) else "")
      + ", everything else default;")
    a("- **peer**: client -> Ganesha's FSAL PROXY_V4 (serving NFSv3, talking NFSv4.1 to the relay's port,")
    a("  attributes cached 60 s as Ganesha's default) -> relay -> Ganesha.")
    a("")
    a("The relay delays each direction by 0 ms or 2 ms (a 4 ms round trip at 2 ms), moving the bytes with")
    a("splice(2) through pipes, never copying them (its ceiling is below). The client is")
    a("`bench/loadgen`, on libnfs's raw async NFSv3 calls over one TCP connection with 1 or 16 calls")
    a("in flight; WRITEs are UNSTABLE, data is checked on every READ (bytes it wrote must read back, the")
    a("rest must match the file's known contents), and only calls completing inside the timed window")
    a("count. Each measured phase is time-boxed (warm-up, where there is one, is not counted), so the")
    a("slow paths report what they did within the box. Files read by W1, W2, W4, W5 and W6b are written")
    a("into the export directory before the servers start, so every path's cache starts cold (the host's")
    a("page cache under Ganesha is warm for all paths alike).")
    a("")
    a("Upstream calls are counted by each path's own witness: nfscached's")
    a("`nfscached_upstream_rpcs_total`; for direct, the upstream Ganesha's NFSv3 counters; for the peer,")
    a("its NFSv4 operation counters (SEQUENCE and PUTFH, present in every COMPOUND, left out). Ganesha's")
    a("counters (`Enable_FULLV3_Stats`, `Enable_FULLV4_Stats`) are read with `GetFULLV3Stats` /")
    a("`GetFULLV4Stats` over a private `dbus-daemon` (`DBUS_SYSTEM_BUS_ADDRESS`, a `Dbus_Name_Prefix` per")
    a("instance). Server CPU seconds and peak RSS (`VmHWM`) are read from `/proc` at the end of the cell,")
    a("for nfscached or the peer Ganesha.")
    a("")
    a("Workloads (block sizes are client call sizes):")
    a("")
    a("- W1: random 1 KiB WRITEs into a 64 MiB file, then a COMMIT, then random 1 KiB READs of blocks")
    a("  written in this run (each checked against what was written).")
    a("- W2: random 2 KiB READs and WRITEs 1:2 on a 64 MiB file, 16 in flight, a COMMIT after every")
    a("  100 WRITEs (sysbench's default `file-fsync-freq`).")
    a("- W3: up to 10,000 sequential 64 KiB WRITEs into a new file, then one COMMIT; \"MB/s to COMMIT\"")
    a("  counts every byte sent over the whole phase including the COMMIT.")
    a("- W4: a cold sequential read of a 256 MiB file in 64 KiB READs.")
    a("- W5: 1,000 random 4 KiB READs in the second half of that file, then a sequential scan from its")
    a("  start. The window sent at READ 4 is what nfscached's `nfscached_readahead_issued_bytes_total`")
    a("  gained between the snapshots after READs 3 and 4; the window is full by READ 4 if that is at least")
    a("  the mean window sent later in the scan (after READ 16). \"Fetched ahead\" is")
    a("  `nfscached_cache_fetch_bytes_total` gained during the scan minus the bytes the client asked for.")
    a("- W6: a 1 GiB file created through the path and sized with SETATTR, read sequentially (zeros).")
    a("- W6b: a 1 GiB file written directly in the export directory, one 64 KiB chunk in 16 holding data")
    a("  and the rest explicit zero blocks, read twice (the second pass covers what the first read).")
    a("- W7: W1 and W4 through nfscached at 2 ms, 16 in flight, with page sizes 4 KiB to 1 MiB.")
    a(f"- W8: warm restart (the disk tier). nfscached runs with `cache_size` {run.get('w8_cache_mib', 64)} MiB,")
    a(f"  `disk_cache_size` {run.get('w8_disk_mib', 1024)} MiB and a `cache_dir` of its own; a 256 MiB file")
    a("  is read once in full (64 KiB READs, 16 in flight); once the disk tier's stores have settled,")
    a("  nfscached is stopped with SIGTERM and started again on the same `cache_dir`, and the file is")
    a("  read again (measured). Direct reads the file twice with nothing restarted.")
    a("- W10: 4 KiB sequential WRITEs into a new file, each followed by a COMMIT, one call in flight")
    a("  (direct, nfscached, and nfscached with `commit = \"local\"`: \"Local commit\" below).")
    a("")
    b = run.get("boxes", {})
    a(f"Time boxes (s): W1 {b.get('W1')} per phase after {b.get('warmup')} s warm-up, W2 {b.get('W2')} "
      f"after the same warm-up, W3 {b.get('W3')}, W4 {b.get('W4')}, W5 {b.get('W5rand')} random + "
      f"{b.get('W5scan')} scan, W6 {b.get('W6')}, W6b {b.get('W6b')} per pass, W8 {b.get('W8')} for the "
      "second read (the first reads the whole file).")
    a("")
    for label in ("w1write", "w1read", "w2", "w3", "w4", "w5rand", "w5seq", "w6", "w6b1", "w6b2",
                  "w8cold", "w8warm"):
        w = PHASES[label][0]
        a(f"## {PHASE_TITLE[label]}")
        a("")
        a(phase_table(cells, label, w))
        a("")
        if label == "w5seq":
            a("Readahead after the random phase (one call in flight):")
            a("")
            a(readahead_table(cells))
            a("")
            a("![W5 sequential READ latency](bench-readahead.png)")
            a("")
        if label == "w8warm":
            a("W8 in one table: the second read through nfscached after its restart, against the second")
            a("read direct; what nfscached fetched upstream meanwhile; and its disk tier's hit throughput")
            a("(`nfscached_disk_hit_bytes_total` gained over the phase's wall time).")
            a("")
            a(w8_table(cells))
            a("")
    a("## The relay's own cost")
    a("")
    a("The same client straight to Ganesha, without the relay and through it. The 0 ms relay should")
    a("cost little; where it costs much, every figure measured through it is bounded by it.")
    a("")
    a(relay_table(cells))
    hn = hop_note(cells)
    if hn:
        a("")
        a(hn)
    a("")
    a("## W7: page size")
    a("")
    a(sweep_table(cells))
    a("")
    a("![page size sweep](bench-pagesize.png)")
    a("")
    a("## Latency")
    a("")
    a("![latency at 2 ms](bench-latency.png)")
    a("")
    a("## nfscached's upstream counts against Ganesha's")
    a("")
    a("The same upstream calls counted at both ends of the relay, for every nfscached phase.")
    a("")
    a(witness_table(cells))
    a("")
    lines.extend(cpu_section(cells))
    lines.extend(bound_section(cells))
    lines.extend(scaling_section())
    lines.extend(relay_ceiling_section(results_dir) if results_dir else [])
    lines.extend(local_section(cells, results_dir))
    lines.extend(hostile_section(results_dir) if results_dir else [])
    a("## Reproducing")
    a("")
    a("`bench/run.sh` on a Debian 12 machine with 2 CPUs, as root (it installs its packages). Raw")
    a("results (per-phase JSON from the load generator, every counter snapshot, all logs) are kept in")
    a("`build-bench/bench-results/`; `bench/run.sh --report-only build-bench/bench-results` rewrites")
    a("this page from them.")
    a("")
    with open(os.path.join(out, "benchmarks.md"), "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    cells, run = load(args.results)
    global kernel_cells
    kernel_cells = load_kernel(args.results)
    global run_grace, stop_wait
    run_grace = run.get("boxes", {}).get("grace", 20)
    stop_wait = run.get("stop_wait", 10)
    os.makedirs(args.out, exist_ok=True)
    plots(cells, os.path.abspath(args.out))
    write_report(cells, run, args.root, args.out, args.results)
    print(summary_table(cells))
    if kernel_cells:
        print(kernel_table(kernel_cells))
    for t, v, ok in targets(cells, relay_ceilings(args.results)) + (scaling_targets() if scaling_cells else []):
        print(f"target: {t}: {v}: {'n/a' if ok is None else ('met' if ok else 'NOT met')}")


if __name__ == "__main__":
    main()
