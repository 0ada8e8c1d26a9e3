# SPDX-License-Identifier: GPL-2.0
#
# mrpin: build the module (Kbuild), the CLI and the selftests; run them in
# a QEMU VM with Soft-RoCE.
#
#   make            build kmod/mrpin.ko, userspace/mrpinctl, selftests
#   make check      mrpinctl's host tests and every selftest in the VM, on
#                   Debian 12's 6.1 (KSERIES=6.12 or 7: another series;
#                   KFLAVOUR=rt: PREEMPT_RT; KFLAVOUR=ofed: NVIDIA OFED's
#                   RDMA stack in place of the inbox one), with short loops
#                   (MRPIN_LOOPS=full: the repetition loops at full length)
#   make check-debug  the same on a debug kernel (KASAN, lockdep, kmemleak,
#                   failslab) built once from linux-source-6.12 and cached
#   make check-all  every kernel series, RT, the debug kernel and the
#                   packaging tests, a VM per CPU over all the kernels,
#                   and a table of the results (what CI runs)
#   make demo       a real RDMA workload in the VM, and what mrpin sees
#   make bench      benchmarks in the VM, with mrpin loaded and unloaded:
#                   instructions counted by a QEMU plugin, and times
#   make profile    where the test kernel spends a command's instructions,
#                   by function and by checker (PROFILE='ARGS' for
#                   scripts/vm-profile.sh; default: 20 runs of /bin/true)
#   make shell      a root shell in the VM with rxe0 up and mrpin loaded
#   make stack      the module built with -fstack-usage: fails when a
#                   function's frame is over 512 bytes (STACK_LIMIT=N)
#   make layers     which file of the module uses which (nm of the
#                   objects): fails when two files use each other, directly
#                   or round a loop
#
# KDIR: the kernel build tree (default: the test kernel's headers when
# KSERIES or KVER names it, else the running kernel's if installed, else the
# test kernel's).  KSERIES (6.1, 6.12, 7), KVER, KFLAVOUR: the test kernel
# (scripts/setup.sh).  A 7.x module is built inside a Debian 13 root
# (KBUILD_ROOT, scripts/in-root.sh).

ifneq ($(KERNELRELEASE),)
include $(src)/Kbuild
else

# $(shell) does not see exported variables before GNU make 4.4: pass the
# series and flavour explicitly.
SETUP := KSERIES=$(KSERIES) KFLAVOUR=$(KFLAVOUR) $(CURDIR)/scripts/setup.sh
export KSERIES KFLAVOUR
ifeq ($(origin KVER),undefined)
KVER := $(shell $(SETUP) kver)
test_kernel_named := $(KSERIES)
else
test_kernel_named := $(KVER)
endif
export KVER
SETUP := KVER=$(KVER) $(SETUP)
KBUILD_ROOT := $(shell $(SETUP) paths | sed -n 's/^KBUILD_ROOT=//p')

# KFLAVOUR=ofed: built against NVIDIA OFED's tree (scripts/ofed.sh), as on
# an OFED host (kmod/ofed.kbuild).
ifeq ($(KFLAVOUR),ofed)
OFA_DIR ?= $(shell $(SETUP) paths | sed -n 's/^OFA_DIR=//p')
export OFA_DIR
endif

ifeq ($(origin KDIR),undefined)
ifneq ($(filter debug ofed,$(KFLAVOUR)),)
KDIR := $(shell $(SETUP) paths | sed -n 's/^KDIR=//p')
else ifneq ($(test_kernel_named)$(KBUILD_ROOT),)
KDIR := /lib/modules/$(KVER)/build
else ifneq ($(wildcard /lib/modules/$(shell uname -r)/build),)
KDIR := /lib/modules/$(shell uname -r)/build
else
KDIR := /lib/modules/$(KVER)/build
endif
endif
export KDIR
IN_ROOT := $(if $(KBUILD_ROOT),$(CURDIR)/scripts/in-root.sh $(KBUILD_ROOT))

VM := $(CURDIR)/scripts/vm-run.sh

.PHONY: all setup module userspace selftests check check-debug check-all \
	demo bench profile shell clean checkpatch stack layers

all: module userspace selftests

setup:
	@$(SETUP) build

