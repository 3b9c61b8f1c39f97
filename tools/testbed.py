#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The satellite testbed: how long real transfers take over a geostationary
link with clear TCP, IPsec ESP, LES, LES with both PEPs observing, and LES
through both PEPs accelerating (docs/accel.md); and clear TCP through a
split-TCP PEP, PEPsal, on both PEPs, when given one (--pepsal).

    client --- rpep ==== satellite hop ==== hpep --- server
    (curl)    remote PEP   netem each way   hub PEP   (nginx)

Each box is a network namespace.  The IPsec endpoints are the client and
the server themselves (tunnel mode, inner addresses 10.11.0.1 and
10.13.0.1); the PEPs are routers that hold PEP keys or not.  The hop is
netem on both of its ends: the profile's one-way delay, rate per direction,
loss, and a queue of at least 2 x BDP plus the delay line.  docs/testbed.md
says why each setting is what it is.

    testbed.py run --ko les.ko --out DIR [--set demo|full|check]
                   [--profiles P,..] [--modes M,..] [--workloads W,..]
                   [--reps N] [--max-time S] [--profile NAME:rtt=MS,down=KBIT,up=KBIT,loss=PCT]
                   [--budget S] [--pepsal PATH]
        as root inside the VM (tools/demo.sh boots it): one JSON line per
        fetch to DIR/results.jsonl, progress on stdout.  Before each mode
        it checks that the host keeps the link's timing (tools/timing.py);
        each line records that reading.
    testbed.py report DIR/results.jsonl [--png FILE]
        anywhere: one table per profile (modes x workloads, seconds, the
        physical bound last) and a chart.
"""
import argparse
import ctypes
import hashlib
import json
import math
import os
import re
import select
import statistics
import subprocess
import threading
import sys
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ike  # noqa: E402
import shellcmd  # noqa: E402
import timing  # noqa: E402
CONF = os.path.join(HERE, "testbed.toml")
LESCTL = os.path.join(HERE, "lesctl", "lesctl")
WORK = "/tmp/testbed"
PEP_MARK = 0x4c455350          # lesctl pep set mark; docs/pep.md
AEAD = "'rfc4106(gcm(aes))'"
# A PEPsal binary (docs/testbed.md): mode pepsal runs, and is in the
# default modes, only with one.
PEPSAL = os.environ.get("LES_PEPSAL", "")
PEPSAL_PORT = 5000
HOG = 0                                 # busy loops beside the namespaces (--hog)

NS = ("client", "rpep", "hpep", "server")
# (namespace, device, address, peer namespace, peer device): one per veth end.
LINKS = (("client", "c-r", "10.1.0.1", "rpep", "r-c"),
         ("rpep", "r-c", "10.1.0.254", "client", "c-r"),
         ("rpep", "r-h", "10.2.0.1", "hpep", "h-r"),
         ("hpep", "h-r", "10.2.0.2", "rpep", "r-h"),
         ("hpep", "h-s", "10.3.0.254", "server", "s-h"),
         ("server", "s-h", "10.3.0.1", "hpep", "h-s"))
OUTER = {"client": "10.1.0.1", "server": "10.3.0.1"}
INNER = {"client": "10.11.0.1", "server": "10.13.0.1"}
# The same plan in IPv6 (set_family(6)): inner and outer addresses both.
FAMILY = 4
V6 = {"10.1.0.1": "fd01::1", "10.1.0.254": "fd01::fe", "10.2.0.1": "fd02::1",
      "10.2.0.2": "fd02::2", "10.3.0.254": "fd03::fe", "10.3.0.1": "fd03::1",
      "10.11.0.1": "fd11::1", "10.11.0.2": "fd11::2", "10.13.0.1": "fd13::1"}
# The hop's ends: uplink leaves rpep, downlink leaves hpep.
HOP = {"up": ("rpep", "r-h"), "down": ("hpep", "h-r")}
MTU = 1500
# netem counts every packet it delays, so the delay line is sized for the
# smallest packets that may fill it (pure ACKs), the queue for full ones.
SMALLEST = 64


def ns(name):
    return f"tb-{name}"


def client_addr(t):
    """The client's inner address of tunnel @t (Mode(tunnels=2)): a second
    CHILD_SA between the same gateways, for a second address."""
    return plan(f"10.11.0.{t + 1}")


def tunnel_inner(t):
    return dict(INNER, client=client_addr(t))


def plan(v4):
    """An address of the plan, in the testbed's family."""
    return V6[v4] if FAMILY == 6 else v4


def host(addr):
    """@addr as a URL's host."""
    return f"[{addr}]" if ":" in addr else addr


def set_family(fam):
    """Addresses of the family @fam from now on (topology_up() again)."""
    global FAMILY
    FAMILY = fam
    OUTER.update(client=plan("10.1.0.1"), server=plan("10.3.0.1"))
    INNER.update(client=plan("10.11.0.1"), server=plan("10.13.0.1"))


LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def netns_of(where):
    """A child's first act: join the namespace.  Cheaper than `ip netns
    exec`, which also remounts /sys: under emulation every exec counts.
    (So /sys/class/net shows the VM's own devices: ask `ip` instead.)"""
    def enter():
        fd = os.open(f"/run/netns/{ns(where)}", os.O_RDONLY)
        if LIBC.setns(fd, CLONE_NEWNET):
            os._exit(125)
        os.close(fd)
    return enter if where else None


def sh(cmd, where=None, check=True, timeout=600):
    p = subprocess.run(shellcmd.argv(cmd), capture_output=True, text=True, timeout=timeout,
                       preexec_fn=netns_of(where))
    if check and p.returncode:
        raise RuntimeError(f"`{cmd}` failed ({p.returncode}): {(p.stderr or p.stdout).strip()}")
    return p


# ---- configuration -----------------------------------------------------------

def load_conf():
    with open(CONF, "rb") as f:
        return tomllib.load(f)


def parse_profile(text):
    """NAME:rtt=600,down=10000,up=2000,loss=1 (ms, kbit/s, percent)."""
    name, _, kv = text.partition(":")
    keys = {"rtt": "rtt_ms", "down": "down_kbit", "up": "up_kbit", "loss": "loss_pct"}
    prof = {"rtt_ms": 600, "down_kbit": 10000, "up_kbit": 2000, "loss_pct": 0.0}
    for item in filter(None, kv.split(",")):
        k, _, v = item.partition("=")
        if k not in keys:
            raise SystemExit(f"testbed: profile {name}: unknown key {k!r} (rtt, down, up, loss)")
        prof[keys[k]] = float(v)
    if not name or prof["rtt_ms"] <= 0 or prof["down_kbit"] <= 0 or prof["up_kbit"] <= 0 \
            or not 0 <= prof["loss_pct"] < 100:
        raise SystemExit(f"testbed: bad profile {text!r}")
    return name, prof


def queue_limit(prof, rate_kbit):
    """netem's limit in packets: 2 x BDP of full packets plus the one-way
    delay line of the smallest ones."""
    bdp = rate_kbit * 1000 / 8 * prof["rtt_ms"] / 1000
    line = rate_kbit * 1000 / 8 * prof["rtt_ms"] / 2000
    return math.ceil(2 * bdp / MTU) + math.ceil(line / SMALLEST)


def workload_bytes(w):
    return w.get("bytes") or w["html_bytes"] + w["objects"] * w["object_bytes"]


