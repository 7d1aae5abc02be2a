# winbuild — one Makefile. `make` builds ./winbuild; see README.md.
#
#   make                     build ./winbuild
#   make DEVELOPER=1         strict warnings, -Werror
#   make SANITIZE=address,undefined check
#                            the whole suite under sanitizers
#   make deps                install missing Debian packages (build + tests)
#   make check               unit (cmocka) + CLI (bats) tests; ends "N passed, N failed"
#   make bench               performance harness (bench/README.md); not part of check
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

CFLAGS ?= -O2 -g
WB_CFLAGS := -std=c11 -D_GNU_SOURCE -DWB_VERSION='"$(VERSION)"' -DWB_SHAREDIR='"$(SHAREDIR)"' -Ibuilder \
	-Wall -Wextra $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
WB_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -pthread

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

unit: $(UNIT_BINS)

deps:
	@sh .ci/deps

check: deps
	@$(MAKE) --no-print-directory winbuild unit
	@WINBUILD=$(CURDIR)/winbuild UNIT_BINS='$(UNIT_BINS)' bash tests/run

# The harness times an optimised build: no sanitizers, default CFLAGS.
bench:
	@$(MAKE) --no-print-directory SANITIZE= winbuild
	@bash bench/run

install: winbuild
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SHAREDIR)
	install -m 755 winbuild $(DESTDIR)$(BINDIR)/winbuild
	for d in recipes packer overrides; do if [ -d $$d ]; then cp -R $$d $(DESTDIR)$(SHAREDIR)/; fi; done
	if [ -f docs/winbuild.1 ]; then install -d $(DESTDIR)$(MANDIR)/man1 && \
		install -m 644 docs/winbuild.1 $(DESTDIR)$(MANDIR)/man1/winbuild.1; fi

clean:
	rm -rf build winbuild

FORCE:
.PHONY: all unit deps check bench install clean FORCE

-include $(OBJS:.o=.d)
