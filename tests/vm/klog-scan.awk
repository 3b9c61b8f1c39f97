# klog-scan.awk - the lines of a kernel log that report a problem.
#
#   awk -v part=boot|command -v started=0|1 -f klog-scan.awk LOG
#
# A line that names a kernel problem is a hit.  "part" picks the log before
# the marker vm-run.sh's guest wrapper writes ("vm-run: command starts") or
# after it; started=1 says the log has no marker and is all command.
#
# Two kinds of report are what fault injection provokes on purpose, not bugs:
# - an allocation that fails reports itself with a stack (warn_alloc: "page
#   allocation failure", "vmalloc error"); what the failure then breaks shows
#   as KASAN, WARNING, BUG...  So the Call Trace of such a report, three lines
#   below its first, is not a hit.
# - the kernel's jump_label code, when an allocation fails as a module loads,
#   WARNs "Failed to allocate memory: jump_label may not work properly" and
#   then WARNs once more for each of the module's static keys it had not yet
#   linked as it undoes the half-added module; the load fails cleanly.  Each
#   WARNING of those two functions (jump_label_module_notify,
#   jump_label_del_module) within 150 lines of the last one of the episode,
#   and the Call Trace within 20 lines of it, is not a hit; any other
#   jump_label WARNING is.

BEGIN {
	# Case sensitive on purpose: "report a bug", "This is not a bug." are
	# boot noise.
	bad = "WARNING:|BUG:|kernel BUG|Oops|general protection|KASAN|UBSAN|" \
	    "suspected memory leak|unreferenced object|" \
	    "possible circular locking|inconsistent lock state|refcount_t|" \
	    "list_del corruption|list_add corruption|RCU stall|" \
	    "rcu: .*detected stall|self-detected stall|Call Trace|soft lockup|" \
	    "hard LOCKUP|blocked for more than|Kernel panic"
}

/vm-run: command starts/ { started = 1; next }
(part == "boot") == (started == 1) { next }
/(page allocation failure|vmalloc error): / { alloc = NR }
/Failed to allocate memory: jump_label may not work properly/ { jl = NR }
/WARNING: .* at kernel\/jump_label\.c:[0-9]+ jump_label_(module_notify|del_module)\+/ &&
    jl && NR - jl <= 150 { jl = jlw = NR; next }
$0 ~ bad {
	if ($0 ~ /Call Trace/ && (alloc && NR - alloc <= 4 || jlw && NR - jlw <= 20))
		next
	print
}