def bound(prof, w):
    """The physical bound: handshake and request, or an upload's handshake
    and answer (2 RTT), a third for the page's objects, which are asked for
    after the HTML arrives, plus the bytes at the rate of the link they
    cross."""
    rtts = 3 if "objects" in w else 2
    rate = prof["up_kbit"] if w.get("upload") else prof["down_kbit"]
    return rtts * prof["rtt_ms"] / 1000 + workload_bytes(w) * 8 / (rate * 1000)


# ---- topology ------------------------------------------------------------------

def topology_down():
    sh(f"[ -f {WORK}/nginx.pid ] && kill $(cat {WORK}/nginx.pid)", check=False)
    pepsal_down()
    # SAs first: a namespace outlives its name while an orphaned socket in
    # it still retransmits, and its SAs would hold les.ko that long.
    flush_sas()
    gone = [f"netns del {ns(n)}" for n in NS if os.path.exists(f"/run/netns/{ns(n)}")]
    if gone:
        sh("ip -force -batch - <<'EOF'\n" + "\n".join(gone) + "\nEOF", check=False)


def link_mac(i):
    """The MAC address of LINKS[@i]'s device: set, so that each
    namespace's neighbours go in with its addresses."""
    return f"02:4c:45:53:00:{i:02x}"


def topology_up():
    """The four namespaces: a script for the VM's own and one per
    namespace, its `ip` part one `ip -batch` (under emulation every exec
    counts: a debug kernel's takes a second)."""
    topology_down()
    net, hostlen, nodad = (64, 128, " nodad") if FAMILY == 6 else (24, 32, "")
    mac = {(n, dev): link_mac(i) for i, (n, dev, _, _, _) in enumerate(LINKS)}
    addr = {(n, dev): plan(v4) for n, dev, v4, _, _ in LINKS}
    root = [f"netns add {ns(n)}" for n in NS]
    root += [f"link add dev {da} address {mac[(a, da)]} netns {ns(a)} type veth "
             f"peer name {db} address {mac[(b, db)]} netns {ns(b)}"
             for a, da, _, b, db in LINKS if a < b]
    sh("ip -batch - <<'EOF'\n" + "\n".join(root) + "\nEOF")
    ipb = {n: ["link set dev lo up"] for n in NS}
    other = {n: ["set -e"] for n in NS}
    for n, dev, _, pn, pdev in LINKS:
        ipb[n] += [f"addr add {addr[(n, dev)]}/{net} dev {dev}{nodad}",
                   f"link set dev {dev} up",
                   # No ARP across the hop in the middle of a measurement.
                   f"neigh replace {addr[(pn, pdev)]} lladdr {mac[(pn, pdev)]} dev {dev} "
                   "nud permanent"]
        # netem must see the packets the wire carries, not 64 kB aggregates.
        other[n].append(f"ethtool -K {dev} tso off gso off gro off")
    for n in ("rpep", "hpep"):
        other[n].append("sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1")
    cli, srv, cli2 = INNER["client"], INNER["server"], client_addr(1)
    for n in ("client", "server"):
        ipb[n] += ["link add dev in0 type dummy", "link set dev in0 up",
                   f"addr add {INNER[n]}/{hostlen} dev in0{nodad}"]
    ipb["client"] += [f"addr add {cli2}/{hostlen} dev in0{nodad}",
                      f"route add default via {plan('10.1.0.254')}",
                      f"route add {srv}/{hostlen} via {plan('10.1.0.254')} src {cli}"]
    ipb["server"] += [f"route add default via {plan('10.3.0.254')}",
                      f"route add {cli}/{hostlen} via {plan('10.3.0.254')} src {srv}"]
    ipb["rpep"] += [f"route add {cli2}/{hostlen} via {plan('10.1.0.1')}",
                    f"route add default via {plan('10.2.0.2')}",
                    f"route add {cli}/{hostlen} via {plan('10.1.0.1')}"]
    ipb["hpep"] += [f"route add default via {plan('10.2.0.1')}",
                    f"route add {srv}/{hostlen} via {plan('10.3.0.1')}"]
    for n in NS:
        sh("\n".join(other[n] + ["ip -batch - <<'EOF'", *ipb[n], "EOF"]), n)


def endpoint_tcp(profiles):
    """Stock TCP on the endpoints (cubic, IW10, the default tcp_rmem middle
    value), except: a buffer maximum above every profile's BDP, and no
    cached metrics, so that each fetch starts as a fresh host would."""
    need = max(4 * p["down_kbit"] * 1000 / 8 * p["rtt_ms"] / 1000 for p in profiles)
    names = ("tcp_rmem", "tcp_wmem")
    for n in ("client", "server"):
        now = sh("sysctl -n " + " ".join(f"net.ipv4.{x}" for x in names), n).stdout.splitlines()
        sets = []
        for name, line in zip(names, now):
            lo, mid, hi = line.split()
            sets.append(f"net.ipv4.{name}='{lo} {mid} {max(int(hi), int(need))}'")
        sh(f"sysctl -qw {' '.join(sets)} net.ipv4.tcp_no_metrics_save=1", n)


def hop_up(prof, extra=""):
    """netem on both ends of the hop: the profile's delay, rate and loss
    (and @extra netem options: duplicate, reorder)."""
    for direction, (n, dev) in HOP.items():
        rate = prof[f"{direction}_kbit"]
        cmd = (f"tc qdisc replace dev {dev} root netem delay {prof['rtt_ms'] / 2:g}ms "
               f"rate {rate:g}kbit limit {queue_limit(prof, rate)}")
        if prof["loss_pct"]:
            cmd += f" loss random {prof['loss_pct']:g}%"
        sh(f"{cmd} {extra}", n)


# ---- modes --------------------------------------------------------------------------