module: setup
	$(IN_ROOT) $(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

userspace: setup
	$(MAKE) -C userspace

# selftests/kmod/: the selftests' own module (mrpin_counter.sh loads it),
# built apart from the module DKMS and the packages build.
# Under OFED, also mrpin.ko built against the inbox headers, in
# build/inbox/, which mrpin_peer.sh checks OFED's ib_core refuses.  After
# the module: the test modules include kmod/probes.h, which its build makes.
selftests: setup module
	$(MAKE) -C selftests KSFT_DIR=$$($(SETUP) paths | sed -n 's/^KSFT_DIR=//p')
	$(IN_ROOT) $(MAKE) -C $(KDIR) M=$(CURDIR)/selftests/kmod W=1 modules
ifeq ($(KFLAVOUR),ofed)
	@mkdir -p build/inbox/kmod
	@cp Kbuild build/inbox/ && cp kmod/Kbuild kmod/ofed.kbuild kmod/probe.sh \
		$(filter-out %.mod.c %/probes.h,$(wildcard kmod/*.c kmod/*.h)) build/inbox/kmod/
	$(MAKE) -C $(KDIR) M=$(CURDIR)/build/inbox OFA_DIR=none modules
endif

# The loops that only repeat what they already checked run fewer times
# unless MRPIN_LOOPS=full (each test says so).
MRPIN_LOOPS ?= short
export MRPIN_LOOPS

check: all
	@$(CURDIR)/scripts/check.sh

check-all:
	@$(CURDIR)/scripts/check-all.sh

# KVER and KDIR are exported for the generic kernel: let the debug flavour
# choose its own.  Its VMs have 2 GiB (the tests size what they pin and
# touch by the RAM they find, and every page costs more there) and an hour
# each (MRPIN_VM_TIMEOUT=SECONDS for more).
check-debug:
	@env -u KVER -u KDIR -u KSERIES MRPIN_VM_TIMEOUT=$${MRPIN_VM_TIMEOUT:-3600} \
		MRPIN_VM_MEM=$${MRPIN_VM_MEM:-2G} \
		$(MAKE) --no-print-directory check KFLAVOUR=debug

demo: all
	@$(VM) -- scripts/demo.sh

# The instruction counts (bench.sh's insns) run in a VM of their own, with
# QEMU's counting plugin; the timed sections in one without it.
QEMU_INSNS := $(CURDIR)/build/qemu_insns.so

$(QEMU_INSNS): selftests/qemu_insns.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -Wno-unused-parameter \
		-I"$$($(SETUP) plugin)" -o $@ $<

PROFILE ?= /bin/true

profile: all $(QEMU_INSNS)
	@$(CURDIR)/scripts/vm-profile.sh $(PROFILE)

bench: all $(QEMU_INSNS)
	@$(VM) --insns $(QEMU_INSNS) -- selftests/bench.sh insns
	@$(VM) --timeout 3000 -- selftests/bench.sh throughput memory reads \
		latency procs newcomers owners

shell: all
	@$(VM) --shell

checkpatch: setup
	@$(CURDIR)/scripts/checkpatch.sh

# -fstack-usage through KCFLAGS: kbuild rebuilds every object whose command
# line changed, so the .su files are always those of the objects built.
STACK_LIMIT ?= 512
stack: setup
	$(IN_ROOT) $(MAKE) -C $(KDIR) M=$(CURDIR) W=1 KCFLAGS=-fstack-usage modules
	@$(CURDIR)/scripts/stack.sh $(STACK_LIMIT)

layers: module
	@$(CURDIR)/scripts/layers.sh kmod

clean:
	$(IN_ROOT) $(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || true
	$(IN_ROOT) $(MAKE) -C $(KDIR) M=$(CURDIR)/selftests/kmod clean 2>/dev/null || true
	$(MAKE) -C userspace clean
	$(MAKE) -C selftests clean KSFT_DIR=$$($(SETUP) paths | sed -n 's/^KSFT_DIR=//p')
	rm -rf build

endif

# ---------------------------------------------------------------------------
# Install on a real host (README.md, "Install on a real host").
#
#   make install        the module into /lib/modules/KVER/updates (KVER: the
#                       kernel kmod/mrpin.ko was built for) and depmod,
#                       mrpinctl, its man page and bash completion, its
#                       Prometheus alert rules, the Slurm Prolog/Epilog
#                       (LIBEXECDIR/mrpin/mrpin-slurm), NVIDIA OFED's
#                       openibd hooks (LIBEXECDIR/mrpin/mrpin-openibd),
#                       the systemd units
#                       and the files in /etc.  DESTDIR and
#                       PREFIX (default /usr/local) are honoured; with DESTDIR
#                       depmod runs only on a DESTDIR that holds the kernel's
#                       modules (never on the host's /lib/modules).  Files in
#                       /etc that exist already are kept.
#   make uninstall      remove what make install laid down (same variables),
#                       but files in /etc that were edited
#   make dkms-install   copy the module's source to /usr/src/mrpin-VERSION,
#                       register it with dkms and build and install it for
#                       every kernel whose headers are installed
#                       (DKMS_KERNELS="KVER..." for some); dkms rebuilds it on
#                       every kernel upgrade
#   make dkms-remove    unregister it from dkms and remove its source
#   make deb            mrpin-dkms and mrpin-tools .debs in build/deb/
#   make install-test   the packaging's host-side tests (needs root)
ifeq ($(KERNELRELEASE),)

MRPIN_VERSION := $(shell sed -n 's/^\#define MRPIN_VERSION "\(.*\)"/\1/p' \
	$(CURDIR)/kmod/version.h)
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
RULESDIR ?= $(PREFIX)/share/mrpin/prometheus
LIBEXECDIR ?= $(PREFIX)/libexec
UNITDIR ?= $(PREFIX)/lib/systemd/system
# /sbin may not be in a user's PATH (make install DESTDIR=... as a user).
DEPMOD ?= $(firstword $(wildcard /sbin/depmod /usr/sbin/depmod) depmod)
MODINFO ?= $(firstword $(wildcard /sbin/modinfo /usr/sbin/modinfo) modinfo)
DKMS ?= dkms
DKMS_SOURCE_TREE ?= /usr/src
DKMS_FLAGS ?=
DKMS_KERNELS ?=
PKG := $(CURDIR)/packaging
DKMS_SRC := dkms.conf Kbuild kmod/Kbuild kmod/ofed.kbuild kmod/probe.sh \
	$(sort $(filter-out %.mod.c %/probes.h, \
	$(wildcard $(CURDIR)/kmod/*.c $(CURDIR)/kmod/*.h)))
# /etc files: installed source:destination, and never overwritten.
ETC_FILES := mrpin.conf:mrpin.conf \
	modprobe.d-mrpin.conf:modprobe.d/mrpin.conf \
	modules-load.d-mrpin.conf:modules-load.d/mrpin.conf \
	default-mrpin-export:default/mrpin-export \
	slurm/default-mrpin-slurm:default/mrpin-slurm
UNITS := mrpin.service mrpin-export.service mrpin-export.timer
DEB_DIR := $(CURDIR)/build/deb
DEB_PATHS := Makefile Kbuild dkms.conf README.md kmod userspace packaging debian

.PHONY: install install-module install-tools install-conf install-dkms-src \
	uninstall dkms-install dkms-remove deb setup-pkg install-test

kmod/mrpin.ko:
	$(MAKE) module
userspace/mrpinctl:
	$(MAKE) userspace

install: install-module install-tools install-conf

install-module: kmod/mrpin.ko
	@set -e; kver=$$($(MODINFO) -F vermagic kmod/mrpin.ko | cut -d' ' -f1); \
	dir="$(DESTDIR)/lib/modules/$$kver"; \
	echo "  INSTALL $$dir/updates/mrpin.ko"; \
	install -D -m 0644 kmod/mrpin.ko "$$dir/updates/mrpin.ko"; \
	if [ -z "$(DESTDIR)" ]; then \
		echo "  DEPMOD  $$kver"; $(DEPMOD) -a "$$kver"; \
	elif [ -f "$$dir/modules.builtin" ]; then \
		echo "  DEPMOD  -b $(DESTDIR) $$kver"; $(DEPMOD) -b "$(DESTDIR)" -a "$$kver"; \
	else \
		echo "  (no depmod: $$dir holds no kernel; run depmod -a $$kver on the target)"; \
	fi

install-tools: userspace/mrpinctl
	install -D -m 0755 userspace/mrpinctl $(DESTDIR)$(SBINDIR)/mrpinctl
	install -D -m 0644 userspace/mrpinctl.8 $(DESTDIR)$(MANDIR)/man8/mrpinctl.8
	install -D -m 0644 userspace/mrpinctl.bash-completion \
		$(DESTDIR)$(BASHCOMPDIR)/mrpinctl
	install -D -m 0644 userspace/mrpin.rules.yml \
		$(DESTDIR)$(RULESDIR)/mrpin.rules.yml
	@# slurmd runs it with no search path of its own: mrpinctl by its path.
	install -d -m 0755 $(DESTDIR)$(LIBEXECDIR)/mrpin
	sed 's|^MRPINCTL=mrpinctl$$|MRPINCTL=$(SBINDIR)/mrpinctl|' \
		$(PKG)/slurm/mrpin-slurm >$(DESTDIR)$(LIBEXECDIR)/mrpin/mrpin-slurm
	chmod 0755 $(DESTDIR)$(LIBEXECDIR)/mrpin/mrpin-slurm
	@# openibd runs its hooks with its own search path: the same.
	sed 's|^MRPINCTL=mrpinctl$$|MRPINCTL=$(SBINDIR)/mrpinctl|' \
		$(PKG)/openibd/mrpin-openibd >$(DESTDIR)$(LIBEXECDIR)/mrpin/mrpin-openibd
	chmod 0755 $(DESTDIR)$(LIBEXECDIR)/mrpin/mrpin-openibd

# The units name /usr/sbin/mrpinctl: point them at $(SBINDIR).
install-conf:
	@set -e; for f in $(ETC_FILES); do \
		src=$(PKG)/$${f%%:*}; dst="$(DESTDIR)/etc/$${f#*:}"; \
		if [ -e "$$dst" ]; then \
			echo "  KEEP    $$dst (exists; the new one is $$src)"; \
		else \
			echo "  INSTALL $$dst"; install -D -m 0644 "$$src" "$$dst"; \
		fi; \
	done
	install -d -m 0755 $(DESTDIR)/etc/mrpin.d
	@set -e; for u in $(UNITS); do \
		echo "  INSTALL $(DESTDIR)$(UNITDIR)/$$u"; \
		install -d -m 0755 $(DESTDIR)$(UNITDIR); \
		sed 's|/usr/sbin/mrpinctl|$(SBINDIR)/mrpinctl|g' $(PKG)/systemd/$$u \
			>$(DESTDIR)$(UNITDIR)/$$u; \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$u; \
	done

# The module's source as dkms takes it: $(DESTDIR)$(DKMS_SOURCE_TREE)/mrpin-VERSION.
install-dkms-src:
	@set -e; \
	v=$$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf); \
	if [ "$$v" != "$(MRPIN_VERSION)" ]; then \
		echo "dkms.conf says version $$v, kmod/version.h $(MRPIN_VERSION)" >&2; exit 1; \
	fi; \
	dst="$(DESTDIR)$(DKMS_SOURCE_TREE)/mrpin-$(MRPIN_VERSION)"; \
	echo "  INSTALL $$dst"; \
	rm -rf "$$dst"; \
	for f in $(patsubst $(CURDIR)/%,%,$(DKMS_SRC)); do \
		install -D -m 0644 "$$f" "$$dst/$$f"; \
	done

dkms-install:
	$(MAKE) --no-print-directory dkms-remove
	$(MAKE) --no-print-directory install-dkms-src DESTDIR=
	$(DKMS) add $(DKMS_FLAGS) --sourcetree $(DKMS_SOURCE_TREE) mrpin/$(MRPIN_VERSION)
	@set -e; kernels="$(DKMS_KERNELS)"; \
	[ -n "$$kernels" ] || kernels=$$(for b in /lib/modules/*/build; do \
		[ -d "$$b" ] && basename "$$(dirname "$$b")"; done); \
	[ -n "$$kernels" ] || { echo "dkms-install: no kernel headers in /lib/modules/*/build" >&2; exit 1; }; \
	for k in $$kernels; do \
		echo "$(DKMS) install mrpin/$(MRPIN_VERSION) -k $$k"; \
		rc=0; $(DKMS) install $(DKMS_FLAGS) --sourcetree $(DKMS_SOURCE_TREE) \
			mrpin/$(MRPIN_VERSION) -k "$$k" || rc=$$?; \
		case $$rc in \
		0) ;; \
		77) echo "dkms-install: $$k lacks an option mrpin needs: skipped" ;; \
		*) exit $$rc ;; \
		esac; \
	done

