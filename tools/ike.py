# SPDX-License-Identifier: GPL-2.0
"""Debian's charon, with or without the les plugin, in a network namespace.

Each charon has its own /etc (/etc/netns/NETNS, which `ip netns exec` puts
over /etc: strongswan.conf, swanctl/ and its credentials) and its own /run
(bind-mounted there, so pid file and vici socket do not collide); swanctl
talks to it through --uri.  Certificates are Ed25519, made by `pki`.  Used
by the testbed's mode les-ike (tools/testbed.py) and step ike of the VM
tests (tests/vm/ike_tests.py); both run in a VM whose /usr and /etc are
throw-away overlays.
"""
import os
import shutil
import subprocess
import time

CHARON = "/usr/lib/ipsec/charon"
PLUGIN_DIR = "/usr/lib/ipsec/plugins"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = os.environ.get("LES_SW_PLUGIN",
                        os.path.join(REPO, "strongswan-plugin", "libstrongswan-les.so"))
# Without les, the plugins an IKEv2 peer with Ed25519 certificates and
# AES-GCM needs (openssl: Ed25519, X25519, GCM), as Debian ships them.
PLUGINS = ("random nonce openssl pem pkcs1 pkcs8 x509 pubkey revocation constraints "
           "sha1 sha2 hmac kdf aes gcm kernel-netlink socket-default vici updown")


def missing():
    """What charon with the plugin needs and is not here, or None."""
    if not os.path.exists(PLUGIN):
        return f"the plugin built (make -C strongswan-plugin: {PLUGIN})"
    if not os.path.exists(CHARON):
        return "Debian's charon (tools/setup-host.sh)"
    return None


def install_plugin():
    """Into the VM's throw-away /usr."""
    shutil.copy(PLUGIN, os.path.join(PLUGIN_DIR, "libstrongswan-les.so"))


def wait_for(cond, timeout=5.0, step=0.1):
    """Polls cond() until it holds or @timeout seconds pass; its last
    value.  (The VM tests' too: tests/vm/lesvm.py.)"""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


class Charon:
    """A charon in network namespace @netns, logging to @log."""

    def __init__(self, netns, run, log, les=True):
        self.netns, self.les, self.log = netns, les, log
        self.etc = f"/etc/netns/{netns}"
        self.run = run
        self.uri = f"unix://{run}/charon.vici"
        self.p = None
        # The interfaces charon may use and announce (MOBIKE), or all.
        self.interfaces = None

    def write(self, plugin_conf, swanctl_conf, append=False, level=None):
        """strongswan.conf (@plugin_conf inside charon.plugins.les) and
        swanctl.conf.  @append: for a reload, which would otherwise
        empty the log."""
        os.makedirs(self.run, exist_ok=True)
        os.makedirs(f"{self.etc}/swanctl", exist_ok=True)
        plugins = ("les " if self.les else "") + PLUGINS
        level = level if level is not None else (4 if self.les else 1)
        use = f"\tinterfaces_use = {self.interfaces}\n" if self.interfaces else ""
        with open(f"{self.etc}/strongswan.conf", "w") as f:
            f.write(f"""charon {{
	load = {plugins}
	install_routes = no
{use}	plugins {{
		les {{
{plugin_conf}
		}}
	}}
	filelog {{
		ike {{
			path = {self.log}
			append = {"yes" if append else "no"}
			flush_line = yes
			time_format = %T
			default = {level}
			# charon itself logs every CHILD_SA's keymat at chd 4
			# (keymat_v2.c:635), every netlink message, SA keys
			# included, at knl 3 (kernel_netlink_shared.c:325), and
			# every IKE message's plaintext, the fourth message's
			# keys included, at enc 3 (encrypted_payload.c:490):
			# those three stay below; the plugin's own lines are at
			# every level.
			chd = {min(level, 3)}
			knl = {min(level, 2)}
			enc = {min(level, 2)}
		}}
	}}
}}
""")
        with open(f"{self.etc}/swanctl/swanctl.conf", "w") as f:
            f.write(swanctl_conf)

    def start(self, timeout=60):
        for f in ("charon.vici", "charon.pid"):
            if os.path.exists(f"{self.run}/{f}"):
                os.unlink(f"{self.run}/{f}")
        # ip netns exec puts /etc/netns/NS/* over /etc in a mount namespace
        # of its own: the bind mount of /run stays in there too.
        self.p = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "sh", "-c",
             f"mount --bind {self.run} /run && exec {CHARON}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        up = wait_for(lambda: os.path.exists(f"{self.run}/charon.vici")
                      and "loaded plugins" in self.text(), timeout)
        return up and self.p.poll() is None

    def text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def swanctl(self, *args, check=True, timeout=90):
        """In the namespace, so that --load-all reads its /etc."""
        p = subprocess.run(["ip", "netns", "exec", self.netns, "swanctl", *args,
                            "--uri", self.uri], capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode:
            raise RuntimeError(f"swanctl {' '.join(args)} in {self.netns} failed "
                               f"({p.returncode}): {(p.stderr or p.stdout).strip()[-1000:]}")
        return p

    def stop(self, kill=False):
        """SIGTERM (charon deletes its IKE_SAs) or SIGKILL."""
        if self.p and self.p.poll() is None:
            if kill:
                self.p.kill()
            else:
                self.p.terminate()
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.p = None


def make_pki(base, certs):
    """A CA and an Ed25519 certificate for each of @certs, {netns: (file
    name, identity)}, into that namespace's /etc."""
    os.makedirs(base, exist_ok=True)

    def pki(cmd):
        subprocess.run(f"pki {cmd} 2>/dev/null", shell=True, check=True)
    pki(f"--gen --type ed25519 --outform pem > {base}/ca.key")
    pki(f"--self --ca --lifetime 30 --in {base}/ca.key --type ed25519 "
        f"--dn 'CN=LES test CA' --outform pem > {base}/ca.pem")
    for netns, (name, ident) in certs.items():
        etc = f"/etc/netns/{netns}/swanctl"
        for d in ("x509", "x509ca", "private"):
            os.makedirs(f"{etc}/{d}", exist_ok=True)
        pki(f"--gen --type ed25519 --outform pem > {etc}/private/{name}.pem")
        pki(f"--pub --in {etc}/private/{name}.pem | "
            f"pki --issue --cacert {base}/ca.pem --cakey {base}/ca.key --lifetime 30 "
            f"--dn 'CN={ident}' --san {ident} --outform pem > {etc}/x509/{name}.pem")
        shutil.copy(f"{base}/ca.pem", f"{etc}/x509ca/ca.pem")


def connection(name, local_addrs, remote_addrs, cert, local_id, remote_id=None,
               body=""):
    """A swanctl.conf connection, certificates both ways (@remote_id None:
    any the CA signed)."""
    remote = f"\n\t\t\tid = {remote_id}" if remote_id else ""
    addrs = (f"\t\tlocal_addrs = {local_addrs}\n" if local_addrs else "") + \
        (f"\t\tremote_addrs = {remote_addrs}\n" if remote_addrs else "")
    return f"""	{name} {{
		version = 2
{addrs}		local {{
			auth = pubkey
			certs = {cert}.pem
			id = {local_id}
		}}
		remote {{
			auth = pubkey{remote}
		}}
{body}	}}
"""