class Mode:
    """The SAs (and PEP keys) of one mode.  Fresh keys and SPIs each time a
    mode is set up: an LES blob serves one SA once (README).

    les-pep: both PEPs accelerate (docs/accel.md).  Each holds the pep-view
    keys of both directions, and a PEP-origin key for the ACKs it sends in
    the name of the endpoint across the hop: the hub ACKs downloads to the
    server (as the client), the remote PEP uploads to the client (as the
    server); each endpoint takes those ACKs on a pep-origin-in SA."""
    spi = 0x1000
    PEP_ID = {"hpep": 1, "rpep": 2}
    # Whose data each PEP ACKs early: the direction of the ACKs it sends.
    ORIGIN = {"hpep": ("up", "client", "server"), "rpep": ("down", "server", "client")}

    def __init__(self, name, prof, encap=False, transport=False, tunnels=1, window=4096,
                 pmtud=True):
        self.name = name
        # The replay window of every SA, the PEP keys' included (theirs
        # mirror the endpoints': docs/accel.md 1).
        self.window = window
        # NAT traversal: every SA in UDP on port 4500 (RFC 3948); the
        # endpoints must hold an encapsulation socket open (encap_hold()).
        self.encap = encap
        # Transport mode: the SAs between the endpoints' inner addresses,
        # which the routers carry as they are (no outer header).
        self.transport = transport
        # pmtud=False: the endpoints' SAs clear the outer DF bit (flag
        # nopmtudisc), so a hop with a smaller MTU fragments the ESP packets.
        self.pmtud = pmtud
        self.prof = prof
        # Tunnels between the same gateways, one per client address
        # (client_addr()), each with its own SAs, PEP keys and reqid.
        self.tunnels = tunnels
        self.sas = {}                  # direction ("down"/"up") -> spi, tunnel 0
        self.origin = {}               # les-pep: PEP -> its PEP-origin SA's spi, tunnel 0
        self.origins = {}              # les-pep: (PEP, tunnel) -> the same
        # LES modes: what an endpoint's operator holds, to read a capture
        # (wireshark-plugin/README.md): per SA its ends, SPI, blob and role.
        self.wire_keys = []
        # One script per namespace, its xfrm part one `ip -batch`: under
        # emulation every exec counts (a debug kernel's takes a second).
        ipb = {n: [] for n in NS}      # namespace -> `ip -batch` lines
        accel = {}                     # PEP -> its `pep set` once keyed
        pepsal_down()
        ike_down()
        if name not in ("clear", "pepsal", "les-ike"):
            for t in range(tunnels):
                self._keys(name, encap, transport, ipb, accel, t)
        # The host's opener queue bounds the namespaces' (see below).
        lesctl(f"pep set backlog {16384 if accel or name == 'les-ike' else 1024}")
        for n in NS:
            script = ["set -e", "ip xfrm state flush", "ip xfrm policy flush"]
            if n in Mode.PEP_ID:
                script.append(f"{LESCTL} pep set accel off hop-dev none backlog 1024")
            if ipb[n]:
                script.append("ip -batch - <<'EOF'\n" + "\n".join(ipb[n]) + "\nEOF")
            if n in accel:
                script.append(f"{LESCTL} {accel[n]}")
            sh("\n".join(script), n)
        if name == "pepsal":
            pepsal_up()
        if name == "les-ike":
            self._ike()

    def _ike(self):
        """les-pep's keys and PEP settings, from charon (docs/ike.md): the
        endpoints agree the PEPs in IKE_AUTH, each hands the PEP on its
        side of the hop its keys, each PEP sets its engine from its
        strongswan.conf.  One IPv4 tunnel-mode tunnel."""
        if self.encap or self.transport or self.tunnels != 1 or FAMILY != 4:
            raise ValueError("les-ike: one IPv4 tunnel in tunnel mode only")
        t0 = time.monotonic()
        ike_up(self.prof, self.window)
        c, s = _charons["client"], _charons["server"]
        # Set-up over the hop, plain ESP first (the server's proposals take
        # either), then LES: what the LES proposal costs.
        setup = {}
        for child in ("esp", "les"):
            mark = len(c.text())
            started = time.monotonic()
            p = c.swanctl("--initiate", "--child", child, "--timeout", "120", check=False,
                          timeout=150)
            up = time.monotonic()
            if child == "les":
                first = self._first_early_ack(up)
            log = c.text()[mark:]
            setup[child] = (up - started, len(re.findall(
                rf"sending packet: from \S+ to {re.escape(OUTER['server'])}\[",
                log[:log.find("established with SPIs")])))
            if child == "esp":
                c.swanctl("--terminate", "--ike", "esp", "--timeout", "30", check=False)
        keyed = p.returncode == 0 and ike.wait_for(
            lambda: all(len(pep_states(n)) == 3 for n in ("rpep", "hpep")) and
            all("took the keys of CHILD_SA" in x.text() for x in (c, s)), 60, 0.5)
        keyed_after = time.monotonic() - up
        first = first()
        if not keyed:
            raise RuntimeError("les-ike: the tunnel or the PEPs' keys did not come up: "
                               + (p.stdout + p.stderr)[-800:] + c.text()[-1500:] +
                               s.text()[-1500:])
        roles = {n: endpoint_states(n) for n in ("client", "server")}
        self.sas = {"down" if st["dst"] == OUTER["client"] else "up": st["spi"]
                    for st in roles["client"] if st["role"] == 1}
        self.origin = {pep: st["spi"] for n, pep in (("client", "rpep"), ("server", "hpep"))
                       for st in roles[n] if st["role"] == 3}
        self.origins = {(pep, 0): spi for pep, spi in self.origin.items()}
        # The LES proposal adds no exchange: IKE_SA_INIT and IKE_AUTH, as
        # for ESP (retransmits would show in the requests).
        print(f"[ike] {self.name}: four charons up in {started - t0:.1f} s; tunnel set-up "
              f"over the hop: ESP {setup['esp'][0]:.1f} s ({setup['esp'][1]} requests), LES "
              f"{setup['les'][0]:.1f} s ({setup['les'][1]} requests); both PEPs keyed "
              f"{keyed_after:.1f} s after the LES CHILD_SA was up, the hub's first early "
              "ACK of a fetch started then " +
              (f"{first:.1f} s after" if first is not None else "not seen"),
              flush=True)

    def _first_early_ack(self, since):
        """A fetch in the client namespace as the LES CHILD_SA comes up,
        256 kB at 64 kB/s from the server's nginx: its first early ACK comes
        once the hub holds its keys (the flow taken mid-transfer if need be,
        docs/accel.md 3).  Returns a call that waits for the fetch's end and
        gives the seconds from @since to the hub's first early ACK, or
        None."""
        path = f"{WORK}/www/ike-first.bin"
        if not os.path.isdir(os.path.dirname(path)):
            return lambda: None
        with open(path, "wb") as f:
            f.write(os.urandom(256 << 10))

        def early_acks():
            out = sh(f"{LESCTL} stats", "hpep", check=False).stdout
            m = re.search(r"(?m)^LesAccelEarlyAcks\s+(\d+)", out)
            return int(m.group(1)) if m else 0
        base = early_acks()
        got = {}
        curl = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "--limit-rate", "64k",
                                 "--max-time", "30",
                                 f"http://{host(INNER['server'])}/ike-first.bin"],
                                preexec_fn=netns_of("client"))

        def poll():
            while "t" not in got:
                done = curl.poll() is not None
                if early_acks() > base:
                    got["t"] = time.monotonic() - since
                elif done:
                    return
                time.sleep(0.1)
        th = threading.Thread(target=poll)
        th.start()

        def result():
            th.join(40)
            curl.wait()
            return got.get("t")
        return result

    def _keys(self, name, encap, transport, ipb, accel, t=0):
        """The SAs and PEP keys of tunnel @t of the mode, as commands per
        namespace."""
        blob = {}
        inner, reqid = tunnel_inner(t), t + 1
        for direction, src, dst in (("up", "client", "server"), ("down", "server", "client")):
            Mode.spi += 1
            if t == 0:
                self.sas[direction] = Mode.spi
            if name == "esp":
                key = "0x" + os.urandom(36).hex()
            else:
                # The client initiates: "up" is initiator to responder.
                key = lesctl(f"blob create endpoint dir {'i2r' if direction == 'up' else 'r2i'}")
            blob[direction] = key
            if name != "esp":
                self._wire_key(src, dst, Mode.spi, key, "endpoint", transport, inner)
            for n in ("client", "server"):
                ipb[n].append(sa_add(src, dst, Mode.spi, key, encap, transport, inner, reqid,
                                     self.window) + ("" if self.pmtud else " flag nopmtudisc"))
            if name in ("les-observer", "les-pep"):
                # What the endpoint operator hands the PEPs: K2 only.
                view = json.loads(lesctl(f"-j blob derive {key}"))[0]["blob"]
                for n in ("rpep", "hpep"):
                    ipb[n].append(sa_add(src, dst, Mode.spi, view, encap, transport, inner,
                                         reqid, self.window) + f" mark {PEP_MARK:#x}")
        if name == "les-pep":
            for pep, (direction, src, dst) in Mode.ORIGIN.items():
                blobs = {b["role"]: b["blob"] for b in json.loads(
                    lesctl(f"-j blob derive {blob[direction]} pep-id {Mode.PEP_ID[pep]}"))}
                Mode.spi += 1
                if t == 0:
                    self.origin[pep] = Mode.spi
                self.origins[pep, t] = Mode.spi
                ipb[pep].append(sa_add(src, dst, Mode.spi, blobs["pep-origin-out"], encap,
                                       transport, inner, reqid, self.window) +
                                f" mark {PEP_MARK:#x}")
                ipb[dst].append(sa_add(src, dst, Mode.spi, blobs["pep-origin-in"], encap,
                                       transport, inner, reqid, self.window))
                self._wire_key(src, dst, Mode.spi, blobs["pep-origin-in"], "pep-origin-in",
                               transport, inner)
            for pep, dev, rate in (("hpep", "h-r", prof_rate(self.prof, "down")),
                                   ("rpep", "r-h", prof_rate(self.prof, "up"))):
                # Every packet of a flow must reach the engine: a burst of
                # the sender's window must fit the opener's queue (which a
                # namespace may not make longer than the host's).
                accel[pep] = (f"pep set accel on hop-dev {dev} hop-rate {rate} "
                              f"peer-buffer {2 << 20} backlog 16384")
        for me, peer in (("client", "server"), ("server", "client")):
            for d, a, b in (("out", me, peer), ("in", peer, me)):
                tmpl = (f"proto esp reqid {reqid} mode transport" if transport else
                        f"src {OUTER[a]} dst {OUTER[b]} proto esp reqid {reqid} mode tunnel")
                ipb[me].append(f"xfrm policy add src {inner[a]} dst {inner[b]} dir {d} "
                               f"tmpl {tmpl}")

    def _wire_key(self, src, dst, spi, blob, role, transport, inner):
        ends = inner if transport else OUTER
        self.wire_keys.append({"src": ends[src], "dst": ends[dst], "spi": spi,
                               "blob": blob.removeprefix("0x"), "role": role})

    def counters(self):
        """What proves the mode carried a fetch: the endpoints' inbound SAs,
        les.ko's counters at the client and at both PEPs.  One script per
        namespace, its parts after "@@ NAME" lines."""
        nstat = ("nstat -az TcpExtPAWSEstab TcpExtTCPChallengeACK TcpExtTCPSpuriousRTOs "
                 "TcpRetransSegs TcpExtTCPTimeouts TcpExtTCPLossProbes TcpExtTCPFastRetrans "
                 "TcpExtTCPOFODrop TcpExtOfoPruned TcpExtTCPBacklogDrop")
        parts = {"client": [("nstat", nstat), ("xfrm_stat", "cat /proc/net/xfrm_stat"),
                            ("les", f"{LESCTL} stats")],
                 "server": [("nstat", nstat)],
                 "rpep": [("les", f"{LESCTL} stats")], "hpep": [("les", f"{LESCTL} stats")]}
        for n, direction in (("client", "down"), ("server", "up")):
            if direction in self.sas:
                parts[n].append(("sa", f"ip -s xfrm state list spi {self.sas[direction]:#x}"))
        if self.name == "pepsal":
            for n in ("rpep", "hpep"):
                parts[n].append(("pepsal", "nft list chain ip pepsal pre"))
        res = {}
        for n, cmds in parts.items():
            out = sh("set -e\n" + "\n".join(f"echo '@@ {k}'; {c}" for k, c in cmds), n).stdout
            got = dict(part.split("\n", 1) if "\n" in part else (part, "")
                       for part in out.split("@@ ")[1:])
            # What the endpoints' TCP would show if the PEPs' ACKs were
            # wrong, and what it dropped of what its xfrm took.
            for line in got.get("nstat", "").splitlines():
                f = line.split()
                if len(f) >= 2 and f[1].isdigit():
                    res[f"{n}_{f[0]}"] = int(f[1])
            # Copies the client had already: its xfrm drops them as replays.
            for line in got.get("xfrm_stat", "").splitlines():
                f = line.split()
                if len(f) == 2 and f[0] == "XfrmInStateSeqError":
                    res["client_XfrmInStateSeqError"] = int(f[1])
            if "sa" in got:
                m = re.search(r"lifetime current:\s+(\d+)\(bytes\)", got["sa"])
                key = "sa_bytes" if n == "client" else "sa_up_bytes"
                res[key] = int(m.group(1)) if m else 0
            if "pepsal" in got:
                m = re.search(r"tproxy.*counter packets (\d+)|counter packets (\d+).*tproxy",
                              got["pepsal"])
                res[f"{n}_tproxied"] = int(next(g for g in m.groups() if g)) if m else 0
            for line in got.get("les", "").splitlines():
                f = line.split()
                if len(f) == 2 and (f[0] in ("LesInPackets", "LesPepOpened") or
                                    f[0].startswith("LesAccel")):
                    res[f"{n}_{f[0]}"] = int(f[1])
        # What netem dropped on the hop, each way: the profile's loss (and
        # its queue's overflow).
        for direction, (n, dev) in HOP.items():
            qd = json.loads(sh(f"tc -s -j qdisc show dev {dev}", n).stdout or "[]")
            res[f"hop_{direction}_drops"] = sum(q.get("drops", 0) for q in qd)
        # Packets a CPU's backlog had no room for (veth delivers through
        # it): lost on a LAN, before any xfrm saw them.
        with open("/proc/net/softnet_stat") as st:
            res["vm_backlog_drops"] = sum(int(ln.split()[1], 16) for ln in st)
        return res

    def carried(self, before, after, w):
        """None if the fetch or upload @w went the way the mode says, else
        why not."""
        d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        nbytes, sa = workload_bytes(w), "sa_up_bytes" if w.get("upload") else "sa_bytes"
        opened = d.get("rpep_LesPepOpened", 0), d.get("hpep_LesPepOpened", 0)
        les_in = d.get("client_LesInPackets", 0)
        if self.name == "clear":
            return None if les_in == 0 else f"clear, but les.ko opened {les_in} packets"
        if self.name == "pepsal":
            taken = d.get("rpep_tproxied", 0), d.get("hpep_tproxied", 0)
            return None if min(taken) > 0 else f"PEPsal took {taken} packets (rpep, hpep)"
        if d.get(sa, 0) < nbytes:
            return f"the receiver's inbound SA carried {d.get(sa, 0)} bytes of {nbytes}"
        if self.name == "esp":
            return None if les_in == 0 else f"esp, but les.ko opened {les_in} packets"
        if les_in == 0:
            return "les.ko opened no packet at the client"
        if self.name == "les":
            return None if opened == (0, 0) else f"no PEP keys, but the PEPs opened {opened}"
        if min(opened) == 0:
            return f"the PEPs opened {opened} header zones"
        # The PEP before the hop from the sender ACKs its data.
        pep = "rpep" if w.get("upload") else "hpep"
        early = d.get(f"{pep}_LesAccelEarlyAcks", 0)
        # A PEP whose tick cannot keep time takes no data (docs/accel.md 5.3).
        if self.name in ("les-pep", "les-ike") and not early and not d.get(f"{pep}_LesAccelLate"):
            return f"{pep} sent no early ACK"
        if self.name not in ("les-pep", "les-ike") and early:
            return f"observing, but {pep} sent {early} early ACKs"
        return None


