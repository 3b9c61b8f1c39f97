#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Small actions the VM tests run inside a network namespace
(`ip netns exec NS python3 tests/vm/nsagent.py ACTION ...`), and the server
that runs them, and shell commands, for a whole test run (`nsagent.py
serve`, see serve()).

Each action does one thing and prints its result as one JSON line, so the
test driver reads results without parsing free text."""
import hashlib
import json
import mmap
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
sys.path.insert(0, TOOLS)
import shellcmd  # noqa: E402

ETH_P_ALL = 0x0003
SOL_UDP = 17
UDP_ENCAP = 100
UDP_ENCAP_ESPINUDP = 2


def family_of(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def sniff(iface, out, seconds):
    """Capture every frame on IFACE into a pcap until SIGTERM or timeout.

    Through a TPACKET_V2 ring: the kernel copies each frame into it as the
    frame passes.  A plain packet socket queues a clone instead, read later,
    and a clone shares its page fragments: a receiver that decrypts them in
    place afterwards (ESP-in-UDP, after xfrm's skb_unclone) would change
    what the capture shows."""
    from lescodec import pcap  # only here: importing it costs a second under TCG
    SOL_PACKET, PACKET_RX_RING, PACKET_VERSION, TPACKET_V2 = 263, 5, 10, 1
    frame, block, blocks = 4096, 1 << 16, 256
    nframes = block // frame * blocks
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
    s.setsockopt(SOL_PACKET, PACKET_RX_RING, struct.pack("IIII", block, blocks, frame, nframes))
    ring = mmap.mmap(s.fileno(), block * blocks, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    s.bind((iface, 0))
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    frames = []
    deadline = time.time() + float(seconds)
    print(json.dumps({"sniffing": iface}), flush=True)
    i = 0
    while time.time() < deadline:
        off = i * frame
        # struct tpacket2_hdr: status, len, snaplen, mac, net, sec, nsec.
        status, _, snaplen, mac, _, _, _ = struct.unpack_from("IIIHHII", ring, off)
        if not status & 1:                      # TP_STATUS_USER
            # Once stopped, read what is still in the ring, then end.
            if stop[0]:
                break
            select.select([s], [], [], 0.05)
            continue
        data = ring[off + mac:off + mac + snaplen]
        struct.pack_into("I", ring, off, 0)     # back to TP_STATUS_KERNEL
        i = (i + 1) % nframes
        # Keep IP only, as LINKTYPE_RAW: the tests read IP packets.
        if len(data) > 14 and data[12:14] in (b"\x08\x00", b"\x86\xdd"):
            frames.append((time.time(), data[14:]))
    ring.close()
    pcap.write_pcap(out, frames, linktype=pcap.LINKTYPE_RAW)
    print(json.dumps({"frames": len(frames)}), flush=True)


def udp_recv(addr, port, count, timeout):
    s = socket.socket(family_of(addr), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.settimeout(float(timeout))
    print(json.dumps({"listening": port}), flush=True)
    got = []
    try:
        while len(got) < int(count):
            data, src = s.recvfrom(65535)
            got.append({"src": src[0], "sport": src[1], "data": data.hex()})
    except socket.timeout:
        pass
    print(json.dumps({"received": got}), flush=True)


def udp_send(src, dst, port, payload_hex, sport="0"):
    s = socket.socket(family_of(dst), socket.SOCK_DGRAM)
    s.bind((src, int(sport)))
    s.sendto(bytes.fromhex(payload_hex), (dst, int(port)))
    print(json.dumps({"sent": len(payload_hex) // 2}))


def bypass_policy(s, family, direction=1):
    """A per-socket xfrm policy "allow" (what IKE daemons use), so that
    injected ESP is not itself caught by the namespace's policies.
    direction: 0 in, 1 out."""
    info = bytearray(168)
    struct.pack_into("=H", info, 40, family)
    info[160] = direction
    level = socket.IPPROTO_IP if family == socket.AF_INET else socket.IPPROTO_IPV6
    opt = 17 if family == socket.AF_INET else 35  # IP_XFRM_POLICY, IPV6_XFRM_POLICY
    s.setsockopt(level, opt, bytes(info))


def raw_send(dst, packet_hex):
    """Send a complete IP packet (header included) as it is."""
    fam = family_of(dst)
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW)
    bypass_policy(s, fam)
    pkts = packet_hex.split(",")
    for p in pkts:
        s.sendto(bytes.fromhex(p), (dst, 0))
    print(json.dumps({"sent": len(pkts)}))


def raw_flood(dst, path, seconds):
    """Send the packets of PATH (hex, one per line) again and again."""
    fam = family_of(dst)
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW)
    bypass_policy(s, fam)
    pkts = [bytes.fromhex(ln) for ln in open(path).read().split()]
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    print(json.dumps({"flooding": len(pkts)}), flush=True)
    sent = 0
    end = time.time() + float(seconds)
    while not stop[0] and time.time() < end:
        for p in pkts:
            s.sendto(p, (dst, 0))
        sent += len(pkts)
    print(json.dumps({"sent": sent}), flush=True)


def raw_send_file(dst, path, chunk, pause_ms):
    """Send each packet of PATH (hex, one per line) once, in order, pausing
    PAUSE_MS after every CHUNK packets so that no receive queue overflows."""
    fam = family_of(dst)
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW)
    bypass_policy(s, fam)
    pkts = [bytes.fromhex(ln) for ln in open(path).read().split()]
    for i, p in enumerate(pkts, 1):
        s.sendto(p, (dst, 0))
        if i % int(chunk) == 0:
            time.sleep(float(pause_ms) / 1000)
    print(json.dumps({"sent": len(pkts)}))


def udp_encap_hold(addr, port, seconds):
    """Hold the NAT-T port open: xfrm only takes ESP-in-UDP from a socket
    with UDP_ENCAP set (charon's job on a real gateway)."""
    fam = family_of(addr)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((addr, int(port)))
    s.setsockopt(SOL_UDP, UDP_ENCAP, UDP_ENCAP_ESPINUDP)
    # UDP checks the inbound policy before the encap hook: a transport-mode
    # policy between the two hosts would drop ESP-in-UDP (charon bypasses too).
    bypass_policy(s, fam, 0)
    bypass_policy(s, fam, 1)
    print(json.dumps({"holding": port}), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    time.sleep(float(seconds))


def tcp_listen(addr, port, timeout):
    """A listening TCP socket; says so on stdout (the driver waits for it)."""
    s = socket.socket(family_of(addr), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(1)
    s.settimeout(float(timeout))
    print(json.dumps({"listening": port}), flush=True)
    return s


def tcp_serve(addr, port, timeout):
    """Accept one connection, read to EOF, report length and SHA-256."""
    s = tcp_listen(addr, port, timeout)
    h, n = hashlib.sha256(), 0
    try:
        c, _ = s.accept()
        c.settimeout(float(timeout))
        while True:
            b = c.recv(65536)
            if not b:
                break
            h.update(b)
            n += len(b)
    except socket.timeout:
        pass
    print(json.dumps({"bytes": n, "sha256": h.hexdigest()}), flush=True)


def tcp_serve_echo_text(addr, port, timeout):
    """Accept one connection, read to EOF, report the text received."""
    s = tcp_listen(addr, port, timeout)
    c, _ = s.accept()
    data = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        data += b
    c.close()
    print(json.dumps({"bytes": len(data), "text": data.decode(errors="replace")}), flush=True)


def tcp_send(src, dst, port, nbytes, seed="les", marker="", zerocopy=""):
    """Send NBYTES (hash-derived, or MARKER repeated) and wait for the close.
    ZEROCOPY: send with MSG_ZEROCOPY, so the segments carry user pages."""
    if marker:
        data = (marker.encode() * (int(nbytes) // len(marker) + 1))[:int(nbytes)]
    else:
        data = b"".join(hashlib.sha256(f"{seed}{i}".encode()).digest()
                        for i in range((int(nbytes) + 31) // 32))[:int(nbytes)]
    s = socket.socket(family_of(dst), socket.SOCK_STREAM)
    s.bind((src, 0))
    s.settimeout(20)
    s.connect((dst, int(port)))
    s.settimeout(120)
    if zerocopy:
        s.setsockopt(socket.SOL_SOCKET, 60, 1)            # SO_ZEROCOPY
        view = memoryview(data)
        while view:
            view = view[s.send(view[:65536], 0x4000000):]  # MSG_ZEROCOPY
    else:
        s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    s.close()
    print(json.dumps({"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}))


def tcp_raw_recv(addr, port, seconds):
    """Report TCP segments to PORT that the stack delivers to this host
    (a raw socket sees every one, after IPsec and policy checks)."""
    fam = family_of(addr)
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_TCP)
    s.settimeout(0.1)
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    print(json.dumps({"listening": port}), flush=True)
    got = []
    end = time.time() + float(seconds)
    while time.time() < end and not stop[0]:
        try:
            data = s.recv(65535)
        except socket.timeout:
            continue
        if fam == socket.AF_INET:
            data = data[(data[0] & 0xf) * 4:]     # IPv4 raw sockets see the IP header
        if len(data) >= 20 and int.from_bytes(data[2:4], "big") == int(port):
            got.append({"flags": data[13], "window": int.from_bytes(data[14:16], "big"),
                        "len": len(data), "seq": int.from_bytes(data[4:8], "big"),
                        "ack": int.from_bytes(data[8:12], "big"),
                        "data": data[(data[12] >> 4) * 4:].hex(), "segment": data.hex()})
    print(json.dumps({"segments": got}), flush=True)


ACTIONS = {
    "sniff": sniff, "udp-recv": udp_recv, "udp-send": udp_send,
    "raw-send": raw_send, "raw-send-file": raw_send_file, "raw-flood": raw_flood,
    "udp-encap-hold": udp_encap_hold,
    "tcp-serve": tcp_serve, "tcp-send": tcp_send, "tcp-raw-recv": tcp_raw_recv,
    "tcp-serve-echo-text": tcp_serve_echo_text,
}

# ---- one server per namespace ------------------------------------------------------

def run_cmd(cmd, timeout):
    """`bash -c CMD`, without the bash when CMD is one plain command."""
    return subprocess.run(shellcmd.argv(cmd), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout)


def serve():
    """Requests on stdin, answers on stdout, one JSON object a line, tagged
    with the request's id (tests/vm/lesvm.py is the client):

        {"id": N, "sh": CMD, "timeout": S}  ->  {"id": N, "rc": RC or null, "out": .., "err": ..}
        {"id": N, "run": [ACTION, ARG..]}   ->  {"id": N, "line": TEXT} .. {"id": N, "rc": RC}
        {"id": N, "stop": M}                    SIGTERM to action M

    Under emulation a new python costs seconds (it reads its library over
    9p), a fork of this one a fraction of that; `ip netns exec` remounts
    /sys on every call.  An action runs in a forked child with its own pipe,
    so it keeps its signal handlers and its own process."""
    out_lock, fork_lock = threading.Lock(), threading.Lock()
    children = {}

    def send(msg):
        with out_lock:
            sys.stdout.write(json.dumps(msg) + "\n")
            sys.stdout.flush()

    def run_sh(rid, cmd, timeout):
        try:
            p = run_cmd(cmd, timeout)
            send({"id": rid, "rc": p.returncode, "out": p.stdout, "err": p.stderr})
        except subprocess.TimeoutExpired:
            send({"id": rid, "rc": None, "out": "", "err": f"timed out after {timeout} s"})

    def child(argv, w):
        # Only what the action needs: its pipe as stdout, nothing of the
        # server's (other actions' pipes would never see EOF).
        os.dup2(w, 1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.closerange(3, 1 << 16)
        sys.stdout = open(1, "w", closefd=False)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        rc = 0
        try:
            ACTIONS[argv[0]](*argv[1:])
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        except BaseException:   # noqa: BLE001 - reported, the child ends anyway
            traceback.print_exc()
            rc = 1
        sys.stdout.flush()
        os._exit(rc)

    def run_action(rid, argv):
        if not argv or argv[0] not in ACTIONS:
            send({"id": rid, "line": f"unknown action {argv}"})
            send({"id": rid, "rc": 2})
            return
        with fork_lock:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                child(argv, w)
            os.close(w)
            children[rid] = pid
        with os.fdopen(r) as f:
            for line in f:
                send({"id": rid, "line": line.rstrip("\n")})
        _, status = os.waitpid(pid, 0)
        children.pop(rid, None)
        send({"id": rid, "rc": os.waitstatus_to_exitcode(status)})

    for line in sys.stdin:
        req = json.loads(line)
        if "stop" in req:
            pid = children.get(req["stop"])
            if pid:
                os.kill(pid, signal.SIGTERM)
        elif "sh" in req:
            threading.Thread(target=run_sh, args=(req["id"], req["sh"], req["timeout"]),
                             daemon=True).start()
        else:
            threading.Thread(target=run_action, args=(req["id"], req["run"]), daemon=True).start()
    # The driver is gone: so are the actions it started.
    for pid in list(children.values()):
        os.kill(pid, signal.SIGTERM)


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve()
        sys.exit(0)
    if len(sys.argv) < 2 or sys.argv[1] not in ACTIONS:
        print("usage: nsagent.py {serve|%s} ARGS..." % "|".join(ACTIONS), file=sys.stderr)
        sys.exit(2)
    ACTIONS[sys.argv[1]](*sys.argv[2:])
