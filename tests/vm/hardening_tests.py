# SPDX-License-Identifier: GPL-2.0
"""What a hostile or unlucky world does to les.ko, and what it must survive.

A PEP key that dies with header zones of it still queued; outer fragments (reassembled);
a user namespace's root asking for more kernel memory than the host allows;
requests lesctl never sends; a flow dump racing the table; a module load
that fails at every allocation in turn (debug kernel: fault injection).
The VM runner fails the run on any KASAN, lockdep, kmemleak, WARN or BUG
line, so "nothing crashed" is checked by every test here.
"""
import ctypes
import errno
import json
import os
import threading
import time
import types

import genl
from lesvm import (LESCTL, OUTER, Bg, Config, P, Sa, Z, agent, counters, delta, sh,
                   tunnel_up, wait_for, xfrm_flush)
from pep_tests import (PEP_MARK, flood_setup, handshake_pkts, lesctl, lesctl_j,
                       pep_keys_flush, pep_keys_up, pep_view, run_parts, send_from)


def transfer(cfg, port, nbytes):
    srv = Bg("b", "tcp-serve", cfg.inner("b"), port, 120)
    sent = agent("a", "tcp-send", cfg.inner("a"), cfg.inner("b"), port, nbytes, "les",
                 timeout=240)
    return sent, srv.result(timeout=240)


# ---- a PEP key that dies while header zones of it wait --------------------------

def key_hard_limit(T, t, rounds=3):
    """A pep-view key with `limit packet-hard 50` under a 1 MB transfer
    (about 700 packets: the key dies with header zones still queued): the
    opener must not charge the dead key again (on v1 this re-armed the
    state's timer and deleted it twice: list_del corruption, a panic in
    about one run of four).  Like xfrm_input, the key opens exactly 50."""
    cfg = Config("tunnel", 4, 4)
    for r in range(rounds):
        ab, ba = tunnel_up(cfg, 0x6500 + 0x10 * r)
        pep_keys_flush()
        sh(pep_view(ab).add_cmd(f"mark {PEP_MARK:#x} limit packet-hard 50"), ns="m")
        before = counters("m")
        sent, got = transfer(cfg, 7500 + r, 1 << 20)
        d = delta(before, counters("m"))
        left = [k for k in lesctl_j("pep show")["keys"] if k["spi"] == ab.spi]
        T.ok(sent == got and d.get("LesPepOpened") == 50 and d.get("LesPepKeyExpired", 0) > 0
             and not left,
             f"round {r + 1}: a key with packet-hard 50 opens exactly 50 header zones, "
             "then expires; the transfer is intact", {"delta": d, "left": left,
                                                      "sent": sent, "got": got})
    # Deleted while its header zones are queued.
    ab, ba = tunnel_up(cfg, 0x6580)
    pep_keys_flush()
    pep_keys_up(ab, ba)
    srv = Bg("b", "tcp-serve", cfg.inner("b"), 7510, 120)
    res = {}
    client = threading.Thread(target=lambda: res.update(sent=agent(
        "a", "tcp-send", cfg.inner("a"), cfg.inner("b"), 7510, 4 << 20, "les", timeout=240)))
    client.start()
    T.ok(wait_for(lambda: counters("m").get("LesPepOpened", 0) > 0, 20),
         "the PEP is opening the transfer's header zones")
    for _ in range(5):
        pep_keys_flush()
        pep_keys_up(ab, ba)
        time.sleep(0.2)
    pep_keys_flush()
    client.join(240)
    sent, got = res.get("sent"), srv.result(timeout=240)
    T.ok(sent == got, "keys deleted and re-added under traffic: the transfer is intact",
         {"sent": sent, "got": got})
    xfrm_flush()


# ---- outer fragments and GSO ------------------------------------------------------

