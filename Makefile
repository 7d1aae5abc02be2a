# winbuild — one Makefile. `make` builds ./winbuild; see README.md.
#
#   make                     build ./winbuild
#   make DEVELOPER=1         strict warnings, -Werror
#   make SANITIZE=address,undefined check
#                            the whole suite under sanitizers
#   make deps                install missing Debian packages (build + tests)
#   make demo                deps, build, then the whole product offline on a
#                            demo mirror (tests/demo/run; outputs in out/demo)
#   make check               unit (cmocka) + CLI (bats) tests; ends "N passed, N failed"
#   make fuzz                libFuzzer harnesses (clang) in build/fuzz/
#   make fuzz-smoke          run each for FUZZ_SECONDS (60) from tests/fuzz/corpus/,
#                            then the renderer oracle fuzzer (render_fuzz.py)
#   make mutate              mutation run over the trust code (tests/mutate/);
#                            not part of check; MUTANT=regex picks mutants
#   make bench               performance harness (bench/README.md); not part of check
#   make bench-wan           the same set at 50 ms round trips (bench/README.md, "WAN")
#   make bench-matrix        three shipped images in one run vs one and vs three runs (bench/README.md, "Matrix")
#   make install PREFIX=/usr/local DESTDIR=
#   make clean

VERSION := 0.1.0
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
SHAREDIR ?= $(PREFIX)/share/winbuild

CC ?= cc
PKG_CONFIG ?= pkg-config
PKGS := libcurl libarchive libcrypto yaml-0.1 jansson
# pkg-config name -> the Debian package that has it (.ci/deps installs them)
DEB_libcurl := libcurl4-openssl-dev
DEB_libarchive := libarchive-dev
DEB_libcrypto := libssl-dev
DEB_yaml-0.1 := libyaml-dev
DEB_jansson := libjansson-dev
# What pkg-config cannot find: named before any compile (build/FLAGS)
# instead of a compiler error about a missing header.
WB_MISSING := $(if $(shell command -v $(PKG_CONFIG) 2>/dev/null),$(shell \
	for p in $(PKGS); do $(PKG_CONFIG) --exists $$p 2>/dev/null || echo $$p; done),$(PKGS))

CFLAGS ?= -O2 -g
WB_CFLAGS := -std=c11 -D_GNU_SOURCE -DWB_VERSION='"$(VERSION)"' -DWB_SHAREDIR='"$(SHAREDIR)"' -Ibuilder \
	-Wall -Wextra -Wno-format-truncation $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
WB_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -pthread
WB_BASE_CFLAGS := $(WB_CFLAGS)

ifdef DEVELOPER
WB_CFLAGS += -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wformat-security -Wvla -Wpointer-arith -Wold-style-definition \
	-Wundef -Wwrite-strings -Wnull-dereference -Wimplicit-fallthrough \
	-Wno-format-truncation
endif
ifdef SANITIZE
WB_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
WB_LDFLAGS += -fsanitize=$(SANITIZE)
endif

SRCS := $(sort $(shell find builder -name '*.c'))
OBJS := $(SRCS:%.c=build/%.o)
LIB_OBJS := $(filter-out build/builder/main.o,$(OBJS))
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=build/tests/%)

all: winbuild

# Rebuild everything when the flags change (SANITIZE, DEVELOPER, CFLAGS).
build/FLAGS: FORCE
ifneq ($(strip $(WB_MISSING)),)
	@echo "winbuild: missing build dependencies: $(foreach p,$(WB_MISSING),$(DEB_$(p)) ($(p)))" >&2
	@echo "winbuild: run 'make deps' to install them (sh .ci/deps; apt-get through sudo)" >&2
	@exit 1
endif
	@mkdir -p build
	@echo '$(CC) $(WB_CFLAGS) $(CFLAGS) $(WB_LDFLAGS) $(LDFLAGS)' > build/FLAGS.new
	@cmp -s build/FLAGS.new build/FLAGS || mv build/FLAGS.new build/FLAGS
	@rm -f build/FLAGS.new

build/%.o: %.c build/FLAGS
	@mkdir -p $(dir $@)
	$(CC) $(WB_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

build/libwinbuild.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

winbuild: build/builder/main.o build/libwinbuild.a
	$(CC) $(WB_LDFLAGS) $(LDFLAGS) -o $@ $^ $(WB_LIBS)

build/tests/%: tests/unit/%.c build/libwinbuild.a build/FLAGS
	@mkdir -p $(dir $@)
	$(CC) $(WB_CFLAGS) $(CFLAGS) -Itests/unit -o $@ $< build/libwinbuild.a \
		$(WB_LDFLAGS) $(LDFLAGS) $(WB_LIBS) $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)

# The renderer under real-parser oracles (tests/fuzz/render_fuzz.py).
build/tests/render_oracle: tests/fuzz/render_oracle.c build/libwinbuild.a build/FLAGS
	@mkdir -p $(dir $@)
	$(CC) $(WB_CFLAGS) $(CFLAGS) -o $@ $< build/libwinbuild.a $(WB_LDFLAGS) $(LDFLAGS) $(WB_LIBS)

unit: $(UNIT_BINS) build/tests/render_oracle

# ---- fuzzing (tests/fuzz/, docs/hardening.md) ----
# Separate objects in build/fuzz/ (clang, libFuzzer + ASan + UBSan), so the
# normal build is never clobbered. FUZZ_CC must be a clang with libFuzzer.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := $(WB_BASE_CFLAGS) -O1 -g $(FUZZ_SAN)
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(FUZZ_SRCS:tests/fuzz/%.c=%)
FUZZ_BINS := $(FUZZ_NAMES:%=build/fuzz/%)
FUZZ_LIB_OBJS := $(LIB_OBJS:build/%=build/fuzz/%)

