#!/bin/bash
# vm-run.sh - run one command as root inside a throw-away VM booted with one of
# the Debian kernels installed on this host (virtme-ng + QEMU/TCG).
#
# Usage:
#   tests/vm/vm-run.sh KVER OUTDIR -- COMMAND [ARG...]
#
#   KVER    a kernel installed on the host: /boot/vmlinuz-KVER and
#           /lib/modules/KVER must exist (e.g. 6.1.0-56-amd64,
#           6.12.117+deb12-amd64).
#   OUTDIR  host directory (created if missing) that the guest can write to at
#           the same path; everything else the guest writes is discarded.
#   COMMAND runs as root in the guest, cwd = repository root, stdin
#           /dev/null, stderr merged into stdout.  It sees
#           VM_KVER, VM_OUTDIR, VM_REPO and every LES_* variable of the caller.
#
# Files left in OUTDIR:
#   output-KVER.log   what COMMAND printed (also copied to our stdout)
#   console-KVER.log  the guest's serial console: the whole kernel log from
#                     boot, including a panic that kills the guest
#   dmesg-KVER.txt    `dmesg` taken by the guest right after COMMAND ended
#   .vm-run/          the generated guest wrapper and COMMAND's exit status
#
# Exit status:
#   COMMAND's status if it failed; otherwise
#   0    COMMAND succeeded and the kernel log is clean
#   97   COMMAND succeeded but the kernel log shows a problem (lines printed)
#   124  timeout (VM_TIMEOUT)
#   125  the VM did not boot or died before COMMAND finished (panic, ...)
#   2    usage error
#
# Environment:
#   VM_TIMEOUT   seconds for the whole run, boot included (default 1500).
#                COMMAND gets a guest-side `timeout` a little shorter, so that a
#                hung test still leaves dmesg (with a sysrq-w task dump)
#                behind; QEMU is killed if even that does not end the VM.
#   VM_MEMORY    guest memory (default 2G)
#   VM_CPUS      guest vCPUs (default 2)
#   VM_CPU       QEMU CPU model (default max, see below)
#   VM_APPEND    extra kernel command line arguments (space separated)
#   VM_DMESG_IGNORE  extended regex; matching kernel log lines are not
#                treated as problems
#   VM_LOCK      lock file serializing VM runs (default /tmp/les-vm-run.lock;
#                empty: no locking).  Two TCG guests on a 2-core host slow
#                each other down enough to provoke spurious RCU stall reports.
#   VNG          virtme-ng binary (default: vng from PATH)
#
# ---------------------------------------------------------------------------
# What was checked on this host (Debian bookworm, 2 cores, no usable KVM,
# QEMU 7.2, virtme-ng 1.42), in guests started by this script:
#
# * Boot: `--disable-kvm` is mandatory here (KVM crashes QEMU).  Without KVM
#   vng already picks `-machine q35 -cpu max`; we pass `-cpu max` again
#   (last -cpu wins) so that a future vng default cannot silently drop it.
#   Under TCG `-cpu max` exposes aes, pclmulqdq, avx2, vaes, sse4_2, ssse3:
#   aesni_intel and ghash_clmulni_intel load, and rfc4106(gcm(aes)) resolves
#   to rfc4106-gcm-aesni on 6.1 and rfc4106-gcm-aesni-avx (prio 500) on 6.12,
#   i.e. the same code paths as on real x86.  MTTCG runs 2 vCPUs on 2 threads.
# * Boot cost, wall time from start to poweroff for a trivial command:
#   6.1.0-56-amd64 13-17 s, 6.12.117+deb12-amd64 13-19 s (the guest reaches
#   the command 9-15 s after kernel start).  `--force-9p` skips vng's doomed
#   virtiofsd attempts (~3 s).  A probe running ping, iperf3 -t 3, tcpdump,
#   nft and a few dozen ip commands took 28-38 s in all.
# * The guest's / is the host's / over 9p, read-only, with tmpfs overlays on
#   /etc /lib /home /opt /srv /usr /var /tmp (writes vanish at poweroff).  The
#   repository is readable but NOT writable ("Read-only file system"): build
#   on the host beforehand and write results to OUTDIR (9p, read-write; it may
#   be under /tmp or inside the repository).  Modules come from the host's
#   /lib/modules/KVER (vng adds an initramfs with the 9p/virtio modules).
# * Works in the guest, both kernels: `ip netns add`, `ip link add v0 netns a
#   type veth peer name v1 netns b`, ping between namespaces, `modprobe esp4
#   esp6 xfrm_user xfrm_interface nf_tables aesni_intel`, nft tables/chains,
#   `tcpdump -w $VM_OUTDIR/x.pcap` (the file lands on the host), iperf3 between
#   namespaces over veth (1.5-1.7 Gbit/s under TCG), ethtool, tc, ss, strace,
#   perf, /usr/bin/python3 3.11 with Debian's python3-cryptography 38.0.4.
#   The host's pyenv python (cryptography 48) is not on the guest's PATH.
#   `ping` needs the host package iputils-ping (not in tools/setup-host.sh;
#   installed here by hand).  socat and bpftool are absent.
# * Out-of-tree modules: CONFIG_MODULE_SIG=y but not forced;
#   /sys/module/module/parameters/sig_enforce is N and lockdown is [none], so
#   `insmod some.ko` of an unsigned module works on both kernels (tested with
#   a module built by `make -C /lib/modules/KVER/build M=...` on the host, and
#   with esp4.ko stripped of its signature).  dmesg then says "loading
#   out-of-tree module taints kernel." and "module verification failed:
#   signature and/or required key missing - tainting kernel"; tainted = 12288
#   (O+E).  Neither is treated as a problem below.  6.12's in-tree modules
#   are .ko.xz, 6.1's are plain .ko.
# * xfrm replay window: with `flag esn`, `replay-window 4096` is accepted
#   ("replay_window 4096, bitmap-length 128" in `ip -s xfrm state`), without
#   `flag esn` too (iproute2 then sends the ESN-style attribute).  Anything
#   above 4096 is refused by iproute2 6.1 and 6.15 ("Error: replay-window
#   (32768) > XFRMA_REPLAY_ESN_MAX (4096).") and by the kernel itself
#   (verify_replay(): "ESN bitmap length must be <= 128"): 4096 is the hard
#   maximum of a Linux SA's replay window on every kernel.
# * `dir in|out` on states: bookworm's iproute2 6.1.0 does not know it
#   ("Error: argument "dir" is wrong: unknown").  iproute2 6.15 from
#   bookworm-backports does (it runs on bookworm's libraries; extracting the
#   .deb is enough to try it).  6.12 honours it: `ip xfrm state` shows
#   "dir in"/"dir out", and `dir out` with a replay window is refused
#   ("Error: Replay window should be 0 for output SA.").  6.1 SILENTLY
#   IGNORES the attribute (the state is added without a direction); and
#   `dir out flag esn` without replay-window fails on 6.1 with "ESN replay
#   window must be > 0." because only 6.10+ allows a 0 window for out SAs.
# * Kernel log check: a clean boot of either kernel has none of the patterns
#   below; tested that a WARN_ON (6.12), a NULL dereference Oops (6.1), an RCU
#   stall from a module spinning with preemption off (6.12) are caught, that a
#   panic (sysrq c) ends the VM at once and is reported from the console log
#   (exit 125), and that both timeouts work (guest side: exit 124 with dmesg;
#   host side: QEMU "terminating on signal 15 from pid ... (timeout)").
# * vng and stdio: CI has no tty and no stdin; tested under `setsid ...
#   </dev/null` with output to a pipe and to a file.  vng itself is always run
#   with </dev/null and stdout/stderr on pipes: never give it a regular file
#   as stdout or stderr, QEMU reopens /proc/self/fd/1 and /proc/self/fd/2
#   with O_TRUNC and writes from offset 0, clobbering the file; if they cannot
#   be opened (closed fd, socket) vng falls back to a mode that loses the
#   guest's stderr.  A tty on stdin would be put in raw mode by QEMU.
# * The guest command travels on the kernel command line (base64, 2048 byte
#   limit on x86), so only `/bin/bash WRAPPER` is passed; the real command is
#   in the wrapper file written to OUTDIR/.vm-run/.
# ---------------------------------------------------------------------------
set -uo pipefail

