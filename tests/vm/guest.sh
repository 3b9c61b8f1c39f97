#!/bin/bash
# Runs inside the VM: every in-kernel test for this kernel.
set -u
cd "$(dirname "$0")/../.."
kver=$(uname -r)
ko=build/$kver/les.ko
out=${VM_OUTDIR:-/tmp/les-out}/$kver
mkdir -p "$out"
if [ ! -f "$ko" ]; then
	echo "not ok 1 - les.ko for $kver was built"
	exit 1
fi
# A hook on each of the points the tests hook (nft in the namespaces, the
# PEP's FORWARD hook), here in the VM's own namespace for the whole run: the
# static keys that say "a hook is registered" then never change, and no
# kernel text is patched while packets flow.  Under QEMU's TCG a CPU once
# ran the int3 of a jump-label patch in ip_rcv() after the patch was done
# ("Oops: int3", Debian 6.12, as `nft` added a table mid-transfer).
nft -f - <<'EOF' || echo "# guest: netfilter hooks not pinned"
table inet lesvm_pin {
	chain pin_pre { type filter hook prerouting priority 0; }
	chain pin_in { type filter hook input priority 0; }
	chain pin_fwd { type filter hook forward priority 0; }
	chain pin_out { type filter hook output priority 0; }
	chain pin_post { type filter hook postrouting priority 0; }
}
EOF
exec /usr/bin/python3 tests/vm/les_tests.py --ko "$ko" --out "$out" ${LES_ONLY:+--only "$LES_ONLY"}
