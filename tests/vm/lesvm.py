# SPDX-License-Identifier: GPL-2.0
"""The VM tests' vocabulary: a TAP reporter, namespaces, SAs and policies,
and the agents that send, receive and capture inside a namespace.

Topology (every test uses it):

    a (endpoint) ---- m (middle hop: observer, injector) ---- b (endpoint)
    10.0.1.1 fd00:1::1   10.0.1.254 / 10.0.2.254            10.0.2.1 fd00:2::1
    inner (tunnel mode): a 10.10.1.1 fd10:1::1, b 10.10.2.1 fd10:2::1
"""
import itertools
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))

import nsagent  # noqa: E402
from ike import wait_for  # noqa: E402,F401  (re-exported to the tests)
from lescodec import blob as B  # noqa: E402
from lescodec import packet as P  # noqa: E402
from lescodec import pcap  # noqa: E402
from lescodec import zone as Z  # noqa: E402

PY = "/usr/bin/python3"
AGENT = os.path.join(REPO, "tests", "vm", "nsagent.py")

OUTER = {"a": {4: "10.0.1.1", 6: "fd00:1::1"}, "b": {4: "10.0.2.1", 6: "fd00:2::1"}}
INNER = {"a": {4: "10.10.1.1", 6: "fd10:1::1"}, "b": {4: "10.10.2.1", 6: "fd10:2::1"}}
MIDDLE_TO_B = "m-b"   # m's interface towards b: where the observer captures


# ---- TAP --------------------------------------------------------------------

class Tap:
    def __init__(self, prefix=""):
        self.n = 0
        self.failed = 0
        self.prefix = prefix

    def ok(self, cond, desc, detail=None):
        self.n += 1
        if not cond:
            self.failed += 1
        print(f"{'ok' if cond else 'not ok'} {self.n} - {self.prefix}{desc}", flush=True)
        if not cond and detail is not None:
            for line in str(detail).splitlines()[:30]:
                print(f"#   {line}", flush=True)
        return cond

    def skip(self, desc, why):
        self.n += 1
        print(f"ok {self.n} - {self.prefix}{desc} # SKIP {why}", flush=True)

    def run(self, desc, fn, *args, **kw):
        """Run fn; an exception is a failure with its message, never a crash
        of the whole suite."""
        try:
            res = fn(*args, **kw)
        except Exception as e:  # noqa: BLE001 - a test's failure, reported
            import traceback
            return self.ok(False, desc, f"{type(e).__name__}: {e}\n" + traceback.format_exc(limit=3))
        if isinstance(res, tuple):
            return self.ok(res[0], desc, res[1])
        return self.ok(bool(res), desc)


# ---- shell --------------------------------------------------------------------

def nsname(ns):
    """Namespace names: a one-letter name like "m" confuses `ip link set
    DEV netns m` (it fails with "Device does not exist")."""
    return f"les-{ns}"


