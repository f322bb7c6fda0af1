# NVML test helpers (issue 29): the NVML test double (tests/nvml/double.c, a
# libnvidia-ml stand-in with scripted values) and nvml-read, the GPU check's
# reader of the real NVML (tests/gpu/nvml_read.c). No NVIDIA headers needed.
NVML_DOUBLE   := $(B)/tests/libnvml-double.so
NVML_DOUBLE14 := $(B)/tests/libnvml-double-cuda14.so
NVML_READ     := $(B)/tests/nvml/nvml-read
TEST_EXTRA    += $(NVML_DOUBLE) $(NVML_DOUBLE14) $(NVML_READ)

# The double defines the NVML functions without prototypes of ours.
$(B)/obj/tests/nvml/double.o: ALL_CFLAGS += -fvisibility=hidden -Wno-missing-prototypes

$(NVML_DOUBLE): $(B)/obj/tests/nvml/double.o
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_LDFLAGS) -shared -o $@ $^

# The same without the calls CUDA 13 deprecated (a driver past CUDA 14).
$(B)/obj/tests/nvml/double14.o: tests/nvml/double.c | $(GEN_HEADERS)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -fvisibility=hidden -Wno-missing-prototypes \
		-DNVML_DOUBLE_CUDA14 -c $< -o $@

$(NVML_DOUBLE14): $(B)/obj/tests/nvml/double14.o
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_LDFLAGS) -shared -o $@ $^

$(NVML_READ): $(B)/obj/tests/gpu/nvml_read.o $(B)/obj/agent/hw/nvml.o
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl
