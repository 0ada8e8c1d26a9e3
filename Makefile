# SPDX-License-Identifier: GPL-2.0
#
# mrpin: build the module (Kbuild), the CLI and the selftests; run them in
# a QEMU VM with Soft-RoCE.
#
#   make            build kmod/mrpin.ko, userspace/mrpinctl, selftests
#   make check      run every selftest in the VM (KFLAVOUR=rt: PREEMPT_RT)
#   make demo       a real RDMA workload in the VM, and what mrpin sees
#   make bench      benchmarks in the VM, with mrpin loaded and unloaded
#   make shell      a root shell in the VM with rxe0 up and mrpin loaded
#
# KDIR: the kernel build tree (default: the running kernel's if installed,
# else the test kernel's headers).  KVER, KFLAVOUR: the test kernel.

ifneq ($(KERNELRELEASE),)
include $(src)/Kbuild
else

SETUP := $(CURDIR)/scripts/setup.sh
export KFLAVOUR
ifeq ($(origin KVER),undefined)
KVER := $(shell $(SETUP) kver)
endif
export KVER

ifeq ($(origin KDIR),undefined)
ifneq ($(wildcard /lib/modules/$(shell uname -r)/build),)
KDIR := /lib/modules/$(shell uname -r)/build
else
KDIR := /lib/modules/$(KVER)/build
endif
endif
export KDIR

VM := $(CURDIR)/scripts/vm-run.sh

.PHONY: all setup module userspace selftests check demo bench shell clean \
	checkpatch

all: module userspace selftests

setup:
	@$(SETUP) build

module: setup
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

userspace: setup
	$(MAKE) -C userspace

selftests: setup
	$(MAKE) -C selftests KSFT_DIR=$$($(SETUP) paths | sed -n 's/^KSFT_DIR=//p')

check: all
	@$(CURDIR)/scripts/check.sh

demo: all
	@$(VM) -- scripts/demo.sh

bench: all
	@$(VM) --timeout 3000 -- selftests/bench.sh

shell: all
	@$(VM) --shell

checkpatch: setup
	@$(CURDIR)/scripts/checkpatch.sh

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || true
	$(MAKE) -C userspace clean
	$(MAKE) -C selftests clean KSFT_DIR=$$($(SETUP) paths | sed -n 's/^KSFT_DIR=//p')
	rm -rf build

endif