def outer_fragments(T, t):
    """An LES packet split into outer IPv4 fragments: a PEP's namespace
    reassembles them before its hook (pep.c), which reads the packet once,
    whole; a fragment alone is never read as a packet."""
    cfg = Config("tunnel", 4, 4)
    ab, ba = tunnel_up(cfg, 0x6600)
    pep_keys_flush()
    pep_keys_up(ab, ba)
    # Inner addresses no policy accepts: b drops the packet after opening
    # it, and sends nothing back through m.
    src, dst = "10.10.1.77", "10.10.2.77"
    inner = P.ip_packet(src, dst, 6, P.tcp_segment(src, dst, 41500, 7300, seq=1, flags=0x18,
                                                   payload=b"f" * 1200))
    esp = Z.seal(ab.spi, ab.seq64(60000), cfg.esn, ab.k2, ab.k1, 4, inner)
    a, b = OUTER["a"][4], OUTER["b"][4]

    def frags(ident):
        return [P.ipv4_packet(a, b, 50, esp[:600], ident=ident, df=False, mf=True),
                P.ipv4_packet(a, b, 50, esp[600:], ident=ident, df=False, frag_off=600)]
    time.sleep(1)
    before = counters("m")
    agent("a", "raw-send", b, ",".join(f.hex() for f in frags(0x4c45)))
    time.sleep(0.3)
    d = delta(before, counters("m"))
    T.ok(d.get("LesPepOpened") == 1 and "LesPepOuterFragment" not in d and
         "LesPepMalformed" not in d,
         "outer fragments are reassembled and the packet read once, whole", d)
    # The first fragment alone waits in the reassembly queue until it
    # times out: nothing of it is read.
    before = counters("m")
    agent("a", "raw-send", b, frags(0x4c46)[0].hex())
    time.sleep(0.3)
    d = delta(before, counters("m"))
    T.ok(not any(k.startswith("LesPep") for k in d),
         "a fragment whose packet never completes is not read", d)
    pep_keys_flush()
    xfrm_flush()


def no_keys_no_work(T, t):
    """A namespace without PEP keys: the hook looks at nothing, counts nothing."""
    cfg = Config("tunnel", 4, 4)
    tunnel_up(cfg, 0x6700)
    pep_keys_flush()
    time.sleep(1)          # destroyed states leave the count after xfrm's GC
    before = counters("m")
    sent, got = transfer(cfg, 7520, 256 << 10)
    d = delta(before, counters("m"))
    T.ok(sent == got and not any(k.startswith("LesPep") for k in d),
         "without PEP keys the hook makes no lookup and counts nothing", d)
    xfrm_flush()


# ---- tables that grow with their load ----------------------------------------------

def syn_flood_file(t, cfg, ab, port, n, name):
    """n SYNs on ab, one per source port from port on (SYNs only: sealing
    is the slow part under emulation)."""
    a_in, b_in = "10.10.1.77", "10.10.2.77"
    path = f"{t.out}/{name}.hex"
    with open(path, "w") as f:
        for i in range(n):
            inner = P.tcp_packet(a_in, b_in, port + i, 7400, seq=1000, ack=0, flags=0x02)
            esp = Z.seal(ab.spi, ab.seq64(i + 1), cfg.esn, ab.k2, ab.k1,
                         cfg.inner_nexthdr(6), inner)
            f.write(P.wrap_esp(cfg.outer(ab.src), cfg.outer(ab.dst), esp).hex() + "\n")
    return path