usage() {
	sed -n '2,/^# Files left/{/^# Files left/d;s/^# \{0,1\}//;p;}' "$0" >&2
	exit 2
}

[ $# -ge 4 ] && [ "$3" = "--" ] || usage
kver=$1
outdir=$2
shift 3

VM_TIMEOUT=${VM_TIMEOUT:-1500}
VM_MEMORY=${VM_MEMORY:-2G}
VM_CPUS=${VM_CPUS:-2}
VM_CPU=${VM_CPU:-max}
VM_APPEND=${VM_APPEND:-}
VM_DMESG_IGNORE=${VM_DMESG_IGNORE:-}
VM_LOCK=${VM_LOCK-/tmp/les-vm-run.lock}
VNG=${VNG:-vng}

die() { echo "vm-run: $*" >&2; exit 2; }

case $kver in
*[!A-Za-z0-9._+-]* | "") die "bad kernel version '$kver'" ;;
esac
kernel=/boot/vmlinuz-$kver
[ -r "$kernel" ] || die "no $kernel"
[ -d "/lib/modules/$kver" ] || die "no /lib/modules/$kver"
case $VM_TIMEOUT in
'' | *[!0-9]*) die "VM_TIMEOUT must be a number of seconds" ;;
esac
[ "$VM_TIMEOUT" -ge 30 ] || die "VM_TIMEOUT must be at least 30"
command -v "$VNG" >/dev/null || die "virtme-ng ($VNG) not found"
command -v timeout >/dev/null || die "timeout (coreutils) not found"