class NsAgent:
    """The nsagent server of one namespace (tests/vm/nsagent.py serve): its
    shell commands and actions without a new process each, which under
    emulation costs seconds (the debug kernel: a new python ~9 s)."""

    def __init__(self, ns):
        self.p = subprocess.Popen(["ip", "netns", "exec", nsname(ns), PY, AGENT, "serve"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.queues = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            msg = json.loads(line)
            q = self.queues.get(msg["id"])
            if q:
                q.put(msg)
        for q in list(self.queues.values()):
            q.put({"rc": None, "gone": True})

    def send(self, **req):
        with self.lock:
            rid = next(self.ids)
            q = self.queues[rid] = queue.Queue()
            self.p.stdin.write(json.dumps(dict(req, id=rid)) + "\n")
            self.p.stdin.flush()
        return rid, q

    def stop(self, rid):
        with self.lock:
            self.p.stdin.write(json.dumps({"id": 0, "stop": rid}) + "\n")
            self.p.stdin.flush()

    def done(self, rid):
        self.queues.pop(rid, None)

    def sh(self, cmd, timeout):
        rid, q = self.send(sh=cmd, timeout=timeout)
        try:
            msg = q.get(timeout=timeout + 60)
        finally:
            self.done(rid)
        if msg.get("gone"):
            raise RuntimeError(f"the namespace's agent is gone: `{cmd}` not run")
        if msg["rc"] is None:
            raise subprocess.TimeoutExpired(cmd, timeout)
        return subprocess.CompletedProcess(cmd, msg["rc"], msg["out"], msg["err"])

    def close(self):
        self.p.stdin.close()
        self.p.wait()


_agents = {}


def ns_agent(ns):
    a = _agents.get(ns)
    if a is None or a.p.poll() is not None:
        a = _agents[ns] = NsAgent(ns)
    return a


def ns_agents_close():
    """An agent keeps its namespace alive: end them before namespaces go."""
    for a in _agents.values():
        a.close()
    _agents.clear()


def sh(cmd, ns=None, check=True, timeout=120):
    if ns:
        p = ns_agent(ns).sh(cmd, timeout)
    else:
        p = nsagent.run_cmd(cmd, timeout)
    if check and p.returncode:
        raise RuntimeError(f"`{cmd}` failed ({p.returncode}): {p.stderr.strip() or p.stdout.strip()}")
    return p


def agent(ns, *args, timeout=120):
    """Run an nsagent action to completion; returns its last JSON line."""
    bg = Bg(ns, *args, ready_timeout=timeout)
    res = bg.result(timeout=timeout)
    if bg.rc:
        raise RuntimeError(f"nsagent {' '.join(map(str, args))} failed ({bg.rc}): {bg.lines[-5:]}")
    return res


class Bg:
    """An nsagent action in the background; result() waits for its last line."""

    def __init__(self, ns, *args, ready_timeout=300):
        self.agent = ns_agent(ns)
        self.rid, self.q = self.agent.send(run=[str(a) for a in args])
        self.lines, self.rc, self.finished = [], None, False
        # Every agent prints one line once it is ready (listening, sniffing).
        self._next(ready_timeout)

    def _next(self, timeout):
        try:
            msg = self.q.get(timeout=timeout)
        except queue.Empty:
            raise subprocess.TimeoutExpired(str(self.rid), timeout) from None
        if "line" in msg:
            self.lines.append(msg["line"])
        else:
            self.rc, self.finished = msg["rc"], True
            self.agent.done(self.rid)

    def stop(self):
        if not self.finished:
            self.agent.stop(self.rid)
        return self.result()

    def result(self, timeout=120):
        end = time.monotonic() + timeout
        while not self.finished:
            self._next(max(0.0, end - time.monotonic()))
        lines = [ln for ln in self.lines if ln.strip()]
        if not lines:
            raise RuntimeError(f"agent printed nothing (exit {self.rc})")
        return json.loads(lines[-1])


# ---- topology ---------------------------------------------------------------

def topology_up():
    topology_down()
    for ns in "amb":
        sh(f"ip netns add {nsname(ns)}")
        sh("ip link set lo up", ns=ns)
        # No duplicate address detection: addresses are usable at once.
        sh("sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0", ns=ns)
    # Always "dev NAME": `ip link set ma ...` would read "ma" as "master".
    for x, y, nx, ny in (("a-m", "m-a", "a", "m"), ("m-b", "b-m", "m", "b")):
        sh(f"ip link add dev {x} type veth peer name {y}")
        sh(f"ip link set dev {x} netns {nsname(nx)} && ip link set dev {y} netns {nsname(ny)}")
    sh("sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1", ns="m")
    for ns, dev, a4, a6 in (("a", "a-m", "10.0.1.1/24", "fd00:1::1/64"),
                            ("m", "m-a", "10.0.1.254/24", "fd00:1::fe/64"),
                            ("m", "m-b", "10.0.2.254/24", "fd00:2::fe/64"),
                            ("b", "b-m", "10.0.2.1/24", "fd00:2::1/64")):
        sh(f"ip addr add {a4} dev {dev}", ns=ns)
        sh(f"ip addr add {a6} dev {dev} nodad", ns=ns)
        sh(f"ip link set dev {dev} up", ns=ns)
    for ns, gw4, gw6, peer in (("a", "10.0.1.254", "fd00:1::fe", "b"),
                               ("b", "10.0.2.254", "fd00:2::fe", "a")):
        me = "a" if ns == "a" else "b"
        sh("ip link add dev in0 type dummy && ip link set dev in0 up", ns=ns)
        sh(f"ip addr add {INNER[me][4]}/32 dev in0", ns=ns)
        sh(f"ip addr add {INNER[me][6]}/128 dev in0 nodad", ns=ns)
        sh(f"ip route add {OUTER[peer][4]}/32 via {gw4}", ns=ns)
        sh(f"ip route add {INNER[peer][4]}/32 via {gw4} src {INNER[me][4]}", ns=ns)
        sh(f"ip -6 route add {OUTER[peer][6]}/128 via {gw6}", ns=ns)
        sh(f"ip -6 route add {INNER[peer][6]}/128 via {gw6} src {INNER[me][6]}", ns=ns)


def topology_down():
    ns_agents_close()
    for ns in "amb":
        sh(f"ip netns del {nsname(ns)}", check=False)


def xfrm_flush():
    for ns in "ab":
        sh("ip xfrm state flush; ip xfrm policy flush", ns=ns)


# ---- SAs ----------------------------------------------------------------------

def key(label, n=36):
    """Deterministic key material (key || salt), so captures are reproducible."""
    import hashlib
    return hashlib.sha512(label.encode()).digest()[:n]


class Config:
    """One way of running LES: mode, outer and inner family, ESN, NAT-T."""

    def __init__(self, mode, ofam, ifam=None, esn=False, encap=False):
        self.mode, self.ofam = mode, ofam
        self.ifam = ifam if mode == "tunnel" else ofam
        self.esn, self.encap = esn, encap

    @property
    def tunnel(self):
        return self.mode == "tunnel"

    def __str__(self):
        s = f"{self.mode} "
        s += f"v{self.ifam}-in-v{self.ofam}" if self.tunnel else f"v{self.ofam}"
        if self.esn:
            s += " esn"
        if self.encap:
            s += " udp-encap"
        return s

    def outer(self, who):
        return OUTER[who][self.ofam]

    def inner(self, who):
        return INNER[who][self.ifam] if self.tunnel else OUTER[who][self.ofam]

    def inner_nexthdr(self, l4):
        if self.tunnel:
            return 4 if self.ifam == 4 else 41
        return l4


class Sa:
    """One direction of an LES (or plain ESP) SA, with its keys.

    An endpoint SA has deterministic roots (K2, K1, KP); a pep-view SA takes
    its parent endpoint SA's K2 root, a PEP-origin SA the KO root of
    `pep_id` derived from the parent's KP (docs/protocol.md 1, 6).  `k2` and
    `k1` are this SA's zone keys (key || salt), bound to its SPI and
    direction (2.1): what the codec seals and opens with."""

    KEYLEN = 32

    def __init__(self, cfg, src, dst, spi, role="endpoint", parent=None,
                 pep_id=0, reqid=1, plain_key=None, r2i=None):
        self.cfg, self.src, self.dst, self.spi = cfg, src, dst, spi
        self.role, self.pep_id, self.reqid = role, pep_id, reqid
        self.plain_key, self.parent = plain_key, parent
        self.r2i = bool(r2i if r2i is not None else (parent.r2i if parent else src > dst))
        self.k2root = self.k1root = self.kp = self.ko = None
        if role == "endpoint":
            self.k2root = key(f"k2-{src}-{dst}-{spi}")
            self.k1root = key(f"k1-{src}-{dst}-{spi}")
            self.kp = key(f"kp-{src}-{dst}-{spi}", 32)
        elif role == "pep-view":
            self.k2root = parent.k2root
        else:
            self.ko = B.pep_origin_root(parent.kp, pep_id, self.r2i, self.KEYLEN)

    @property
    def k2(self):
        """The header zone key of this SA."""
        return B.zone_key(self.ko or self.k2root, b"H", self.spi, self.r2i)

    @property
    def k1(self):
        """The payload zone key of this SA (endpoint SAs only)."""
        return B.zone_key(self.k1root, b"P", self.spi, self.r2i) if self.k1root else None

    def blob(self):
        if self.plain_key:
            return self.plain_key
        return B.build_blob(self.role, self.KEYLEN, k2=self.k2root, k1=self.k1root,
                            kp=self.kp, ko=self.ko, pep_id=self.pep_id, r2i=self.r2i)

    def po_key(self):
        return self.k2

    def add_cmd(self, extra=""):
        c = self.cfg
        cmd = (f"ip xfrm state add src {c.outer(self.src)} dst {c.outer(self.dst)} "
               f"proto esp spi {self.spi:#x} reqid {self.reqid} mode {c.mode} "
               f"aead 'rfc4106(gcm(aes))' 0x{self.blob().hex()} 128 replay-window 4096")
        if c.esn:
            # Start in the second 2^32 epoch: SeqHi is exercised.
            cmd += " flag esn replay-seq-hi 1 replay-oseq-hi 1"
        if c.encap:
            cmd += " encap espinudp 4500 4500 0.0.0.0"
        if c.tunnel:
            # The inner family must be named when it differs from the outer.
            cmd += f" sel src {c.inner(self.src)} dst {c.inner(self.dst)}"
        return cmd + " " + extra

    def install(self, extra=""):
        for ns in (self.src, self.dst):
            sh(self.add_cmd(extra), ns=ns)

    def seq64(self, seq_lo):
        return ((1 << 32) if self.cfg.esn else 0) | seq_lo


def iv_mask_of(sa, esp):
    """R of the state that sent esp (docs/protocol.md 2.2): IV XOR the
    packet's 64-bit sequence number."""
    seq_lo = int.from_bytes(esp[4:8], "big")
    return int.from_bytes(esp[8:16], "big") ^ sa.seq64(seq_lo)


def encap_hold(cfg):
    """With NAT-T, hold port 4500 open on both endpoints; returns the agents
    to stop afterwards."""
    holds = []
    if cfg.encap:
        any_addr = "0.0.0.0" if cfg.ofam == 4 else "::"
        for ns in "ab":
            holds.append(Bg(ns, "udp-encap-hold", any_addr, 4500, 600))
    return holds


def policies(cfg):
    for me, peer in (("a", "b"), ("b", "a")):
        tmpl_out = f"tmpl src {cfg.outer(me)} dst {cfg.outer(peer)} proto esp reqid 1 mode {cfg.mode}"
        tmpl_in = f"tmpl src {cfg.outer(peer)} dst {cfg.outer(me)} proto esp reqid 1 mode {cfg.mode}"
        sh(f"ip xfrm policy add src {cfg.inner(me)} dst {cfg.inner(peer)} dir out {tmpl_out}", ns=me)
        sh(f"ip xfrm policy add src {cfg.inner(peer)} dst {cfg.inner(me)} dir in {tmpl_in}", ns=me)


def tunnel_up(cfg, base_spi, plain=False):
    """An LES tunnel a <-> b as cfg says; returns (sa_ab, sa_ba)."""
    xfrm_flush()
    ab = Sa(cfg, "a", "b", base_spi)
    ba = Sa(cfg, "b", "a", base_spi + 1)
    if plain:
        ab.plain_key = key(f"plain-{base_spi}", 20)
        ba.plain_key = key(f"plain-{base_spi + 1}", 20)
    ab.install()
    ba.install()
    policies(cfg)
    return ab, ba


# ---- counters -------------------------------------------------------------------

LESCTL = os.path.join(REPO, "tools", "lesctl", "lesctl")


def counters(ns):
    """xfrm's counters (/proc/net/xfrm_stat) and les.ko's of a namespace,
    merged.  les.ko's come through `lesctl stats`, which first waits for the
    PEP's opener, so that they count every packet forwarded before the call
    (/proc/net/les_stat does not wait); the file is the fallback without
    lesctl or les.ko."""
    out = sh(f"cat /proc/net/xfrm_stat; {LESCTL} stats 2>/dev/null || "
             "cat /proc/net/les_stat 2>/dev/null", ns=ns, check=False).stdout
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[1].isdigit():
            res[f[0]] = int(f[1])
    return res


def delta(before, after):
    return {k: after.get(k, 0) - before.get(k, 0)
            for k in set(before) | set(after) if after.get(k, 0) != before.get(k, 0)}


def sa_stats(ns, spi):
    """integrity-failed / replay counters of one SA (`ip -s xfrm state`)."""
    out = sh(f"ip -s xfrm state list spi {spi:#x}", ns=ns).stdout
    m = re.search(r"replay-window (\d+) replay (\d+) failed (\d+)", out)
    return {"replay_window": int(m.group(1)), "replay": int(m.group(2)),
            "failed": int(m.group(3))} if m else {}


# ---- capture ----------------------------------------------------------------------

def capture_esp(path, spi=None):
    """ESP packets of a capture: list of (outer IP bytes, EspFound)."""
    out = []
    for _, ip in pcap.read_pcap(path):
        f = P.find_esp(ip)
        if f and (spi is None or f.spi == spi):
            out.append((ip, f))
    return out


