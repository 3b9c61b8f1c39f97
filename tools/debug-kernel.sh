#!/bin/bash
# The debug kernel the VM tests boot beside Debian's own (issue: Debian's
# kernels have no KASAN, kmemleak or lockdep).  Built from Debian's
# linux-source-6.1 with virtme-ng's minimal configuration and
# tests/vm/debug-kernel.config, once per configuration: the build is cached
# under $LES_KERNEL_CACHE (default /var/cache/les), named by a hash of the
# source version, the fragment and the recipe below.  Installed like a Debian
# kernel (/boot/vmlinuz-REL, /lib/modules/REL with its build tree), so the
# Makefile and tests/vm/vm-run.sh treat it as one.
#
#   tools/debug-kernel.sh          build if needed, install, print REL
#   tools/debug-kernel.sh --rel    print REL if installed and current, else fail
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd -P)
frag=$repo/tests/vm/debug-kernel.config
src_tar=/usr/src/linux-source-6.1.tar.xz
cache=${LES_KERNEL_CACHE:-/var/cache/les}
localversion=-lesdebug

[ -r "$src_tar" ] || { echo "debug-kernel: no $src_tar (apt-get install linux-source-6.1)" >&2; exit 1; }
srcver=$(dpkg-query -W -f '${Version}' linux-source-6.1)
# Bump when the way the configuration is made changes.
recipe=1
hash=$( { echo "$srcver $recipe"; cat "$frag"; } | sha256sum | cut -c1-12)
build=$cache/kernel-$hash
src=$cache/linux-source-$srcver

installed_rel() {
	local r
	for r in /lib/modules/*"$localversion"; do
		[ -f "$r/les-debug-config" ] && [ "$(cat "$r/les-debug-config")" = "$hash" ] &&
			[ -f "/boot/vmlinuz-${r##*/}" ] && { echo "${r##*/}"; return 0; }
	done
	return 1
}

if [ "${1:-}" = --rel ]; then
	installed_rel
	exit
fi
if rel=$(installed_rel); then
	echo "$rel"
	exit 0
fi

log=$cache/kernel-$hash.log
mkdir -p "$cache"
if [ ! -f "$build/.les-built" ]; then
	echo "debug-kernel: building $hash from linux-source $srcver (log: $log)" >&2
	if [ ! -f "$src/Makefile" ]; then
		rm -rf "$src" "$cache/linux-source-6.1"
		tar -C "$cache" -xf "$src_tar"
		mv "$cache/linux-source-6.1" "$src"
	fi
	mkdir -p "$build"
	{
		# An interrupted build of the same configuration goes on where it
		# stopped: make redoes only what is missing.
		if [ ! -f "$build/.les-configured" ]; then
			(cd "$src" && KBUILD_OUTPUT=$build virtme-configkernel --defconfig --custom "$frag")
			# Once more on top: virtme's own lines win over --custom in a choice.
			"$src/scripts/kconfig/merge_config.sh" -m -O "$build" "$build/.config" "$frag"
			make -C "$src" O="$build" olddefconfig
			touch "$build/.les-configured"
		fi
		# What the fragment asks for must be what the kernel got: an option
		# dropped for an unmet dependency would quietly test less.
		missing=$(grep -E '^CONFIG_[A-Z0-9_]+=y$' "$frag" | while read -r want; do
			grep -qx "$want" "$build/.config" || echo "$want"; done)
		if [ -n "$missing" ]; then
			echo "debug-kernel: the configuration lacks:" $missing
			exit 1
		fi
		make -C "$src" O="$build" LOCALVERSION="$localversion" -j"$(nproc)" bzImage modules
	} >"$log" 2>&1 || { tail -n 40 "$log" >&2; echo "debug-kernel: build failed" >&2; exit 1; }
	touch "$build/.les-built"
fi

rel=$(make -s -C "$src" O="$build" LOCALVERSION="$localversion" kernelrelease 2>/dev/null | tail -n1)
rm -rf "/lib/modules/$rel"
make -C "$src" O="$build" LOCALVERSION="$localversion" INSTALL_MOD_PATH=/ modules_install >>"$log" 2>&1
ln -sfn "$build" "/lib/modules/$rel/build"
install -m 0644 "$build/arch/x86/boot/bzImage" "/boot/vmlinuz-$rel"
echo "$hash" > "/lib/modules/$rel/les-debug-config"
echo "$rel"