def table_growth(T, t, nflows=6000, nsas=2000):
    """The flow table and the SA table are hash tables that grow with their
    load (rhashtable; the flow table starts at 64 buckets): 6,000 new flows
    are all tracked, a dump lists each once and a flush empties the table;
    2,000 LES SAs added beside a tunnel leave it working, and go again."""
    cfg = Config("tunnel", 4, 4)
    ab, ba = tunnel_up(cfg, 0x6900)
    pep_keys_flush()
    pep_keys_up(ab, ba)
    path = syn_flood_file(t, cfg, ab, 30000, nflows, "growth-flows")
    # A namespace's limits stay within the initial namespace's.
    lesctl("pep set backlog 65536", ns=None)
    lesctl("pep set backlog 65536")
    lesctl("flows flush")
    before = counters("m")
    pkts = [bytes.fromhex(h) for h in open(path).read().split()]
    send_from("a", OUTER["b"][4], pkts, chunk=500)
    T.ok(wait_for(lambda: lesctl_j("pep show")["flows"] == nflows, 60),
         f"{nflows} new flows are all in the table", lesctl_j("pep show")["flows"])
    fl = lesctl_j("flows")
    ports = {f["initiator"]["port"] for f in fl}
    T.ok(len(fl) == nflows and len(ports) == nflows, "a dump lists each flow once",
         (len(fl), len(ports)))
    d = delta(before, counters("m"))
    T.ok(d.get("LesPepFlowsNew") == nflows and "LesPepTableFull" not in d and
         "LesPepErrors" not in d and "LesPepBacklogFull" not in d,
         "no flow was refused on the way", d)
    lesctl("flows flush")
    T.ok(lesctl_j("pep show")["flows"] == 0, "flows flush empties the grown table",
         lesctl_j("pep show")["flows"])
    lesctl("pep set backlog 1024")
    lesctl("pep set backlog 1024", ns=None)
    pep_keys_flush()

    # SAs: a fresh tunnel (the flood above moved b's replay window on the
    # old one), among nsas more on a.
    ab, ba = tunnel_up(cfg, 0x6a00)
    # Another reqid: the tunnel's policy must keep finding its own SA.
    lines = [Sa(cfg, "a", "b", 0x100000 + i, reqid=9).add_cmd().replace("ip xfrm", "xfrm", 1)
             for i in range(nsas)]
    batch = f"{t.out}/growth-sas.batch"
    with open(batch, "w") as f:
        f.write("\n".join(lines) + "\n")
    sh(f"ip -batch {batch}", ns="a", timeout=300)
    n = int(sh("ip xfrm state count", ns="a").stdout.split()[-1])
    sent, got = transfer(cfg, 7530, 64 << 10)
    T.ok(n >= nsas + 2 and sent == got,
         f"with {nsas} more LES SAs the tunnel still carries a TCP transfer", (n, sent, got))
    sh("ip xfrm state flush", ns="a")
    xfrm_flush()


# ---- what a user namespace may take ------------------------------------------------

def userns_limits(T, t):
    """An unprivileged user's own user and network namespace: its root may
    change its PEP settings, never above the initial namespace's."""
    init = lesctl_j("pep show", ns=None)
    nobody = ("setpriv --reuid=65534 --regid=65534 --clear-groups "
              "unshare --user --map-root-user --net")
    for args, ok, msg in ((f"pep set max-flows {init['max_flows'] + 1}", False,
                           "max-flows cannot exceed the initial namespace's"),
                          (f"pep set backlog {init['backlog'] + 1}", False,
                           "backlog cannot exceed the initial namespace's"),
                          ("pep set max-flows 1000 backlog 16 hook off", True, "")):
        p = sh(f"{nobody} {LESCTL} {args}", check=False)
        T.ok((p.returncode == 0) == ok and msg in p.stderr,
             f"an unprivileged user namespace: lesctl {args} "
             f"{'works' if ok else 'is refused'}", (p.returncode, p.stderr))
    p = sh(f"setpriv --reuid=65534 --regid=65534 --clear-groups {LESCTL} stats", ns="m",
           check=False)
    T.ok(p.returncode == 0 and "LesPepOpened" in p.stdout,
         "an unprivileged user reads the counters (without waiting for the opener)",
         (p.returncode, p.stderr))


# ---- requests lesctl never sends -----------------------------------------------------