# ---- les-ike: les-pep keyed by charon (tools/ike.py) ---------------------------------

IKE_BASE = f"{WORK}/ike"
IKE_ID = {"client": "client.les", "server": "server.les",
          "rpep": "rpep.pep.les", "hpep": "hpep.pep.les"}
# Each endpoint keys the PEP on its side of the hop (a connection of that
# name), and trusts the operator's.
IKE_PEP = {"client": "rpep", "server": "hpep"}
IKE_PEER = {"client": "server", "server": "client"}
_charons = {}


def link_addr(n, peer):
    """@n's address on its link to @peer."""
    return next(plan(addr) for x, _, addr, y, _ in LINKS if (x, y) == (n, peer))


def ike_up(prof, window):
    """A charon in each namespace, configured; none initiates yet."""
    why = ike.missing()
    if why:
        raise RuntimeError(f"les-ike needs {why}")
    if not os.path.exists(f"{IKE_BASE}/pki/ca.pem"):
        ike.install_plugin()
        ike.make_pki(f"{IKE_BASE}/pki", {ns(n): (n, IKE_ID[n]) for n in NS})
    for n in NS:
        c = _charons[n] = ike.Charon(ns(n), f"{IKE_BASE}/{n}/run", f"{IKE_BASE}/charon-{n}.log")
        if n in IKE_PEP:
            peer, pep = IKE_PEER[n], IKE_PEP[n]
            def children(name, proposals):
                return f"""		children {{
			{name} {{
				mode = tunnel
				local_ts = {INNER[n]}/32
				remote_ts = {INNER[peer]}/32
				esp_proposals = {proposals}
				replay_window = {window}
			}}
		}}
"""
            # The client's second connection, plain ESP, times the set-up
            # without LES; the server takes either proposal.
            esp = ike.connection("esp", OUTER[n], OUTER[peer], n, IKE_ID[n], IKE_ID[peer],
                                 children("esp", "aes256gcm16")) if n == "client" else ""
            c.write(f"""			peps {{
				{pep} = {IKE_ID[pep]}
			}}
			trust {{
				operator = *.pep.les
			}}""", "connections {\n" +
                ike.connection("les", OUTER[n], OUTER[peer], n, IKE_ID[n], IKE_ID[peer],
                               children("les", "les256" if n == "client" else
                                        "les256,aes256gcm16")) + esp +
                ike.connection(pep, OUTER[n], link_addr(pep, n), n, IKE_ID[n],
                               IKE_ID[pep], "\t\tchildless = force\n") + "}\n", level=1)
        else:
            me = {"rpep": "client", "hpep": "server"}[n]
            direction, dev = {"rpep": ("up", "r-h"), "hpep": ("down", "h-r")}[n]
            c.write(f"""			pep {{
				engine {{
					accel = yes
					hop_dev = {dev}
					hop_rate = {prof_rate(prof, direction)}
					peer_buffer = {2 << 20}
					backlog = 16384
				}}
				endpoints {{
					{me} {{
						id = {IKE_ID[me]}
						addrs = {OUTER["client"]}, {OUTER["server"]}
					}}
				}}
			}}""", "connections {\n" +
                ike.connection("endpoints", link_addr(n, me), None, n, IKE_ID[n],
                               body="\t\tchildless = allow\n") + "}\n", level=1)
        if not c.start():
            raise RuntimeError(f"les-ike: charon in {n} did not start: {c.text()[-1500:]}")
        c.swanctl("--load-all")


