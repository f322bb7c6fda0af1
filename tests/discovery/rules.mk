# Helpers of tests/integration/discovery.sh:
#   discovery_dump  drives agent/discovery against /proc (one scan per stdin
#                   line) and times scans (--bench N)
#   jail            runs a program in its own mount namespace and root, like
#                   a container runtime
DISCOVERY_HELPERS := $(B)/tests/discovery/discovery_dump $(B)/tests/discovery/jail

$(B)/tests/discovery/%: $(B)/obj/tests/discovery/%.o $(LIB_AGENT) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link)

TEST_EXTRA += $(DISCOVERY_HELPERS)
