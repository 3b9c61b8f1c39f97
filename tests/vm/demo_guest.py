#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The demo, inside the VM: a TCP transfer from a to b over an LES tunnel
through the middle hop m, and what each party can read of it."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lesvm import Bg, Config, Z, capture_esp, sh, topology_down, topology_up, tunnel_up  # noqa: E402
from pep_tests import lesctl, lesctl_j, pep_keys_up  # noqa: E402

SECRET = b"The launch code is 0000: keep it between the endpoints."


def tcp_line(hz):
    """One header zone as tcpdump would print it (tunnel mode, IPv4)."""
    if not hz.length:
        return f"next header {hz.nexthdr}: no headers (not TCP)"
    ip, t = hz.headers[:20], hz.headers[20:]
    src = ".".join(str(b) for b in ip[12:16])
    dst = ".".join(str(b) for b in ip[16:20])
    flags = "".join(c for c, bit in zip("FSRPAUEC", range(8)) if t[13] >> bit & 1)
    return (f"{src}.{int.from_bytes(t[0:2], 'big')} > {dst}.{int.from_bytes(t[2:4], 'big')} "
            f"[{flags:>3}] seq {int.from_bytes(t[4:8], 'big')} ack {int.from_bytes(t[8:12], 'big')} "
            f"win {int.from_bytes(t[14:16], 'big')} length {hz.payload_len}")


def main():
    out = sys.argv[2] if len(sys.argv) > 2 else "/tmp"
    sh("modprobe -a esp4 esp6 xfrm_user nf_defrag_ipv4 nf_defrag_ipv6")
    sh(f"insmod {sys.argv[1]}")
    topology_up()
    cfg = Config("tunnel", 4, 4)
    ab, ba = tunnel_up(cfg, 0x100)
    print("== 1. Who reads what: a (10.10.1.1) -> m (middle hop, a PEP) -> b (10.10.2.1), "
          "tunnel mode, LES SAs")
    # m is a PEP gateway: it holds K2 of both directions as PEP keys.
    pep_keys_up(ab, ba)
    print("\n== m's PEP keys (pep-view states with the PEP mark): lesctl pep show")
    print("\n".join("  " + ln for ln in lesctl("pep show").stdout.splitlines()))
    pcap_path = f"{out}/demo.pcap"
    snif = Bg("m", "sniff", "m-b", pcap_path, 60)
    srv = Bg("b", "tcp-serve-echo-text", cfg.inner("b"), 8000, 30)
    sh(f"ip netns exec les-a /usr/bin/python3 -c \"import socket; s=socket.create_connection(('{cfg.inner('b')}', 8000)); "
       f"s.sendall({SECRET!r}*20); s.shutdown(1); s.recv(1)\"")
    got = srv.result()
    time.sleep(0.2)
    snif.stop()
    pkts = capture_esp(pcap_path)
    print(f"\n== On the wire (m captured {len(pkts)} ESP packets): SPI, sequence, length; nothing else is clear")
    for ip, f in pkts[:3]:
        print(f"  ESP spi {f.spi:#x} seq {f.seq} length {len(f.esp)}")
    print("\n== What the middle hop reads with K2 alone (the PEP's view): the TCP headers")
    leaked = False
    shown = 0
    for ip, f in pkts:
        sa = ab if f.spi == ab.spi else ba
        hz = Z.open_headers(f.esp, sa.k2)
        leaked |= SECRET[:16] in hz.headers
        if shown < 8:
            print(f"  {tcp_line(hz)}")
        shown += 1
    if shown > 8:
        print(f"  ... and {shown - 8} more")
    try:
        Z.open_full(pkts[0][1].esp, ab.k2, bytes(36), False)
        opened = True
    except Exception as e:  # noqa: BLE001
        opened = False
        print(f"\n== The payload zone with a wrong K1: {type(e).__name__}: {e}")
    print(f"   secret text found in anything m can read: {'YES (BUG)' if leaked or opened else 'no'}")
    print("\n== m's kernel did the same on the forwarding path (les.ko hook): lesctl flows")
    flows_text = lesctl("flows").stdout
    print("\n".join("  " + ln for ln in flows_text.splitlines()))
    flows = lesctl_j("flows")
    leaked |= SECRET[:16].decode() in flows_text
    pep_ok = len(flows) == 1 and flows[0]["handshake"] and flows[0]["state"] == "closed"
    print(f"\n== What b (the endpoint, K1 and K2) received: {got['bytes']} bytes:\n  {got['text'][:60]!r}...")
    ok = not leaked and not opened and pep_ok and got["text"].encode() == SECRET * 20
    topology_down()
    print("\n== demo " + ("passed: K2 shows headers (to m's kernel too), only K1 shows data"
                             if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
