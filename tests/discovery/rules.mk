# discovery_dump: drives agent/discovery against the real /proc for
# tests/integration/discovery.sh (one scan per line on stdin) and measures
# scan time (--bench N).
DISCOVERY_DUMP := $(B)/tests/discovery/discovery_dump

$(DISCOVERY_DUMP): $(B)/obj/tests/discovery/discovery_dump.o $(OUR_LIBS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link)

TEST_EXTRA += $(DISCOVERY_DUMP)