build/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

build/fuzz/libwinbuild.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c build/fuzz/libwinbuild.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< build/fuzz/libwinbuild.a $(WB_LIBS)

fuzz: $(FUZZ_BINS)

# Fuzz each harness for FUZZ_SECONDS from its committed corpus (new inputs
# go to build/fuzz/corpus/, never into the tree); crashes land in
# build/fuzz/artifacts/. fuzz-replay runs the committed corpus and
# regression inputs once, without fuzzing (part of make check with clang).
fuzz-smoke: fuzz build/tests/render_oracle
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run smoke $(FUZZ_NAMES)
	@python3 tests/fuzz/render_fuzz.py --seconds $(FUZZ_SECONDS)

fuzz-replay: fuzz
	@bash tests/fuzz/run replay $(FUZZ_NAMES)

# ---- mutation run (tests/mutate/, docs/hardening.md) ----
# Each mutant of tests/mutate/mutants.txt is built into a copy of the tree
# in build/mutate/ (never this tree) and must fail its listed tests.
mutate:
	@python3 tests/mutate/run $(if $(MUTANT),'$(MUTANT)')

deps:
	@sh .ci/deps

# docs/api-index.md from the sources: the @where tags of their comments and the
# headers of builder/ (tests/cli/docs.bats holds it current)
api-index:
	@python3 tests/lib/apiindex.py . --write

# With a clang that has libFuzzer, the fuzz corpus and regression inputs
# are replayed too (tests/run); NOFUZZ=1 skips that.
# The build before the suite uses every core unless make was given -j.
NPROC := $(shell nproc 2>/dev/null || echo 2)
check: deps
	@$(MAKE) --no-print-directory $(if $(findstring j,$(MAKEFLAGS)),,-j$(NPROC)) winbuild unit
	@if [ -z "$(NOFUZZ)" ] && command -v $(FUZZ_CC) >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory fuzz >build/fuzz-build.log 2>&1 || \
		{ cat build/fuzz-build.log; exit 1; }; fi
	@WINBUILD=$(CURDIR)/winbuild UNIT_BINS='$(UNIT_BINS)' \
		FUZZ_NAMES='$(if $(NOFUZZ),,$(FUZZ_NAMES))' bash tests/run

# The harness times an optimised build: no sanitizers, default CFLAGS.
bench:
	@$(MAKE) --no-print-directory SANITIZE= winbuild
	@$(MAKE) --no-print-directory build/bench/hashspeed >/dev/null 2>&1 || \
		echo "bench: hashspeed not built (libsodium-dev, libdeflate-dev: sh .ci/deps); per-byte table skipped" >&2
	@HASHSPEED=$(CURDIR)/build/bench/hashspeed bash bench/run

# The same set over a network with latency (bench/wan: BENCH_RTT_MS, 50 by
# default, through bench/delayproxy.py), verified as the shipped images are.
bench-wan:
	@$(MAKE) --no-print-directory SANITIZE= winbuild
	@bash bench/wan

# The image matrix: the three shipped images cold in one run vs one image
# and vs three separate runs (bench/matrix, the demo mirror on loopback).
bench-matrix:
	@$(MAKE) --no-print-directory SANITIZE= winbuild
	@bash bench/matrix

# Per-byte costs of the candidates (OpenSSL vs libsodium BLAKE2b, zlib vs
# libdeflate): test-only libraries, never linked into winbuild.
build/bench/hashspeed: bench/hashspeed.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -o $@ $< \
		$$(pkg-config --cflags --libs libcrypto libsodium zlib) -ldeflate

demo:
	@WB_DEPS_NO_NPM=1 sh .ci/deps
	@$(MAKE) --no-print-directory winbuild
	@WINBUILD=$(CURDIR)/winbuild bash tests/demo/run

# make demo, then keep the mirror and the fake Rekor serving until Ctrl-C;
# out/demo/demo.env holds what a winbuild call needs (tests/demo/run)
demo-serve:
	@WB_DEPS_NO_NPM=1 sh .ci/deps
	@$(MAKE) --no-print-directory winbuild
	@DEMO_SERVE=1 WINBUILD=$(CURDIR)/winbuild bash tests/demo/run

# Installs the ./winbuild that `make` built, as it is: install never
# rebuilds or relinks it (other flags, another PREFIX), and builds it only
# when there is none. The binary finds its data as ../share/winbuild beside
# itself (cmd_data_dir), so any PREFIX or DESTDIR works without a rebuild.
DOCDIR ?= $(PREFIX)/share/doc/winbuild
install:
	@[ -x winbuild ] || $(MAKE) --no-print-directory winbuild
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SHAREDIR) $(DESTDIR)$(DOCDIR)
	install -m 755 winbuild $(DESTDIR)$(BINDIR)/winbuild
	for d in recipes packer overrides; do if [ -d $$d ]; then cp -R $$d $(DESTDIR)$(SHAREDIR)/; fi; done
	install -m 644 README.md docs/*.md $(DESTDIR)$(DOCDIR)/
	if [ -f docs/winbuild.1 ]; then install -d $(DESTDIR)$(MANDIR)/man1 && \
		install -m 644 docs/winbuild.1 $(DESTDIR)$(MANDIR)/man1/winbuild.1; fi
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 docs/winbuild.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/winbuild

clean:
	rm -rf build winbuild

FORCE:
.PHONY: all unit deps api-index check bench bench-wan bench-matrix demo demo-serve install clean fuzz fuzz-smoke fuzz-replay mutate FORCE

-include $(OBJS:.o=.d) $(FUZZ_LIB_OBJS:.o=.d)
