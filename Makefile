# argus build. Everything generated goes under build/ (see README.md).
#
#   make            build daemons, argusctl, tools, BPF skeletons, libargus-cupti.so
#   make test       install deps, build, run every test (unit, ASan+UBSan, integration)
#   make demo       install deps, build, run the end-to-end demo
#   make bench      benchmarks          make fuzz      fuzz targets (FUZZ_SECONDS each)
#   make fuzz-build the fuzz targets (clang libFuzzer, ASan+UBSan) without running them
#   make deps       install the Debian packages below (idempotent)
#   make install    install into DESTDIR/PREFIX    make deb   Debian packages in build/deb
#   make format-check / format / clean
#
# V=1 shows full command lines. SAN=address,undefined B=build/asan builds a
# sanitizer variant (make test does this for the unit tests).

.DELETE_ON_ERROR:
.SECONDARY:
.SUFFIXES:

B        ?= build
GEN      := build/gen
CLANG    ?= clang
BPFTOOL  ?= bpftool
PROTOC_C ?= protoc-c
CUDA     ?= /usr/local/cuda
ARCH     := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
SAN      ?=
FUZZ_SECONDS ?= 20

ifeq ($(origin CC),default)
CC := gcc
endif

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-9s %s\n' '$(1)' '$(2)';
endif

# Debian packages to build, test and run (README.md lists them too).
DEB_PACKAGES := gcc make clang llvm libclang-rt-14-dev clang-format pkg-config \
	protobuf-c-compiler libprotobuf-c-dev libgrpc-dev liblz4-dev librocksdb-dev \
	libzstd-dev zlib1g-dev libbpf-dev libelf-dev bpftool libcmocka-dev \
	libsystemd-dev libmicrohttpd-dev libjson-c-dev libssl-dev openssl python3-torch iproute2 procps curl bc \
	prometheus prometheus-alertmanager victoria-metrics chromium groff-base man-db libsnappy-dev libcurl4-openssl-dev \
	python3-kubernetes debhelper dpkg-dev lintian fakeroot

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -Wformat=2 -Wno-format-truncation -Wvla -Wimplicit-fallthrough
ifneq ($(findstring clang,$(CC)),)
WARN += -Wno-unknown-warning-option
endif
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -fno-omit-frame-pointer -pthread \
	-MMD -MP -I. -I$(GEN)
ALL_LDFLAGS := $(LDFLAGS) -pthread -Wl,--as-needed
# CI builds treat every warning as an error (CI=true there).
ifneq ($(CI),)
ALL_CFLAGS += -Werror
endif
ifneq ($(SAN),)
ALL_CFLAGS += -fsanitize=$(SAN) -fno-sanitize-recover=all
ALL_LDFLAGS += -fsanitize=$(SAN)
endif

# Every binary links our static libraries (only referenced objects are pulled
# in) and these shared ones (--as-needed drops what a binary does not use).
SYS_LIBS := -lgrpc -lgpr -lprotobuf-c -llz4 -lrocksdb -lbpf -lelf -lz -lzstd \
	-lsystemd -lmicrohttpd -ljson-c -lssl -lcrypto -lm -ldl -lsnappy -lcurl

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

