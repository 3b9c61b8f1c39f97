# SPDX-License-Identifier: GPL-2.0
"""The acceleration engine under what an operator and the network do to it
(docs/accel.md), over the testbed's geo hop (tools/testbed.py: client -
rpep - hop - hpep - server, both PEPs accelerating).  Every download is
checked by hash: whatever happens to the engine, no byte is lost.

* switched off in the middle of a transfer: what it holds is still
  delivered, and the flow finishes end to end;
* the namespace's buffer too small for the sender's window: what does not
  fit goes on unheld (fail-open), and arrives;
* the hub's PEP-origin key deleted mid-transfer (a key that expires): no
  new early ACKs, the flow finishes end to end;
* 50 connections at once, each through the engine."""
import hashlib
import os
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))
import testbed as tb  # noqa: E402
from lesvm import wait_for  # noqa: E402

PEPS = ("hpep", "rpep")


def stats(n):
    return {ln.split()[0]: int(ln.split()[1])
            for ln in tb.sh(f"{tb.LESCTL} stats", n).stdout.splitlines() if len(ln.split()) == 2}


def delta(before, after):
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def held(n):
    show = tb.sh(f"{tb.LESCTL} pep show", n).stdout.split()
    return int(show[show.index("held") + 1])


def fetch_during(w, sums, action, after_s, max_time=90):
    """Fetch workload w; after_s seconds in, run action(). Returns the
    fetch's result and what action returned."""
    out = {}
    th = threading.Thread(target=lambda: out.update(res=tb.fetch(w, tb_conf(w), sums, max_time)))
    th.start()
    time.sleep(after_s)
    acted = action()
    th.join(max_time + 60)
    return out.get("res", {"status": "no result"}), acted


_CONF = {}


def tb_conf(w):
    return _CONF["workloads"][w]


def accel_off(T, prof, sums):
    tb.Mode("les-pep", prof)
    before = stats("hpep")

    def off():
        h = held("hpep")
        for n in PEPS:
            tb.sh(f"{tb.LESCTL} pep set accel off", n)
        return h
    res, held_then = fetch_during("10M", sums, off, 4)
    d = delta(before, stats("hpep"))
    T.ok(res["status"] == "ok" and held_then > 0 and d.get("LesAccelEarlyAcks", 0) > 0,
         "accel switched off mid-transfer: the 10 MB arrive intact (the hub held "
         "data when it was switched off)", {"fetch": res, "held": held_then, "hub": d})
    T.ok(wait_for(lambda: held("hpep") == 0, 10),
         "accel switched off: nothing stays held afterwards",
         tb.sh(f"{tb.LESCTL} pep show", "hpep").stdout)


def small_buffer(T, prof, sums):
    tb.Mode("les-pep", prof)
    tb.sh(f"{tb.LESCTL} pep set buffer 65536", "hpep")
    before = stats("hpep")
    res = tb.fetch("1M", tb_conf("1M"), sums, 60)
    d = delta(before, stats("hpep"))
    T.ok(res["status"] == "ok" and d.get("LesAccelFailOpen", 0) > 0,
         "a 64 kB namespace buffer: what does not fit goes on unheld, the 1 MB arrive intact",
         {"fetch": res, "hub": d})
    tb.sh(f"{tb.LESCTL} pep set buffer {64 << 20}", "hpep")


def origin_key_gone(T, prof, sums):
    mode = tb.Mode("les-pep", prof)
    before = stats("hpep")

    def delete():
        # The hub's pep-origin-out state, as when its lifetime ends.
        return tb.sh("ip xfrm state delete src {} dst {} proto esp spi {:#x} mark {:#x}".format(
            tb.OUTER["client"], tb.OUTER["server"], mode.origin["hpep"], tb.PEP_MARK),
            "hpep", check=False).returncode
    res, rc = fetch_during("10M", sums, delete, 4)
    d = delta(before, stats("hpep"))
    T.ok(res["status"] == "ok" and rc == 0 and 0 < d.get("LesAccelEarlyAckedBytes", 0) < 10 ** 7,
         "the hub's PEP-origin key deleted mid-transfer: early ACKs stop, the 10 MB arrive "
         "intact", {"fetch": res, "rc": rc, "hub": d})


def client_opens():
    out = tb.sh("nstat -az TcpActiveOpens", "client").stdout.split()
    return {"TcpActiveOpens": int(out[out.index("TcpActiveOpens") + 1])}


def many_flows(T, prof, sums, n=50):
    tb.Mode("les-pep", prof)
    before = stats("hpep")
    opens = client_opens()
    dl = f"{tb.WORK}/many"
    tb.sh(f"rm -rf {dl} && mkdir -p {dl}")
    base = f"http://{tb.INNER['server']}/100k.bin"
    args = ["curl", "-sS", "--max-time", "120", "--parallel", "--parallel-max", str(n)]
    for i in range(n):
        args += ["-o", f"{dl}/{i}.bin", base]
    p = subprocess.run(args, capture_output=True, text=True, timeout=180,
                       preexec_fn=tb.netns_of("client"))
    bad = [i for i in range(n) if not os.path.exists(f"{dl}/{i}.bin") or
           hashlib.sha256(open(f"{dl}/{i}.bin", "rb").read()).hexdigest() != sums["100k.bin"]]
    d = delta(before, stats("hpep"))
    conns = delta(opens, client_opens()).get("TcpActiveOpens", 0)
    T.ok(p.returncode == 0 and not bad and conns and d.get("LesAccelFlows", 0) == conns,
         f"{n} downloads at once through the engine: each arrives intact, each connection "
         "accelerated", {"rc": p.returncode, "stderr": p.stderr[-500:], "bad": bad,
                         "connections": conns, "hub": d})


def run(T, out, ko):
    _CONF.update(tb.load_conf())
    prof = _CONF["profiles"]["geo"]
    tb.load_les(ko)
    tb.sh(f"rm -rf {tb.WORK} && mkdir -p {tb.WORK}")
    try:
        tb.topology_up()
        tb.endpoint_tcp([prof])
        sums = tb.server_up({w: _CONF["workloads"][w] for w in ("100k", "1M", "10M")})
        tb.hop_up(prof)
        for name, fn in (("accel off", accel_off), ("small buffer", small_buffer),
                         ("key gone", origin_key_gone), ("many flows", many_flows)):
            T.prefix = f"accel {name}: "
            try:
                fn(T, prof, sums)
            except Exception as e:  # noqa: BLE001
                T.ok(False, "set-up", e)
            T.prefix = ""
    finally:
        tb.flush_sas()
        for n in PEPS:
            tb.sh(f"{tb.LESCTL} pep set accel off hop-dev none backlog 1024", n, check=False)
        tb.sh(f"{tb.LESCTL} pep set backlog 1024", check=False)
        tb.topology_down()