def strict_netlink(T, t):
    g = genl.Genl()
    try:
        fam = g.resolve()
        cases = (("a plain stats request", {}, 0),
                 ("an attribute the command does not take",
                  {"payload": genl.attr(genl.LES_A_HOOK, b"\1")}, errno.EINVAL),
                 ("an unknown attribute type", {"payload": genl.attr(60, b"\0" * 4)},
                  errno.EINVAL),
                 ("a non-zero reserved header field", {"reserved": 1}, errno.EINVAL),
                 ("a flag the request has no use for",
                  {"flags": genl.NLM_F_REQUEST | genl.NLM_F_ACK | genl.NLM_F_EXCL},
                  errno.EINVAL))
        for what, kw, want in cases:
            err, msg = g.request(fam, genl.LES_CMD_GET_STATS, **kw)
            T.ok(err == want, f"strict validation: {what} gets {genl.strerror(want)}",
                 (genl.strerror(err), msg))
    finally:
        g.close()


# ---- a flow dump racing the table ---------------------------------------------------

def dump_consistency(T, t):
    """A dump of several parts, with a flow added between two of them: the
    kernel flags the dump (NLM_F_DUMP_INTR) so that nobody trusts it; lesctl
    asks again and prints one consistent table."""
    cfg, path = flood_setup(t, 0x6800, 24000, 400, "dump-flows")
    ab, ba = tunnel_up(cfg, 0x6800)
    pep_keys_flush()
    pep_keys_up(ab, ba)
    lesctl("flows flush")
    pkts = [bytes.fromhex(h) for h in open(path).read().split()]
    send_from("a", OUTER["b"][4], pkts)
    T.ok(wait_for(lambda: lesctl_j("pep show")["flows"] == 400, 10),
         "400 flows in the table", lesctl_j("pep show")["flows"])
    seqs = {ab.spi: iter(range(500000, 600000)), ba.spi: iter(range(500000, 600000))}

    def dump(change):
        g = genl.Genl("les-m")
        try:
            fam = g.resolve()
            g.send(fam, genl.LES_CMD_GET_FLOW, flags=genl.NLM_F_REQUEST | genl.NLM_F_DUMP)
            first = g.parts()
            if change:
                send_from("a", OUTER["b"][4], [handshake_pkts(cfg, ab, ba, seqs, 29000)[0]])
                time.sleep(0.5)
            parts, done = [first], False
            while not done:
                parts.append(g.parts())
                done = any(k in (genl.NLMSG_DONE, genl.NLMSG_ERROR) for k, _, _ in parts[-1])
            msgs = [m for p in parts for m in p]
            return (len(parts), sum(1 for k, _, _ in msgs if k == fam),
                    any(f & genl.NLM_F_DUMP_INTR for _, f, _ in msgs))
        finally:
            g.close()

    nparts, nflows, intr = dump(change=False)
    T.ok(nparts > 2 and nflows == 400 and not intr,
         "a dump of an unchanging table comes in parts, whole and unflagged",
         (nparts, nflows, intr))
    nparts, nflows, intr = dump(change=True)
    T.ok(intr, "a flow added between two parts of a dump flags it NLM_F_DUMP_INTR",
         (nparts, nflows, intr))
    # lesctl under churn: max-flows below the flood, so flows come and go.
    lesctl("pep set max-flows 300")
    flood = Bg("a", "raw-flood", OUTER["b"][4], path, 8)
    results = []
    try:
        # 20 dumps: the flag lands on NLMSG_DONE itself in some of them.
        for _ in range(20):
            # A dump that never ends is a lesctl bug: fail in seconds, not minutes.
            p = sh(f"{LESCTL} -j flows", ns="m", check=False, timeout=20)
            if p.returncode == 0:
                fl = json.loads(p.stdout)
                keys = [(f["initiator"]["port"], f["responder"]["port"]) for f in fl]
                results.append(("ok", len(keys), len(set(keys))))
            else:
                results.append(("refused", p.stderr.strip()))
    finally:
        flood.stop()
    lesctl("pep set max-flows 65536")
    T.ok(all(r[0] == "ok" and r[1] == r[2] or
             r[0] == "refused" and "changed during each of 8 dumps" in r[1] for r in results),
         "lesctl flows under churn prints no flow twice (or says it could not)", results)
    pep_keys_flush()
    xfrm_flush()