def ike_charon(n):
    """Namespace @n's charon in mode les-ike."""
    return _charons[n]


def ike_down():
    """Charons stopped: their IKE_SAs deleted, with the states and keys."""
    for c in _charons.values():
        c.stop()
    _charons.clear()


def pep_states(n):
    """The PEP-marked states of namespace @n."""
    return re.findall(r"(?m)^\s*mark " + f"{PEP_MARK:#x}", sh("ip xfrm state", n).stdout)


def endpoint_states(n):
    """@n's states with an LES blob: src, dst, spi and the blob's role."""
    res = []
    for block in re.split(r"(?m)^(?=src )", sh("ip xfrm state", n).stdout):
        m = re.match(r"src (\S+) dst (\S+)\s+proto esp spi (0x[0-9a-f]+)", block)
        k = re.search(r"aead \S+ 0x4c45534b([0-9a-f]{4})", block)
        if m and k:
            res.append({"src": m.group(1), "dst": m.group(2), "spi": int(m.group(3), 16),
                        "role": int(k.group(1)[2:], 16)})
    return res


# ---- PEPsal: a split-TCP PEP on both PEPs, for comparison ---------------------------

_pepsal = []


def pepsal_up():
    """PEPsal on both PEPs, as its own iptables example sets it up (TPROXY
    to its port, marked packets routed to the host), untuned: the remote
    PEP takes the client's connections, the hub the remote PEP's, so that a
    download crosses three TCP connections, the middle one over the hop.
    `socket transparent` takes the packets of the proxies' own connections
    (sent from the addresses they stand in for) back to them."""
    if not PEPSAL:
        raise RuntimeError("mode pepsal needs a PEPsal binary: --pepsal PATH or LES_PEPSAL")
    if FAMILY != 4:
        raise RuntimeError("PEPsal takes IPv4 only")
    for n, lan in (("rpep", "r-c"), ("hpep", "h-r")):
        sh("ip rule add fwmark 1 lookup 100 && "
           "ip route replace local 0.0.0.0/0 dev lo table 100 && nft -f - <<'EOF'\n"
           "table ip pepsal {\n"
           "  chain pre { type filter hook prerouting priority mangle;\n"
           "    meta l4proto tcp socket transparent 1 meta mark set 1 accept\n"
           f"    iifname \"{lan}\" meta l4proto tcp counter tproxy to :{PEPSAL_PORT} "
           "meta mark set 1 accept\n"
           "  }\n"
           "}\n"
           "EOF", n)
        _pepsal.append(subprocess.Popen(
            [PEPSAL, "-p", str(PEPSAL_PORT), "-l", f"{WORK}/pepsal-{n}.log"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=netns_of(n)))
    for n in ("rpep", "hpep"):
        for _ in range(100):
            if f":{PEPSAL_PORT}" in sh(f"ss -ltnH sport = :{PEPSAL_PORT}", n).stdout:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"PEPsal does not listen in {n}")


def pepsal_down():
    for p in _pepsal:
        p.kill()
        p.wait()
    if _pepsal:
        for n in ("rpep", "hpep"):
            sh("nft delete table ip pepsal; ip rule del fwmark 1 lookup 100", n, check=False)
    _pepsal.clear()


def prof_rate(prof, direction):
    """The hop's rate in kbit/s, as `pep set hop-rate` takes it."""
    return int(prof[f"{direction}_kbit"])


def lesctl(args, where=None):
    return sh(f"{LESCTL} {args}", where).stdout.strip()


def sa_add(src, dst, spi, key, encap=False, transport=False, inner=None, reqid=1,
           window=4096):
    inner = inner or INNER
    ends = inner if transport else OUTER
    return (f"xfrm state add src {ends[src]} dst {ends[dst]} proto esp spi {spi:#x} "
            f"reqid {reqid} mode {'transport' if transport else 'tunnel'} aead {AEAD} {key} 128 "
            f"replay-window {window} sel src {inner[src]} dst {inner[dst]}" +
            (" encap espinudp 4500 4500 0.0.0.0" if encap else ""))