PROTO_C      := $(GEN)/proto/argus.pb-c.c
PROTO_H      := $(GEN)/proto/argus.pb-c.h
BPF_SRC      := $(wildcard bpf/*.bpf.c)
BPF_SKELS    := $(patsubst bpf/%.bpf.c,$(GEN)/bpf/%.skel.h,$(BPF_SRC))
RW_PROTO_H   := $(GEN)/proto/remote_write.pb-c.h
BUILD_INFO   := $(GEN)/build_info.h
GEN_HEADERS  := $(PROTO_H) $(RW_PROTO_H) $(BUILD_INFO) $(BPF_SKELS)

# One static library per program part; each binary links its own part plus
# common (a client links no server code, a daemon no other daemon's code).
AGENT_STAGES  := sources probes symbols steps delivery discovery spans liveness hw
COMMON_SRC    := $(wildcard common/*.c)
AGENT_SRC     := $(filter-out agent/main.c,$(wildcard agent/*.c $(AGENT_STAGES:%=agent/%/*.c)))
COLLECTOR_SRC := $(filter-out collector/main.c,$(wildcard collector/*.c collector/*/*.c collector/*/*/*.c))
TOOLS         := $(notdir $(wildcard tools/*))
CUPTI_SRC     := $(wildcard agent/cupti/*.c)
UNIT_SRC      := $(wildcard tests/unit/test_*.c)
FUZZ_SRC      := $(wildcard tests/fuzz/fuzz_*.c)
TESTLIB_SRC   := $(wildcard tests/lib/*.c)

LIB_COMMON    := $(B)/lib/libargus_common.a
LIB_AGENT     := $(B)/lib/libargus_agent.a
LIB_COLLECTOR := $(B)/lib/libargus_collector.a
OUR_LIBS      := $(LIB_AGENT) $(LIB_COLLECTOR) $(LIB_COMMON)

# What each tool links besides its own objects (tools/NAME/*.c).
TOOL_DEPS_argusctl  := $(LIB_AGENT) $(LIB_COMMON)
TOOL_DEPS_argus-sim := $(LIB_AGENT) $(LIB_COMMON)
# A tool's objects other than its main.c, for tests (e.g. the heatmap, the
# simulator's scenario generator).
TOOL_LIBS     := $(TOOLS:%=$(B)/lib/libtool_%.a)
TEST_LIBS     := $(if $(TESTLIB_SRC),$(B)/lib/libargus_test.a) $(TOOL_LIBS) $(OUR_LIBS)

BINS := $(B)/bin/argus-agent $(B)/bin/argus-collector $(addprefix $(B)/bin/,$(TOOLS))
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(UNIT_SRC))

ifneq ($(wildcard $(CUDA)/include/cupti.h),)
CUPTI_LIB := $(B)/lib/libargus-cupti.so
endif

.PHONY: FORCE all programs deps test check unit-tests demo bench bench-detect fuzz format format-check clean install deb
all: programs $(B)/tests/.built
# what make install and the packages install: all without the tests
programs: $(BINS) $(CUPTI_LIB)

# --- generated code ---------------------------------------------------------

$(GEN)/proto/%.pb-c.c $(GEN)/proto/%.pb-c.h: proto/%.proto
	$(call msg,PROTOC-C,$<)
	$(Q)mkdir -p $(GEN)/proto && $(PROTOC_C) --proto_path=proto --c_out=$(GEN)/proto $<

# argus_build_info's version and commit; rewritten only when they change.
# The temporary file is per process: make test's builds run side by side.
ARGUS_VERSION ?= 0.1.0
ARGUS_COMMIT  := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
$(BUILD_INFO): FORCE
	$(Q)mkdir -p $(@D) && printf '#define ARGUS_BUILD_VERSION "%s"\n#define ARGUS_BUILD_COMMIT "%s"\n' \
		'$(ARGUS_VERSION)' '$(ARGUS_COMMIT)' >$@.$$$$.tmp && \
		{ cmp -s $@.$$$$.tmp $@ && rm -f $@.$$$$.tmp || mv -f $@.$$$$.tmp $@; }
FORCE:

$(GEN)/vmlinux.h:
	$(call msg,BTF,$@)
	$(Q)mkdir -p $(@D) && $(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

build/bpf/%.bpf.o: bpf/%.bpf.c $(GEN)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) \
		-I$(GEN) -I. -MMD -MP -c $< -o $@ && llvm-strip -g $@

$(GEN)/bpf/%.skel.h: build/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)mkdir -p $(@D) && $(BPFTOOL) gen skeleton $< name $*_bpf > $@

# --- objects and libraries --------------------------------------------------

$(B)/obj/%.o: %.c | $(GEN_HEADERS)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/obj/gen/%.o: $(GEN)/%.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC)) $(B)/obj/gen/proto/argus.pb-c.o
$(LIB_AGENT): $(call obj,$(AGENT_SRC))
$(LIB_COLLECTOR): $(call obj,$(COLLECTOR_SRC)) $(B)/obj/gen/proto/remote_write.pb-c.o
$(B)/lib/libargus_test.a: $(call obj,$(TESTLIB_SRC))
$(B)/lib/%.a:
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^

link = $(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(SYS_LIBS)

$(B)/bin/argus-agent: $(B)/obj/agent/main.o $(LIB_AGENT) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link)

$(B)/bin/argus-collector: $(B)/obj/collector/main.o $(LIB_COLLECTOR) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link)

# Each tools/NAME/ directory is one binary, build/bin/NAME, from its main.c,
# its other objects (libtool_NAME.a) and TOOL_DEPS_NAME.
define tool_rule
$(B)/lib/libtool_$(1).a: $(call obj,$(filter-out tools/$(1)/main.c,$(wildcard tools/$(1)/*.c)))
$(B)/bin/$(1): $(B)/obj/tools/$(1)/main.o $(B)/lib/libtool_$(1).a $(TOOL_DEPS_$(1))
	$$(call msg,LD,$$@)
	$$(Q)mkdir -p $$(@D) && $$(link)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

# The injection library runs inside training processes: CUPTI types from the
# toolkit headers, CUPTI itself through dlopen (no -lcupti), no gRPC.
$(B)/obj/agent/cupti/%.o: agent/cupti/%.c | $(GEN_HEADERS)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -fvisibility=hidden -I$(CUDA)/include -c $< -o $@

$(B)/lib/libargus-cupti.so: $(call obj,$(CUPTI_SRC)) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_LDFLAGS) -shared -o $@ $(filter %.o,$^) $(LIB_COMMON) -lm -ldl

# --- tests --------------------------------------------------------------------

$(B)/tests/unit/%: $(B)/obj/tests/unit/%.o $(TEST_LIBS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link) -lcmocka

# Test helpers that are separate programs or libraries (tests/helpers/*.mk).
-include $(wildcard tests/*/rules.mk)

$(B)/tests/.built: $(UNIT_BINS) $(TEST_EXTRA)
	$(Q)mkdir -p $(@D) && touch $@

unit-tests: $(UNIT_BINS)

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; \
	done); \
	if [ -z "$$missing" ]; then echo "deps: all $(words $(DEB_PACKAGES)) packages present"; \
	else echo "deps: installing" $$missing; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		$$SUDO apt-get install -y -qq $$missing >/dev/null || exit 1; fi

