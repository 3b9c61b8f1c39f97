# SPDX-License-Identifier: GPL-2.0
#
# Layered ESP.  `make` builds les.ko for the running kernel, `make KVER=...`
# for any kernel whose headers are installed.  `make check` runs every test
# (in VMs, see README.md); `make demo` runs the demo; `make bench` measures.

KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build
BUILD := build/$(KVER)
W ?= 1
# The version of les.ko, lesctl and the packages: debian/changelog's.
LES_VERSION := $(shell tools/les-version.sh)

# Kernels the tests boot: the newest installed Debian 6.1 (bookworm) and 6.12
# (bookworm-backports) with headers and an image.
newest = $(shell cd /lib/modules 2>/dev/null && for k in $(1); do \
	[ -d $$k/build ] && [ -f /boot/vmlinuz-$$k ] && echo $$k; done | sort -V | tail -n1)
TEST_KVERS ?= $(call newest,6.1.*-amd64) $(call newest,6.12.*-amd64)
# The debug kernel (KASAN, kmemleak, lockdep), once tools/debug-kernel.sh
# has built and installed it.
DEBUG_KVER ?= $(shell tools/debug-kernel.sh --rel 2>/dev/null)
BUILD_KVERS = $(TEST_KVERS) $(DEBUG_KVER)

KSRC := $(wildcard kernel/*.c kernel/*.h) Kbuild

.PHONY: all module modules lesctl check check-host lint sparse checkpatch demo bench \
	install uninstall clean setup debug-kernel deb

all: module lesctl

# Out-of-tree builds write objects next to the sources; a tree of links per
# kernel keeps the builds for several kernels apart.
$(BUILD)/.links: $(KSRC)
	@mkdir -p $(BUILD)/kernel
	@ln -sf $(CURDIR)/Kbuild $(BUILD)/Kbuild
	@for f in kernel/*.c kernel/*.h; do ln -sf $(CURDIR)/$$f $(BUILD)/$$f; done
	@touch $@

module: $(BUILD)/.links
	@test -d $(KDIR) || { echo "no kernel headers in $(KDIR): install linux-headers-$(KVER) or pass KVER=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(BUILD) W=$(W) LES_VERSION=$(LES_VERSION) modules

# Every test kernel, warning-free (W=1) and sparse-clean (C=1).
modules:
	@test -n "$(TEST_KVERS)" || { echo "no test kernel headers: run tools/setup-host.sh" >&2; exit 1; }
	@mkdir -p build
	@set -e; for k in $(BUILD_KVERS); do \
		echo "== les.ko for $$k"; \
		$(MAKE) --no-print-directory module KVER=$$k C=$(C) > build/build-$$k.log 2>&1 || \
			{ cat build/build-$$k.log; exit 1; }; \
		if grep -E "warning:|error:" build/build-$$k.log; then echo "build for $$k is not clean" >&2; exit 1; fi; \
	done

lesctl:
	$(MAKE) -C tools/lesctl

checkpatch:
	tools/checkpatch.sh

sparse:
	$(MAKE) modules C=2

lint: sparse checkpatch

setup:
	tools/setup-host.sh

# Build (once per configuration, cached in /var/cache/les) and install it.
debug-kernel:
	tools/debug-kernel.sh

# FULL=1: every test on every kernel (docs/testing.md).
check:
	FULL=$(FULL) tests/run.sh

# The tests that need no VM: the docs' names, codec, C-vs-Python, self-test,
# lesctl, fuzzing.
check-host: lesctl
	/usr/bin/python3 tools/doccheck.py
	/usr/bin/python3 -m pytest -q tests/host
	tests/host/lesctl.sh
	tests/fuzz/run.sh

demo:
	FULL=$(FULL) tools/demo.sh

bench:
	tests/bench/run.sh

install: module
	install -D -m 0644 $(BUILD)/les.ko $(DESTDIR)/lib/modules/$(KVER)/updates/les.ko
	install -D -m 0644 packaging/les.conf $(DESTDIR)/etc/modules-load.d/les.conf
	install -D -m 0644 packaging/les-modprobe.conf $(DESTDIR)/etc/modprobe.d/les.conf
	test -n "$(DESTDIR)" || depmod -a $(KVER)
	$(MAKE) -C tools/lesctl install DESTDIR=$(DESTDIR)

uninstall:
	rm -f $(DESTDIR)/lib/modules/$(KVER)/updates/les.ko \
	      $(DESTDIR)/etc/modules-load.d/les.conf $(DESTDIR)/etc/modprobe.d/les.conf
	test -n "$(DESTDIR)" || depmod -a $(KVER)

# les-dkms, lesctl and strongswan-les in build/deb/, built by
# dpkg-buildpackage from a copy of the tree (every file git knows of), then
# checked by lintian (tools/deb.sh).
deb:
	tools/deb.sh

clean:
	rm -rf build
	-$(MAKE) -C tools/lesctl clean

print-test-kvers:
	@echo $(TEST_KVERS)

print-debug-kver:
	@echo $(DEBUG_KVER)
