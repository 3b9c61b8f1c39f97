#!/bin/bash
# source.sh - print the directory of Debian bookworm's strongSwan source,
# unpacked, patched and configured with Debian's flags; fetch and configure
# it first if the cache does not hold it.
#
# Debian ships no strongSwan headers, and a plugin built without Debian's
# configure flags gets another ABI (--enable-mediation defines ME, which
# shifts ike_sa_t's methods: ../shared/STRONGSWAN.md 1).  Only config.h is
# generated: nothing is compiled.
#
# The source comes from Debian's archive through a private apt sources file,
# so the host's apt configuration is neither needed nor changed.
# deb12u6 (bookworm-security) is listed in the archive's index, but its
# files are not served here (404); u6 adds CVE fixes to u5 (its changelog)
# and the same configure flags.  The headers are u5's: whether a u6 fix
# changed a structure the plugin uses is not verified, and step ike runs
# the plugin in the installed u6 charon.  Cache: $LES_CACHE (default
# /var/cache/les), one directory per version.
set -euo pipefail

version=${SW_DEB_VERSION:-5.9.8-5+deb12u5}
upstream=${version%%-*}
cache=${LES_CACHE:-/var/cache/les}
dir=$cache/strongswan-$version
src=$dir/strongswan-$upstream

if [ -f "$dir/configured" ]; then
	echo "$src"
	exit 0
fi

rm -rf "$dir"
mkdir -p "$dir/apt/lists/partial"
cd "$dir"
echo "deb-src http://deb.debian.org/debian bookworm main" > apt/sources.list
apt_opts=(-o Dir::Etc::SourceList="$dir/apt/sources.list"
	-o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$dir/apt/lists"
	-o Dir::Cache::pkgcache="" -o Dir::Cache::srcpkgcache=""
	-o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update -qq >&2
# apt verifies the .dsc against the archive's signed Sources index.
apt-get "${apt_opts[@]}" source --download-only -qq "strongswan=$version" >&2
tar -xjf "strongswan_$upstream.orig.tar.bz2"
tar -xJf "strongswan_$version.debian.tar.xz" -C "$src"
cd "$src"
while read -r p; do
	case $p in ''|'#'*) continue ;; esac
	patch -s -p1 < "debian/patches/$p"
done < debian/patches/series

# Debian's own CONFIGUREARGS for this architecture, read from debian/rules,
# minus the options whose -dev packages a build host lacks: they only add
# plugins and libraries of their own and change no libcharon structure.
args=$(make -s -f debian/rules --no-print-directory \
	--eval 'les-print-args: ; @echo $(CONFIGUREARGS)' les-print-args)
keep=()
for a in $args; do
	case $a in
	--enable-curl|--enable-ldap|--enable-xauth-pam|--enable-tss-tss2|\
	--enable-tpm|--enable-nm|--with-nm-ca-dir=*|--enable-systemd|\
	--enable-connmark|--enable-forecast|--with-capabilities=*) ;;
	*) keep+=("$a") ;;
	esac
done
printf '%s\n' "${keep[@]}" > "$dir/configure-args"
# dh_auto_configure's own defaults first, as Debian's build passes them.
./configure --prefix=/usr --sysconfdir=/etc --localstatedir=/var \
	--runstatedir=/run --disable-maintainer-mode --disable-dependency-tracking \
	"${keep[@]}" > "$dir/configure.log" 2>&1 ||
	{ tail -20 "$dir/configure.log" >&2; exit 1; }
grep -qE '^#define ME( |$)' config.h || { echo "config.h lacks ME: not Debian's ABI" >&2; exit 1; }
touch "$dir/configured"
echo "$src"