# make test and make check build on every CPU even when make was not given -j
# (CI runs plain `make test`); a -j given to make is kept. The sanitized unit
# tests and the fuzz targets build side by side once `all` has made the
# generated headers they share (build/gen).
TEST_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))

test: deps
	$(Q)$(MAKE) --no-print-directory $(TEST_JOBS) all
	$(Q)$(MAKE) --no-print-directory $(TEST_JOBS) test-builds
	$(Q)tests/run.sh

check:
	$(Q)$(MAKE) --no-print-directory $(TEST_JOBS) all
	$(Q)$(MAKE) --no-print-directory $(TEST_JOBS) test-builds
	$(Q)tests/run.sh

.PHONY: test-builds test-build-asan
test-builds: test-build-asan fuzz-build
test-build-asan: | $(GEN_HEADERS)
	$(Q)$(MAKE) --no-print-directory SAN=address,undefined B=build/asan unit-tests

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/e2e/demo.sh

BENCH_BINS := $(patsubst tests/bench/%.c,$(B)/bench/%,$(wildcard tests/bench/bench_*.c))
$(B)/bench/%: $(B)/obj/tests/bench/%.o $(TEST_LIBS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(link)

bench: all $(BENCH_BINS)
	$(Q)tests/bench/run.sh

bench-detect: all
	$(Q)tests/bench/detect.sh

FUZZ_BINS := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
# Fuzz targets link fuzzer-instrumented (clang, ASan+UBSan) builds of our
# libraries, made by one sub-make into build/fuzzobj before any target links.
FUZZ_LIBS := $(addprefix build/fuzzobj/lib/,libargus_agent.a libargus_collector.a libargus_common.a)
.PHONY: fuzz-libs fuzz-build
fuzz-libs: $(GEN_HEADERS)
	$(Q)$(MAKE) -s --no-print-directory CC=clang SAN=fuzzer-no-link,address,undefined B=build/fuzzobj $(FUZZ_LIBS)

fuzz-build: fuzz-libs
	$(Q)$(MAKE) -s --no-print-directory $(FUZZ_BINS)

build/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_util.h $(FUZZ_LIBS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D) && clang -std=gnu11 -D_GNU_SOURCE -g -O1 -I. -I$(GEN) \
		-fsanitize=fuzzer,address,undefined $< $(FUZZ_LIBS) $(SYS_LIBS) -o $@

fuzz: fuzz-build
	$(Q)tests/fuzz/run.sh $(FUZZ_SECONDS)

FORMAT_FILES = $(shell git ls-files -co --exclude-standard '*.c' '*.h' 2>/dev/null)
format-check:
	$(Q)clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format-check: $(words $(FORMAT_FILES)) files clean"

format:
	$(Q)clang-format -i $(FORMAT_FILES)

clean:
	rm -rf build

-include $(shell find $(B)/obj build/bpf -name '*.d' 2>/dev/null)

# --- libargus-marker.so (issue 6: eBPF probes; owned by the probes) ----------
# The marker ABI that training code calls and the agent uprobes. No deps.
# -O0 on purpose: each function then starts with `push %rbp`, which x86
# uprobes emulate; an optimised body is a bare `ret`, which must be
# single-stepped out of line: 12.4 us instead of 0.67 us per call here.
MARKER_LIB := $(B)/lib/libargus-marker.so
$(MARKER_LIB): $(wildcard agent/marker/*.c)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D) && $(CC) -std=gnu11 -O0 -g -fPIC -shared -fvisibility=hidden \
		-Wl,-soname,libargus-marker.so $^ -o $@
programs: $(MARKER_LIB)
# --- end libargus-marker.so ---------------------------------------------------

# --- manual pages -------------------------------------------------------------
# One page per binary, written by the binary itself (--man) from its config
# table and command table, so a page never disagrees with --help.
MAN_PAGES := $(B)/man/argus-agent.8 $(B)/man/argus-collector.8 \
	$(addprefix $(B)/man/,$(addsuffix .1,$(TOOLS)))
$(B)/man/%.8: $(B)/bin/%
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D) && $< --man > $@
$(B)/man/%.1: $(B)/bin/%
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D) && $< --man > $@
man: $(MAN_PAGES)
programs: $(MAN_PAGES)
.PHONY: man

# --- install (packaging) ------------------------------------------------------
# make install [DESTDIR=/tmp/pkg] [PREFIX=/usr]. The units run $(PREFIX)/bin
# and document $(PREFIX)/share/doc/argus (README.md, docs/*.md beside it so its
# links hold, deploy/README.md as deploy.md); argus.py goes where /usr/bin/python3
# imports it from (PYTHONDIR) and loads the marker library from
# $(PREFIX)/lib/argus. deploy/ (rules, dashboard, manifests, make-pki.sh, its
# README) goes to $(PREFIX)/share/argus/deploy as it is in the tree. Config
# files under /etc/argus are never overwritten. Binaries keep their symbols:
# make deb strips them into -dbgsym packages.
PREFIX    ?= /usr
DESTDIR   ?=
SYSCONFDIR ?= /etc
UNITDIR   ?= /lib/systemd/system
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python3/dist-packages)
DOCDIR    := $(PREFIX)/share/doc/argus
DATADIR   := $(PREFIX)/share/argus
DEPLOY_FILES = $(shell find deploy -type f ! -name '*~' | LC_ALL=C sort)
install: programs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/argus \
		$(DESTDIR)$(SYSCONFDIR)/argus $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(PYTHONDIR)
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	$(if $(CUPTI_LIB),install -m 0644 $(CUPTI_LIB) $(DESTDIR)$(PREFIX)/lib/argus/)
	install -m 0644 $(MARKER_LIB) $(DESTDIR)$(PREFIX)/lib/argus/
	sed 's|/usr/lib/argus/|$(PREFIX)/lib/argus/|g' agent/marker/argus.py > $(DESTDIR)$(PYTHONDIR)/argus.py
	chmod 0644 $(DESTDIR)$(PYTHONDIR)/argus.py
	for u in argus-agent argus-collector; do \
		sed -e 's|/usr/bin/|$(PREFIX)/bin/|g' -e 's|/usr/share/doc/argus|$(DOCDIR)|g' \
			-e 's|/etc/argus/|$(SYSCONFDIR)/argus/|g' deploy/systemd/$$u.service \
			> $(DESTDIR)$(UNITDIR)/$$u.service && chmod 0644 $(DESTDIR)$(UNITDIR)/$$u.service; \
	done
	for f in agent collector argusctl; do [ -e $(DESTDIR)$(SYSCONFDIR)/argus/$$f.conf ] || \
		install -m 0644 deploy/config/$$f.conf $(DESTDIR)$(SYSCONFDIR)/argus/$$f.conf; done
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -d $(DESTDIR)$(DOCDIR)/docs
	install -m 0644 $(wildcard docs/*.md) $(DESTDIR)$(DOCDIR)/docs/
	install -m 0644 deploy/README.md $(DESTDIR)$(DOCDIR)/deploy.md
	for f in $(DEPLOY_FILES); do m=0644; [ -x $$f ] && m=0755; \
		install -D -m $$m $$f $(DESTDIR)$(DATADIR)/$$f || exit 1; done
	install -m 0644 $(filter %.1,$(MAN_PAGES)) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 $(filter %.8,$(MAN_PAGES)) $(DESTDIR)$(PREFIX)/share/man/man8/

# --- Debian packages ------------------------------------------------------------
# make deb: argus-agent, argus-collector, argusctl, argus-common (docs and
# deploy/) and their -dbgsym packages into build/deb (debian/rules builds
# into build/pkg; dpkg-buildpackage's .buildinfo and .changes go there too).
# debian/changelog's version must be ARGUS_VERSION. DEB_BUILD_OPTIONS
# (default parallel=the CPUs) is dpkg-buildpackage's.
DEB_DIR := build/deb
deb:
	$(Q)v=$$(dpkg-parsechangelog -S Version) && [ "$$v" = "$(ARGUS_VERSION)" ] || \
		{ echo "deb: debian/changelog is $$v, ARGUS_VERSION is $(ARGUS_VERSION)"; exit 1; }
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)
	$(Q)a=$$(dpkg-architecture -qDEB_HOST_ARCH) && \
		ARGUS_DEB_DIR=$(CURDIR)/$(DEB_DIR) \
		DEB_BUILD_OPTIONS="$${DEB_BUILD_OPTIONS:-parallel=$$(nproc)}" \
		dpkg-buildpackage -b -us -uc \
		--buildinfo-option=-u$(CURDIR)/$(DEB_DIR) --changes-option=-u$(CURDIR)/$(DEB_DIR) \
		--buildinfo-file=$(CURDIR)/$(DEB_DIR)/argus_$(ARGUS_VERSION)_$$a.buildinfo \
		--changes-file=$(CURDIR)/$(DEB_DIR)/argus_$(ARGUS_VERSION)_$$a.changes
	$(Q)ls $(DEB_DIR)