# An IKE daemon's socket on port 4500, which decapsulates ESP in UDP.
ENCAP_HOLD = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_UDP, 100, 2)   # UDP_ENCAP, UDP_ENCAP_ESPINUDP
s.bind((sys.argv[1], 4500))
print("ready", flush=True)
time.sleep(3600)
"""


def encap_hold():
    """Port 4500 held open at both endpoints; returns the holders to kill."""
    holds = []
    for n in ("client", "server"):
        p = subprocess.Popen([sys.executable, "-c", ENCAP_HOLD, "::" if FAMILY == 6 else "0.0.0.0"],
                             stdout=subprocess.PIPE, text=True, preexec_fn=netns_of(n))
        p.stdout.readline()
        holds.append(p)
    return holds


def flush_sas():
    for n in NS:
        if os.path.exists(f"/run/netns/{ns(n)}"):
            sh("ip -force -batch - <<'EOF'\nxfrm state flush\nxfrm policy flush\nEOF", n,
               check=False)


# ---- the server and the fetches ------------------------------------------------------

def server_up(workloads):
    """nginx in the server namespace, the files it serves and those the
    client uploads (to www/up/, from send/); returns {url path: sha256}."""
    www = f"{WORK}/www"
    for d in (www, f"{www}/up", f"{WORK}/send", f"{WORK}/body"):
        os.makedirs(d, exist_ok=True)
    os.chmod(WORK, 0o755)
    # nginx's workers, which write what is PUT, run as nobody.
    for d in (f"{www}/up", f"{WORK}/body"):
        os.chmod(d, 0o777)
    sums = {}

    def put(path, data):
        with open(f"{www}/{path}", "wb") as f:
            f.write(data)
        sums[path] = hashlib.sha256(data).hexdigest()

    for name, w in workloads.items():
        if w.get("upload"):
            data = os.urandom(w["bytes"])
            with open(f"{WORK}/send/{name}.bin", "wb") as f:
                f.write(data)
            sums[f"up/{name}.bin"] = hashlib.sha256(data).hexdigest()
        elif "bytes" in w:
            put(f"{name}.bin", os.urandom(w["bytes"]))
        else:
            objs = [f"{name}-{i}.bin" for i in range(w["objects"])]
            links = "".join(f'<img src="{o}">\n' for o in objs)
            html = f"<!doctype html><title>{name}</title>\n{links}".encode()
            put(f"{name}.html", html + b"<!--" + b"x" * max(0, w["html_bytes"] - len(html) - 7) + b"-->")
            for o in objs:
                put(o, os.urandom(w["object_bytes"]))
    conf = f"""
