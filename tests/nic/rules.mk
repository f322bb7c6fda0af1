# Helper of tests/integration/hw_nic_netns.sh:
#   nic-read  samples agent/hw/nic (the node's NIC error counters) at an
#             interval and prints the totals, one JSON line per sample
NIC_READ := $(B)/tests/nic/nic-read

$(NIC_READ): $(B)/obj/tests/nic/nic_read.o $(LIB_AGENT) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link)

TEST_EXTRA += $(NIC_READ)