dkms-remove:
	@set -e; \
	if [ -n "$$($(DKMS) status $(DKMS_FLAGS) -m mrpin -v $(MRPIN_VERSION))" ]; then \
		echo "$(DKMS) remove mrpin/$(MRPIN_VERSION) --all"; \
		$(DKMS) remove $(DKMS_FLAGS) --sourcetree $(DKMS_SOURCE_TREE) \
			mrpin/$(MRPIN_VERSION) --all; \
	fi
	rm -rf $(DKMS_SOURCE_TREE)/mrpin-$(MRPIN_VERSION)

setup-pkg:
	@$(SETUP) pkg

# dpkg-buildpackage writes its output next to the source tree: build from a
# copy in build/deb/mrpin-VERSION, so that the .debs land in build/deb/.
deb: setup-pkg
	@set -e; src=$(DEB_DIR)/mrpin-$(MRPIN_VERSION); \
	rm -rf $(DEB_DIR); mkdir -p "$$src"; \
	if git -C $(CURDIR) rev-parse --git-dir >/dev/null 2>&1; then \
		git -C $(CURDIR) ls-files -z --cached --others --exclude-standard \
			-- $(DEB_PATHS) | \
		(cd $(CURDIR) && xargs -0 sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done' sh) | \
		tar -C $(CURDIR) --null -T - -cf - | tar -C "$$src" -xf -; \
	else \
		cp -a $(DEB_PATHS) "$$src/"; \
	fi; \
	echo "  DEB     $(DEB_DIR)"; \
	cd "$$src" && dpkg-buildpackage -us -uc -b >$(DEB_DIR)/build.log 2>&1 || \
		{ tail -n 30 $(DEB_DIR)/build.log >&2; exit 1; }; \
	ls $(DEB_DIR)/*.deb

# What make install laid down; files in /etc only while they are as shipped.
uninstall:
	@set -e; for d in $(DESTDIR)/lib/modules/*/updates; do \
		[ -f "$$d/mrpin.ko" ] || continue; \
		echo "  RM      $$d/mrpin.ko"; rm -f "$$d/mrpin.ko"; \
		rmdir "$$d" 2>/dev/null || true; \
		kver=$$(basename "$$(dirname "$$d")"); \
		if [ -z "$(DESTDIR)" ]; then $(DEPMOD) -a "$$kver"; \
		elif [ -f "$(DESTDIR)/lib/modules/$$kver/modules.builtin" ]; then \
			$(DEPMOD) -b "$(DESTDIR)" -a "$$kver"; fi; \
	done
	rm -f $(DESTDIR)$(SBINDIR)/mrpinctl $(DESTDIR)$(MANDIR)/man8/mrpinctl.8 \
		$(DESTDIR)$(BASHCOMPDIR)/mrpinctl $(DESTDIR)$(RULESDIR)/mrpin.rules.yml \
		$(DESTDIR)$(LIBEXECDIR)/mrpin/mrpin-slurm \
		$(DESTDIR)$(LIBEXECDIR)/mrpin/mrpin-openibd \
		$(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS))
	-rmdir $(DESTDIR)$(RULESDIR) $(DESTDIR)$(PREFIX)/share/mrpin \
		$(DESTDIR)$(LIBEXECDIR)/mrpin 2>/dev/null
	@set -e; for f in $(ETC_FILES); do \
		src=$(PKG)/$${f%%:*}; dst="$(DESTDIR)/etc/$${f#*:}"; \
		if [ -e "$$dst" ] && ! cmp -s "$$src" "$$dst"; then \
			echo "  KEEP    $$dst (edited)"; \
		else \
			rm -f "$$dst"; \
		fi; \
	done
	-rmdir $(DESTDIR)/etc/mrpin.d 2>/dev/null

# What it installs and packages: the module and mrpinctl, not the selftests.
install-test: module userspace setup-pkg
	@$(CURDIR)/scripts/install-test.sh

endif
