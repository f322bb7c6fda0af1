# CUPTI test helpers (issue 7): the CUPTI test double, the app that loads
# libargus-cupti.so as the CUDA driver does, and a small agent-side driver
# around source_cupti. All need the CUDA headers (for the record types only).
ifneq ($(wildcard $(CUDA)/include/cupti.h),)

CUPTI_DOUBLE := $(B)/tests/libcupti-double.so
CUPTI_APP    := $(B)/tests/cupti/cupti-app
CUPTI_AGENT  := $(B)/tests/cupti/cupti-agent
TEST_EXTRA   += $(CUPTI_DOUBLE) $(CUPTI_APP) $(CUPTI_AGENT)

# The CUPTI unit tests use the toolkit headers for the record types.
$(B)/obj/tests/unit/test_cupti_%.o: ALL_CFLAGS += -I$(CUDA)/include

$(B)/obj/tests/cupti/%.o: tests/cupti/%.c | $(GEN_HEADERS)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -fvisibility=hidden -I$(CUDA)/include -c $< -o $@

$(CUPTI_DOUBLE): $(B)/obj/tests/cupti/double.o $(B)/obj/tests/cupti/double_kineto.o
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_LDFLAGS) -shared -o $@ $^ -ljson-c -lz -lm -ldl

$(CUPTI_APP): $(B)/obj/tests/cupti/app.o
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl

$(CUPTI_AGENT): $(B)/obj/tests/cupti/agent_driver.o $(LIB_AGENT) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link)

endif
