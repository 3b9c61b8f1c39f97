# SPDX-License-Identifier: GPL-2.0
"""Raw generic netlink for the tests: requests lesctl would never send
(unknown attributes, reserved bits), and dumps read one part at a time."""
import errno
import os
import socket
import struct

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK = 0x1, 0x2, 0x4
NLM_F_DUMP_INTR = 0x10
NLM_F_EXCL = 0x200
NLM_F_DUMP = 0x300
SOL_NETLINK = 270
NETLINK_EXT_ACK = 11
NLMSGERR_ATTR_MSG = 1

# kernel/les_genl.h
LES_CMD_GET_STATS = 3
LES_CMD_GET_FLOW = 5
LES_A_HOOK = 1


def attr(kind, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, kind) + payload + b"\0" * (-n % 4)


def attrs(data):
    out, i = {}, 0
    while i + 4 <= len(data):
        n, kind = struct.unpack_from("=HH", data, i)
        if n < 4:
            break
        out[kind & 0x3FFF] = data[i + 4:i + n]
        i += (n + 3) & ~3
    return out


CLONE_NEWNET = 0x40000000


def _setns(fd):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET):
        raise OSError(ctypes.get_errno(), "setns")


def socket_in(netns):
    """A generic netlink socket of the named namespace (ip netns), made
    there and used from here: a socket keeps the namespace it was made in."""
    if not netns:
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    there = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        _setns(there)
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    finally:
        _setns(home)
        os.close(there)
        os.close(home)


class Genl:
    def __init__(self, netns=None):
        self.s = socket_in(netns)
        self.s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        self.s.bind((0, 0))
        self.seq = 0
        self.family = None

    def close(self):
        self.s.close()

    def send(self, family, cmd, payload=b"", flags=NLM_F_REQUEST | NLM_F_ACK,
             version=1, reserved=0):
        self.seq += 1
        body = struct.pack("=BBH", cmd, version, reserved) + payload
        self.s.send(struct.pack("=IHHII", 16 + len(body), family, flags, self.seq, 0) + body)

    def parts(self):
        """One datagram: [(type, flags, payload)]."""
        data, out, i = self.s.recv(1 << 17), [], 0
        while i + 16 <= len(data):
            n, kind, flags, _, _ = struct.unpack_from("=IHHII", data, i)
            out.append((kind, flags, data[i + 16:i + n]))
            i += (n + 3) & ~3
        return out

    def request(self, family, cmd, payload=b"", **kw):
        """A do-request: (errno, extack message)."""
        self.send(family, cmd, payload, **kw)
        while True:
            for kind, flags, body in self.parts():
                if kind == NLMSG_ERROR:
                    err = -struct.unpack_from("=i", body)[0]
                    msg = ""
                    if flags & 0x200:           # NLM_F_ACK_TLVS
                        hlen = 16 if flags & 0x100 else 16 + struct.unpack_from("=I", body, 4)[0]
                        a = attrs(body[4 + hlen:])
                        msg = a.get(NLMSGERR_ATTR_MSG, b"").rstrip(b"\0").decode()
                    return err, msg

    def resolve(self, name="les"):
        self.send(GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                  attr(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"), version=1)
        for kind, _, body in self.parts():
            if kind == NLMSG_ERROR:
                raise OSError(-struct.unpack_from("=i", body)[0], f"no genl family {name}")
            self.family = struct.unpack("=H", attrs(body[4:])[CTRL_ATTR_FAMILY_ID][:2])[0]
        self.parts()                                # the ACK
        return self.family


def strerror(e):
    return errno.errorcode.get(e, str(e)) if e else "OK"