mkdir -p "$outdir" || die "cannot create $outdir"
outdir=$(cd "$outdir" && pwd -P) || die "cannot enter $outdir"
# vng's --rwdir syntax reserves '=' and the kernel command line splits on
# blanks: keep OUTDIR boring.
case $outdir in
*[!A-Za-z0-9._/+-]*) die "OUTDIR '$outdir' must match [A-Za-z0-9._/+-]*" ;;
/) die "OUTDIR must not be /" ;;
esac

repo=$(cd "$(dirname "$0")/../.." && pwd -P)
state=$outdir/.vm-run
mkdir -p "$state" || die "cannot create $state"
wrapper=$state/guest-$kver.sh
rcfile=$state/rc-$kver
outlog=$outdir/output-$kver.log
console=$outdir/console-$kver.log
dmesgf=$outdir/dmesg-$kver.txt
rm -f "$rcfile" "$outlog" "$console" "$dmesgf"

# The guest-side timeout leaves time to boot, dump dmesg and power off.
margin=90
[ $((VM_TIMEOUT / 2)) -lt $margin ] && margin=$((VM_TIMEOUT / 2))
guest_timeout=$((VM_TIMEOUT - margin))

# ---- what the guest cannot build in time ------------------------------------
# clang under emulation takes longer than the test that needs it: the tc
# program of `accel outer ip options`, built here into OUTDIR.
clang -target bpf -O2 -I/usr/include/x86_64-linux-gnu -c "$repo/tests/vm/ipopt.bpf.c" \
	-o "$outdir/ipopt.bpf.o" 2>"$outdir/ipopt.bpf.log" ||
	echo "vm-run: tests/vm/ipopt.bpf.c did not build: $outdir/ipopt.bpf.log" >&2

