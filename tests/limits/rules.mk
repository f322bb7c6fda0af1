# Helpers of tests/integration/limits_*.sh: limits_flood sends one small
# batch per new job (a flood of new jobs, the world-size amplification case)
# over the real protocol and reports how the collector answered.
LIMITS_HELPERS := $(B)/tests/limits/limits_flood

$(B)/tests/limits/%: $(B)/obj/tests/limits/%.o $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link)

TEST_EXTRA += $(LIMITS_HELPERS)
