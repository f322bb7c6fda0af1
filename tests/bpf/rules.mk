# Test helpers of the eBPF probes (tests/integration/bpf_*.sh): the probe
# driver, the workload, and stand-ins that export the real NCCL/CUDA names.
# The stand-ins are built -O0 so their entry points start with `push %rbp`
# like the real libnccl/libtorch ones (x86 uprobes emulate it; an optimised
# stub starts with `xor`/`ret`, which is single-stepped and 8x slower).
BPFT := $(B)/tests/bpf

$(BPFT)/lib/libnccl.so.2: tests/bpf/fake_nccl.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) -O0 -g -fPIC -shared -fno-omit-frame-pointer -Wl,-soname,libnccl.so.2 $< -o $@

$(BPFT)/lib/libcudart.so.13: tests/bpf/fake_cuda.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) -O0 -g -fPIC -shared -fno-omit-frame-pointer -Wl,-soname,libcudart.so.13 $< -o $@

$(BPFT)/workload: tests/bpf/workload.c $(BPFT)/lib/libnccl.so.2 $(BPFT)/lib/libcudart.so.13
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) -std=gnu11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -pthread $< -o $@ \
		$(BPFT)/lib/libnccl.so.2 $(BPFT)/lib/libcudart.so.13 -Wl,-rpath,$(abspath $(BPFT)/lib) -ldl

$(BPFT)/probe_driver: $(B)/obj/tests/bpf/probe_driver.o $(LIB_AGENT) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link)

TEST_EXTRA += $(BPFT)/workload $(BPFT)/probe_driver $(BPFT)/lib/libnccl.so.2 $(BPFT)/lib/libcudart.so.13