# ---- module init failing at each allocation in turn ----------------------------------

FINIT_MODULE = 313      # x86_64


def init_faults(T, t, ko, budget_s=150):
    """Fault injection (debug kernel): the n-th allocation of the loading
    task fails, for n = 1, 2, ... until the load succeeds.  Each failed load
    must leave no module, the ESP slot with esp4/esp6, and nothing leaked
    (the runner's kmemleak scan); the last one must work."""
    if not os.path.exists("/proc/thread-self/fail-nth") or \
            not os.path.exists("/sys/kernel/debug/failslab"):
        T.skip("module init under fault injection", "needs the debug kernel")
        return
    for f, v in (("ignore-gfp-wait", "N"), ("verbose", "0")):
        with open(f"/sys/kernel/debug/failslab/{f}", "w") as fh:
            fh.write(v)
    xfrm_flush()
    for ns in ("a", "m", "b"):
        sh("ip xfrm state flush", ns=ns)
    time.sleep(1)
    p = sh("rmmod les", check=False)
    T.ok(p.returncode == 0, "les.ko unloads before the fault sweep", p.stderr)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(ko, os.O_RDONLY)
    n, failed, complete, leftover, start = 0, 0, False, None, time.time()
    errors = {}
    try:
        while time.time() - start < budget_s:
            n += 1
            with open("/proc/thread-self/fail-nth", "w") as fh:
                fh.write(str(n))
            ret = libc.syscall(FINIT_MODULE, fd, b"", 0)
            e = ctypes.get_errno()
            with open("/proc/thread-self/fail-nth") as fh:
                unused = int(fh.read().strip() or 0)
            with open("/proc/thread-self/fail-nth", "w") as fh:
                fh.write("0")
            if ret == 0:
                if unused:          # no allocation failed: the sweep is complete
                    complete = True
                    break
                sh("rmmod les")     # a failure the load survived: go on
                continue
            failed += 1
            name = errno.errorcode.get(e, str(e))
            errors[name] = errors.get(name, 0) + 1
            if os.path.exists("/sys/module/les"):
                leftover = n
                break
    finally:
        os.close(fd)
    print(f"# init faults: {failed} loads failed, injected at allocations 1..{n}; "
          f"errors {errors}; {'complete' if complete else 'time budget ended'} "
          f"after {time.time() - start:.0f}s", flush=True)
    T.ok(failed > 0 and leftover is None,
         "a load that fails at any allocation leaves no module behind",
         {"failed": failed, "n": n, "errors": errors, "module left at": leftover})
    if not os.path.exists("/sys/module/les"):
        sh(f"insmod {ko}")
    cfg = Config("tunnel", 4, 4)
    for what, plain in (("LES SAs (les.ko holds the ESP slot)", False),
                        ("plain ESP SAs (handed to esp4)", True)):
        try:
            tunnel_up(cfg, 0x6900 + 0x10 * plain, plain=plain)
            err = None
        except RuntimeError as e:
            err = str(e)
        T.ok(err is None, f"after the sweep the kernel accepts {what}", err)
        xfrm_flush()


def run(T, out, ko):
    t = types.SimpleNamespace(out=out)
    lesctl("pep set hook on max-flows 65536 idle-timeout 300 backlog 1024")
    run_parts(T, "hardening", (
        ("key limits", key_hard_limit), ("fragments", outer_fragments),
        ("no keys", no_keys_no_work), ("user namespaces", userns_limits),
        ("netlink", strict_netlink), ("dumps", dump_consistency),
        # Half as many on the debug kernel (137 s for all there): the
        # flow table still grows six times, from 64 buckets to 4,096.
        ("table growth", lambda T, t: table_growth(T, t, *(
            (3000, 1000) if os.uname().release.endswith("lesdebug") else (6000, 2000)))),
        ("init faults", lambda T, t: init_faults(T, t, ko))), t)
    pep_keys_flush()
    xfrm_flush()