worker_processes 1;
pid {WORK}/nginx.pid;
error_log {WORK}/nginx-error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    sendfile on;
    keepalive_requests 1000;
    # A reader the tests pause keeps the server's window shut for longer
    # than nginx's default 60 s between writes on a slow (debug) kernel.
    send_timeout 600s;
    types {{ text/html html; application/octet-stream bin; }}
    server {{
        listen 80; listen [::]:80; root {www};
        location /up/ {{
            dav_methods PUT;
            client_max_body_size 0;
            client_body_temp_path {WORK}/body;
        }}
    }}
}}
"""
    with open(f"{WORK}/nginx.conf", "w") as f:
        f.write(conf)
    sh(f"nginx -c {WORK}/nginx.conf", "server")
    return sums


# Only what fetch() reads: %{json} also writes curl_version(), whose
# first call initialises libldap and its SASL plugins, 0.3 s under
# emulation in the middle of a page (docs/testbed.md).
CURL_W = ('{"time_connect":%{time_connect},"time_starttransfer":%{time_starttransfer},'
          '"time_total":%{time_total},"exitcode":%{exitcode},"http_code":"%{http_code}"}\\n')


class Curl:
    """curl in the client namespace (from @src, an address of the client's),
    started before it is given its URLs (`go`): a browser is running before
    the user asks for a page, and under emulation curl's own start, which
    no network path changes, takes about 0.3 s (docs/testbed.md)."""

    def __init__(self, out_dir, max_time, parallel=0, src=None):
        # Its -w report line by line (stdbuf): into a pipe, stdio would
        # keep every report until curl exits.
        args = ["stdbuf", "-oL", "curl", "-sS", "--max-time", str(max_time), "-w", CURL_W,
                "-K", "-"]
        if src:
            args += ["--interface", src]
        if parallel:
            # As a browser does: all the connections at once.  Without
            # --parallel-immediate curl first waits for one connection's
            # response, to see whether it can multiplex (HTTP/1.1 cannot).
            args += ["--parallel", "--parallel-immediate", "--parallel-max", str(parallel)]
        self.out_dir, self.max_time = out_dir, max_time
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, bufsize=0,
                                  preexec_fn=netns_of("client"))
        self.buf = b""
        # Ready when it reads its config (-K -): read(2) on fd 0.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.p.poll() is None:
            try:
                with open(f"/proc/{self.p.pid}/syscall") as f:
                    if f.read().startswith("0 0x0 "):
                        break
            except OSError:
                break
            time.sleep(0.01)

    def go(self, urls, upload=None):
        """Fetches @urls, or PUTs the file @upload to the one URL.  No
        "Expect: 100-continue": curl would wait a round trip for it."""
        conf = "".join(f'url = "{u}"\noutput = "{self.out_dir}/{os.path.basename(u)}"\n'
                       for u in urls)
        if upload:
            conf += f'upload-file = "{upload}"\nheader = "Expect:"\n'
        try:
            self.p.stdin.write(conf.encode())
            self.p.stdin.close()
        except BrokenPipeError:
            pass                # it is gone: wait() says why

    def done(self, n, deadline):
        """The reports of @n transfers, as each ends; returns (their dicts,
        when the last came).  Fewer if curl ends first or @deadline passes."""
        info, last = [], None
        fd = self.p.stdout.fileno()
        while len(info) < n:
            if b"\n" in self.buf:
                ln, self.buf = self.buf.split(b"\n", 1)
                try:
                    info.append(json.loads(ln))
                except ValueError:
                    pass
                continue
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                break
            data = os.read(fd, 65536)
            if not data:
                break
            last = time.monotonic()
            self.buf += data
        return info, last

    def wait(self):
        """curl's exit code, 28 (timed out) if it outlives its --max-time."""
        try:
            return self.p.wait(timeout=self.max_time + 60)
        except subprocess.TimeoutExpired:
            self.kill()
            return 28

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def curl(urls, out_dir, max_time, parallel=0, src=None, upload=None):
    """Fetches @urls (or PUTs @upload to the one) with curl in the client
    namespace; returns (exit code, [report dicts])."""
    c = Curl(out_dir, max_time, parallel, src)
    try:
        c.go(urls, upload)
        info, _ = c.done(len(urls), time.monotonic() + max_time + 60)
        return c.wait(), info
    finally:
        c.kill()


def fetch(name, w, sums, max_time, src=None):
    """One fetch or upload on fresh connections (from the client's address
    @src, or its first): {status, connect, first_byte, total}."""
    dl = f"{WORK}/dl"
    sh(f"rm -rf {dl} && mkdir -p {dl}")
    for n in ("client", "server"):
        sh("ip tcp_metrics flush all", n, check=False)
    base = f"http://{host(INNER['server'])}/"
    saved, upload = dl, None    # where the files checked land; what is PUT
    if "bytes" in w:
        if w.get("upload"):
            paths, saved = [f"up/{name}.bin"], f"{WORK}/www"
            upload = f"{WORK}/send/{name}.bin"
            if os.path.exists(f"{saved}/{paths[0]}"):
                os.unlink(f"{saved}/{paths[0]}")
        else:
            paths = [f"{name}.bin"]
        rc, info = curl([base + paths[0]], dl, max_time, src=src, upload=upload)
        first = info[0] if info else {}
        total = first.get("time_total")
    else:
        # What a user waits for: from the page's request to its last
        # object, both curls already running, the objects asked for as
        # soon as the HTML is in.
        paths = [f"{name}.html"]
        objs = [f"{name}-{i}.bin" for i in range(w["objects"])]
        total = None
        html = Curl(dl, max_time, src=src)
        parts = Curl(dl, max_time, parallel=w["parallel"], src=src)
        try:
            t0 = time.monotonic()
            deadline = t0 + max_time
            html.go([base + paths[0]])
            info, _ = html.done(1, deadline)
            first = info[0] if info else {}
            rc = first.get("exitcode")
            if rc == 0:
                paths += objs
                parts.go([base + o for o in objs])
                got, end = parts.done(len(objs), deadline)
                if len(got) == len(objs):
                    total = end - t0
                    rc = next((g["exitcode"] for g in got if g.get("exitcode")), 0)
                elif parts.p.poll() is None and time.monotonic() >= deadline:
                    rc = 28
                else:
                    rc = parts.wait() or 1
            else:
                parts.go([])
                if rc is None:
                    rc = 28 if html.p.poll() is None and time.monotonic() >= deadline \
                        else html.wait() or 1
            if rc == 0:
                rc = html.wait() or parts.wait()
        finally:
            html.kill()
            parts.kill()
    res = {"connect": first.get("time_connect"), "first_byte": first.get("time_starttransfer"),
           "total": round(total, 3) if total is not None else None}
    if rc == 28:
        res.update(status="timeout", total=max_time)
    elif rc != 0:
        res["status"] = f"curl exit {rc}"
    elif w.get("upload") and first.get("http_code") not in ("201", "204"):
        res["status"] = f"HTTP {first.get('http_code')}"
    else:
        bad = [p for p in paths if not os.path.exists(f"{saved}/{p}")
               or hashlib.sha256(open(f"{saved}/{p}", "rb").read()).hexdigest() != sums[p]]
        res["status"] = f"hash mismatch: {bad[0]}" if bad else "ok"
    return res


# ---- run --------------------------------------------------------------------------------

def busy_cpu_s():
    """CPU-seconds the VM's CPUs have spent busy (user, nice, system, irq,
    softirq) since boot: every namespace's share, the endpoints' and the
    PEPs' alike."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def load_les(ko):
    sh("modprobe -a esp4 esp6 xfrm_user nf_defrag_ipv4 nf_defrag_ipv6 sch_netem")
    if not os.path.exists("/sys/module/les"):
        sh(f"insmod {ko}")


def cmd_run(a):
    conf = load_conf()
    s = conf["sets"][a.set]
    names = a.profiles or ("" if a.profile else ",".join(s["profiles"]))
    profiles = {n: conf["profiles"][n] for n in names.split(",") if n}
    for text in a.profile:
        n, p = parse_profile(text)
        profiles[n] = p
    workloads = {n: conf["workloads"][n] for n in (a.workloads or ",".join(s["workloads"])).split(",")}
    global PEPSAL
    PEPSAL = a.pepsal or PEPSAL
    modes = (a.modes or ",".join(s.get("modes", [
        m for m in conf["modes"]["order"] if m != "pepsal" or PEPSAL]))).split(",")
    if "les-ike" in modes and ike.missing():
        # In a set's modes unless asked for by name: left out, said why.
        if a.modes:
            raise SystemExit(f"testbed: les-ike needs {ike.missing()}")
        print(f"testbed: mode les-ike left out: it needs {ike.missing()}")
        modes.remove("les-ike")
    reps = a.reps or s["reps"]
    max_time = a.max_time or s["max_time_s"]
    os.makedirs(a.out, exist_ok=True)
    results = f"{a.out}/results.jsonl"
    load_les(a.ko)
    sh(f"rm -rf {WORK} && mkdir -p {WORK}")
    # A loaded host: busy loops beside the namespaces, for the whole run.
    global HOG
    HOG = a.hog if a.hog >= 0 else s.get("hog", 0)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(HOG)]
    if hogs:
        print(f"testbed: {HOG} busy loops run beside the namespaces (--hog)", flush=True)
    try:
        done, failed, skipped = fetch_all(profiles, modes, workloads, reps, max_time, results,
                                          a.budget)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        ike_down()
        flush_sas()
        topology_down()
    print(f"testbed: {done} fetches, {failed} failed; results in {results}")
    if skipped:
        cells = sorted({(p, m) for p, m, _, _ in skipped})
        print(f"testbed: {len(skipped)} fetches not started, {a.budget} s budget spent: "
              + ", ".join(f"{p} {m}" for p, m in cells))
        print("  run them with `make demo FULL=1`, or a subset: tools/testbed.py run "
              f"--profiles {','.join(dict.fromkeys(p for p, _ in cells))} "
              f"--modes {','.join(dict.fromkeys(m for _, m in cells))}")
    return 1 if failed else 0


def instrument(prof, pname, mname):
    """The instrument check (tools/timing.py) before a mode's fetches."""
    hop = plan("10.2.0.2")
    rtt = timing.ping_rtt(sh(f"ping -c 5 -i 0.2 -W 3 {hop}", "rpep", check=False).stdout)
    reading = timing.judge(prof, rtt, timing.timer_lateness())
    print(f"[timing] {pname} before {mname}: hop round trip {rtt} ms (profile "
          f"{prof['rtt_ms']:g}), 1 ms sleeps late by {reading['timer_late_ms'][0]} ms "
          f"(90 %: {reading['timer_late_ms'][1]}): "
          + ("held" if reading["ok"] else "NOT HELD, " + "; ".join(reading["why"])), flush=True)
    return reading


def fetch_all(profiles, modes, workloads, reps, max_time, results, budget=None):
    """Every (profile, mode, workload, rep); with @budget seconds, none is
    started that the longest fetch of its workload so far (max_time before
    the first) would take past it.  Returns (done, failed, skipped)."""
    kernel = os.uname().release
    topology_up()
    endpoint_tcp(profiles.values())
    sums = server_up(workloads)
    start = time.monotonic()
    failed = 0
    total = len(profiles) * len(modes) * len(workloads) * reps
    done = 0
    skipped, longest = [], {}

    def fits(wname):
        if not budget:
            return True
        need = min(max_time, 1.5 * longest[wname]) if wname in longest else max_time
        return time.monotonic() - start + need <= budget

    with open(results, "w") as out:
        for pname, prof in profiles.items():
            hop_up(prof)
            params = dict(prof, queue_down_pkts=queue_limit(prof, prof["down_kbit"]),
                          queue_up_pkts=queue_limit(prof, prof["up_kbit"]))
            clear_why = None
            for mname in modes:
                if not any(fits(wname) for wname in workloads):
                    skipped += [(pname, mname, wname, r) for wname in workloads
                                for r in range(1, reps + 1)]
                    continue
                reading = instrument(prof, pname, mname)
                if clear_why:
                    reading = dict(reading, ok=False, why=reading.get("why", []) + [clear_why])
                mode = Mode(mname, prof)
                for wname, w in workloads.items():
                    for rep in range(1, reps + 1):
                        if not fits(wname):
                            skipped.append((pname, mname, wname, rep))
                            continue
                        done += 1
                        el = int(time.monotonic() - start)
                        print(f"[{el // 60:2d}:{el % 60:02d}] {done}/{total} {pname} {mname:12s} "
                              f"{wname:4s} rep {rep}/{reps} ...", end="", flush=True)
                        before = mode.counters()
                        cpu = busy_cpu_s()
                        res = fetch(wname, w, sums, max_time)
                        res["cpu_s"] = round(busy_cpu_s() - cpu, 2)
                        after = mode.counters()
                        why = mode.carried(before, after, w)
                        res["counters"] = {k: after[k] - before.get(k, 0) for k in after}
                        if why and res["status"] == "ok":
                            res["status"] = f"not carried by {mname}: {why}"
                        failed += res["status"] not in ("ok", "timeout")
                        if res.get("total") is not None:
                            longest[wname] = max(longest.get(wname, 0), res["total"])
                        b = bound(prof, w)
                        if (mname == "clear" and res["status"] == "ok" and "bytes" in w and
                                not clear_why):
                            clear_why = timing.judge_clear(prof, res["total"], b)
                            if clear_why:
                                reading = dict(reading, ok=False,
                                               why=reading.get("why", []) + [clear_why])
                        line = dict(profile=pname, mode=mname, workload=wname, rep=rep, **res,
                                    bytes=workload_bytes(w), bound=round(b, 3),
                                    params=params, kernel=kernel, timing=reading, hog=HOG)
                        out.write(json.dumps(line) + "\n")
                        out.flush()
                        print(f" {res['total']} s {res['status']}", flush=True)
    return done, failed, skipped


# ---- report ---------------------------------------------------------------------------------

def held(r):
    """Did the host keep the link's timing for this fetch (tools/timing.py)?
    Results from before the check count as held."""
    return r.get("timing", {}).get("ok", True)


def cell(rows):
    """Median seconds of a (profile, mode, workload), "> N" if a fetch timed
    out, FAIL if one failed; "*" after it if the host did not keep the link's
    timing for one of them."""
    star = "" if all(held(r) for r in rows) else "*"
    if any(r["status"] not in ("ok", "timeout") for r in rows):
        return "FAIL" + star, None
    if any(r["status"] == "timeout" for r in rows):
        return f"> {max(r['total'] for r in rows):.0f}" + star, None
    v = statistics.median(r["total"] for r in rows)
    return f"{v:.2f}" + star, v


def tables(results):
    """{profile: (params, kernel, [workloads], [(mode, [cells])], [bounds])}."""
    conf = load_conf()
    order = conf["modes"]["order"]
    wl_order = list(conf["workloads"])
    out = {}
    for pname in dict.fromkeys(r["profile"] for r in results):
        rs = [r for r in results if r["profile"] == pname]
        wls = sorted(dict.fromkeys(r["workload"] for r in rs),
                     key=lambda w: wl_order.index(w) if w in wl_order else 99)
        modes = sorted(dict.fromkeys(r["mode"] for r in rs),
                       key=lambda m: order.index(m) if m in order else 99)
        rows = [(m, [cell([r for r in rs if r["mode"] == m and r["workload"] == w]) if any(
            r["mode"] == m and r["workload"] == w for r in rs) else ("-", None) for w in wls])
            for m in modes]
        bounds = [next(r["bound"] for r in rs if r["workload"] == w) for w in wls]
        kernel = rs[0]["kernel"] + (f", {rs[0]['hog']} busy loops beside" if rs[0].get("hog") else "")
        out[pname] = (rs[0]["params"], kernel, wls, rows, bounds)
    return out


def print_tables(results):
    for pname, (p, kernel, wls, rows, bounds) in tables(results).items():
        loss = f", loss {p['loss_pct']:g} %" if p["loss_pct"] else ""
        print(f"\n{pname}: RTT {p['rtt_ms']:g} ms, {p['down_kbit'] / 1000:g} Mbit/s down, "
              f"{p['up_kbit'] / 1000:g} Mbit/s up{loss} ({kernel}); seconds")
        print(f"  {'mode':14s}" + "".join(f"{w:>10s}" for w in wls))
        for m, cells in rows:
            print(f"  {m:14s}" + "".join(f"{c[0]:>10s}" for c in cells))
        print(f"  {'bound':14s}" + "".join(f"{b:10.2f}" for b in bounds))
        late = [r for r in results if r["profile"] == pname and
                any(r.get("counters", {}).get(f"{n}_LesAccelLate") for n in ("hpep", "rpep"))]
        if late:
            print(f"  in {len(late)} fetches a PEP's engine could not keep time and forwarded "
                  "for a while (docs/accel.md 5.3)")
        why = sorted({w for r in results if r["profile"] == pname and not held(r)
                      for w in r["timing"].get("why", [])})
        if why:
            print("  * this host did not keep the link's timing (" + "; ".join(why) + "):")
            print("    these times are not comparable with docs/benchmarks.md "
                  "(docs/testbed.md, Timing)")


def chart(results, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tabs = tables(results)
    fig, axes = plt.subplots(1, len(tabs), figsize=(6.5 * len(tabs), 4.8), squeeze=False)
    for ax, (pname, (p, kernel, wls, rows, bounds)) in zip(axes[0], tabs.items()):
        width = 0.8 / max(1, len(rows))
        for i, (m, cells) in enumerate(rows):
            xs = [j + (i - (len(rows) - 1) / 2) * width for j in range(len(wls))]
            # A fetch that timed out stands at its cap, hatched: "> cap".
            ys = [c[1] if c[1] is not None else
                  float(c[0][2:].rstrip("*")) if c[0].startswith(">") else 0 for c in cells]
            bars = ax.bar(xs, ys, width, label=m, color=f"C{i}")
            for b, c in zip(bars, cells):
                if c[1] is None:
                    b.set_hatch("//")
                    b.set_alpha(0.5)
            ax.bar_label(bars, labels=[c[0] for c in cells], fontsize=6, rotation=90, padding=2)
        for j, b in enumerate(bounds):
            ax.hlines(b, j - 0.45, j + 0.45, colors="black", linestyles="dashed",
                      label="bound (2 RTT + bytes at link rate)" if j == 0 else None)
        ax.set_xticks(range(len(wls)), wls)
        ax.set_ylabel("transfer time, s")
        loss = f", {p['loss_pct']:g} % loss" if p["loss_pct"] else ""
        ax.set_title(f"{pname}: {p['rtt_ms']:g} ms, {p['down_kbit'] / 1000:g}/"
                     f"{p['up_kbit'] / 1000:g} Mbit/s{loss}", fontsize=10)
        ax.margins(y=0.15)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"Transfer times through the satellite testbed ({results[0]['kernel']})", fontsize=11)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def cmd_report(a):
    with open(a.results) as f:
        results = [json.loads(ln) for ln in f if ln.strip()]
    if not results:
        print("testbed: no results", file=sys.stderr)
        return 1
    print_tables(results)
    if a.png:
        chart(results, a.png)
        print(f"\nchart: {a.png}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run fetches (root, inside the VM)")
    r.add_argument("--ko", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--set", default="demo", choices=list(load_conf()["sets"]))
    r.add_argument("--profiles", default="")
    r.add_argument("--profile", action="append", default=[], metavar="NAME:rtt=..,down=..,up=..,loss=..")
    r.add_argument("--modes", default="")
    r.add_argument("--workloads", default="")
    r.add_argument("--reps", type=int, default=0)
    r.add_argument("--max-time", type=int, default=0)
    r.add_argument("--budget", type=int, default=0, metavar="S",
                   help="start no fetch that would end past S seconds; say what was left")
    r.add_argument("--pepsal", default="", metavar="PATH", help="a PEPsal binary: mode pepsal")
    r.add_argument("--hog", type=int, default=-1, metavar="N",
                   help="N busy loops beside the namespaces: a loaded host (default: the set's)")
    p = sub.add_parser("report", help="tables and chart from results.jsonl")
    p.add_argument("results")
    p.add_argument("--png", default="")
    a = ap.parse_args()
    return cmd_run(a) if a.cmd == "run" else cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