# ---- the guest wrapper ------------------------------------------------------
{
	echo '#!/bin/bash'
	echo '# generated by tests/vm/vm-run.sh; runs inside the guest'
	printf 'export VM_KVER=%q VM_OUTDIR=%q VM_REPO=%q\n' "$kver" "$outdir" "$repo"
	printf 'guest_timeout=%q rcfile=%q dmesgf=%q\n' "$guest_timeout" "$rcfile" "$dmesgf"
	# Pass the caller's LES_* variables through.
	while IFS= read -r v; do
		printf 'export %s=%q\n' "$v" "${!v}"
	done < <(compgen -e | grep '^LES_' || true)
	printf 'cmd=('
	printf ' %q' "$@"
	printf ' )\n'
	cat <<'EOF'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LC_ALL=C.UTF-8
exec 2>&1 </dev/null
cd "$VM_REPO" || exit 125
echo "vm-run: guest $(uname -r) up after $(cut -d' ' -f1 /proc/uptime)s," \
	"$(nproc) cpus, cpu flags:" \
	"$(grep -m1 '^flags' /proc/cpuinfo | grep -ow -e aes -e pclmulqdq -e avx2 -e vaes | tr '\n' ' ')"
echo 1 > /proc/sys/kernel/sysrq 2>/dev/null
# Debug kernels: what boot left unreferenced is not the tests' to answer for.
[ -w /sys/kernel/debug/kmemleak ] && echo clear > /sys/kernel/debug/kmemleak
# Where boot ends and the command's time begins, for the log check.
echo "vm-run: command starts" > /dev/kmsg
SECONDS=0
timeout -k 15 "$guest_timeout" "${cmd[@]}"
rc=$?
if { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [ "$SECONDS" -ge "$guest_timeout" ]; then
	echo "vm-run: command timed out after ${guest_timeout}s in the guest; dumping blocked tasks"
	echo w > /proc/sysrq-trigger 2>/dev/null
	sleep 2
	rc=124
fi
# kmemleak only exists on debug kernels; Debian's have none.  An object
# must stay unreferenced across scans (and be older than 5 s) to be reported:
# scan, wait, scan.  A report lands in dmesg ("suspected memory leaks").
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan > /sys/kernel/debug/kmemleak
	sleep 6
	echo scan > /sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak
fi
dmesg > "$dmesgf"
echo "$rc" > "$rcfile"
sync
exit "$rc"
EOF
} > "$wrapper" || die "cannot write $wrapper"
chmod +x "$wrapper"

# ---- one VM at a time ---------------------------------------------------------
if [ -n "$VM_LOCK" ] && command -v flock >/dev/null; then
	exec 9>>"$VM_LOCK" || die "cannot open $VM_LOCK"
	if ! flock -n 9; then
		echo "vm-run: waiting for another VM to finish ($VM_LOCK)" >&2
		flock 9
	fi
fi

# ---- boot -------------------------------------------------------------------------
vng_args=(
	--run "$kernel"
	--disable-kvm
	--force-9p
	--memory "$VM_MEMORY"
	--cpus "$VM_CPUS"
	--qemu-opts="-cpu $VM_CPU"
	--rwdir "$outdir"
	--name "vm-run-$$"
	-v
)
# A kernel with 9p built in mounts the root itself, with rootflags: cache
# it (cache=loose), since nothing changes the host's / under a test run.
# Without a cache every path lookup is a round trip to QEMU's 9p server;
# with it the debug kernel boots in 53 s instead of 88 and execs 2x faster.
# (Debian's kernels mount it from vng's initramfs, whose options are fixed.)
if grep -qs '/9p\.ko' "/lib/modules/$kver/modules.builtin"; then
	VM_APPEND="rootflags=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose $VM_APPEND"
fi
# KASAN reports only its first finding unless told otherwise: a report the
# kernel makes while booting (an upstream bug under TCG, before any test
# code runs) must not hide one the tests would cause.
# And 4-level paging: under TCG `-cpu max` offers LA57, and 6.1.192
# identifies the boot CPU with interrupts on (arch_cpu_finalize_init);
# while it does, the LA57 flag is briefly clear, KASAN takes the 5-level
# direct map for wild, and every interrupt in that window is a report (once
# seen: 20,000 reports, no boot in 3 minutes).
if grep -qs '^CONFIG_KASAN=y' "/lib/modules/$kver/build/.config"; then
	VM_APPEND="kasan_multi_shot no5lvl $VM_APPEND"
fi
read -r -a append_args <<< "$VM_APPEND"
for a in "${append_args[@]}"; do
	vng_args+=(--append "$a")
done
vng_args+=(--exec "/bin/bash $wrapper")

echo "vm-run: booting $kver (timeout ${VM_TIMEOUT}s): $*" >&2
start=$(date +%s)
# -v sends the serial console (all kernel messages, loglevel 7) to vng's
# stderr; the command's output comes on stdout.  Both are pipes (see above).
# timeout puts vng, virtme-run and qemu in one process group and kills it all.
cd "$repo" || die "cannot enter $repo"
# Named pipes, not process substitution, so that we can wait for the readers.
cfifo=$state/console-$kver.fifo
ofifo=$state/output-$kver.fifo
rm -f "$cfifo" "$ofifo"
mkfifo "$cfifo" "$ofifo" || die "cannot create fifos in $state"
cat < "$cfifo" > "$console" &
catpid=$!
tee "$outlog" < "$ofifo" &
teepid=$!
timeout -k 20 "$VM_TIMEOUT" "$VNG" "${vng_args[@]}" </dev/null >"$ofifo" 2>"$cfifo" &
tpid=$!
# If we are told to stop, tell timeout: it passes the signal on to vng/qemu.
interrupted=
trap 'interrupted=1; kill -TERM "$tpid" 2>/dev/null' TERM INT HUP
vng_rc=
while [ -z "$vng_rc" ] || kill -0 "$tpid" 2>/dev/null; do
	wait "$tpid"
	vng_rc=$?
done
trap - TERM INT HUP
end=$(date +%s)
wait "$catpid" "$teepid"
rm -f "$cfifo" "$ofifo"
echo "vm-run: $kver: VM exited with status $vng_rc after $((end - start))s" >&2

status=0
if [ -n "$interrupted" ]; then
	echo "vm-run: interrupted" >&2
	status=130
elif [ -s "$rcfile" ]; then
	status=$(cat "$rcfile")
	[ "$status" = 124 ] && echo "vm-run: TIMEOUT: command killed in the guest after ${guest_timeout}s" >&2
elif [ "$vng_rc" = 124 ] || [ "$vng_rc" = 137 ] || [ $((end - start)) -ge "$VM_TIMEOUT" ]; then
	echo "vm-run: TIMEOUT: VM killed after ${VM_TIMEOUT}s" >&2
	status=124
else
	echo "vm-run: ERROR: the VM ended before the command finished (boot failure or panic?)" >&2
	status=125
fi

# ---- kernel log check ----------------------------------------------------------------
log=$dmesgf
if [ ! -s "$log" ]; then
	echo "vm-run: no $dmesgf; checking the serial console log instead" >&2
	log=$console
fi
if [ -s "$log" ]; then
	# What fault injection provokes on purpose is not a hit: klog-scan.awk.
	#
	# The kernel log from before the command started (the marker the
	# wrapper writes) is the kernel's own boot, with no module or test of
	# ours loaded yet: what it reports there is shown, as an upstream
	# problem, and does not fail the run.  A log without the marker (the
	# command never started) is checked whole.
	started=1
	grep -qF 'vm-run: command starts' "$log" && started=0
	scan() {	# scan boot|command: the hits of that part of the log
		awk -v part="$1" -v started="$started" \
			-f "$repo/tests/vm/klog-scan.awk" "$log" |
			{ if [ -n "$VM_DMESG_IGNORE" ]; then grep -Ev -- "$VM_DMESG_IGNORE"; else cat; fi; } || true
	}
	boot_hits=$(scan boot)
	if [ -n "$boot_hits" ]; then
		echo "vm-run: NOTE: the kernel reported a problem while booting, before the command ran (not counted):" >&2
		printf '%s\n' "$boot_hits" | head -n 60 | sed 's/^/vm-run:   boot: /' >&2
	fi
	hits=$(scan command)
	if [ -n "$hits" ]; then
		echo "vm-run: KERNEL LOG PROBLEM in $log:" >&2
		printf '%s\n' "$hits" | head -n 200 | sed 's/^/vm-run:   /' >&2
		first=$(printf '%s\n' "$hits" | head -n 1)
		echo "vm-run: first report in context:" >&2
		grep -F -m1 -B2 -A30 -- "$first" "$log" | sed 's/^/vm-run: | /' >&2
		[ "$status" = 0 ] && status=97
	fi
else
	echo "vm-run: no kernel log captured at all" >&2
	[ "$status" = 0 ] && status=125
fi

if [ "$status" = 125 ] || { [ "$status" = 124 ] && [ ! -s "$rcfile" ]; }; then
	echo "vm-run: last console lines ($console):" >&2
	tail -n 40 "$console" | sed 's/^/vm-run:   /' >&2
fi
echo "vm-run: $kver: exit status $status" >&2
exit "$status"
