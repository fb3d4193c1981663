# ngx_http_gms_module: build, test, demo.
#
#   make            the module (build/nginx/objs/ngx_http_gms_module.so)
#   make test       install what is missing, build, run every test
#   make demo       a local redis-server + nginx + stand-in GMS to try
#
# NGINX_SRC=/path/to/nginx-source make   builds against another tree;
# NGINX_CONF_FLAGS then gives its configure flags (default: --with-compat
# --with-http_ssl_module: without OpenSSL, no Redis over TLS).

NGINX_SRC        ?= /usr/share/nginx/src
BUILD            := $(CURDIR)/build
NGX_BUILD        := $(BUILD)/nginx
MODULE           := $(NGX_BUILD)/objs/ngx_http_gms_module.so
NGINX_BIN        ?= /usr/sbin/nginx

# Debian's own compiler flags (nginx -V), so the module matches its nginx
DEB_CC_OPT       := -g -O2 -fstack-protector-strong -Wformat \
                    -Werror=format-security -fPIC -Wdate-time \
                    -D_FORTIFY_SOURCE=2
DEB_LD_OPT       := -Wl,-z,relro -Wl,-z,now -fPIC

# the unit tests under AddressSanitizer and UndefinedBehaviorSanitizer,
# built by clang: gcc's does not report arithmetic on a null pointer
UNIT_CC          := clang
CFLAGS_UNIT      := -g -O1 -Wall -Wextra -Werror -Isrc/lib -Isrc/tool \
                    -fno-omit-frame-pointer -fsanitize=address,undefined \
                    -fno-sanitize-recover=all
LIBS_UNIT        := -lhiredis -ljansson -lcrypto

SRCS             := $(wildcard src/*.c src/*.h src/lib/*.c src/lib/*.h) config
UNIT_TESTS       := $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(wildcard t/unit/*.c))
# src/lib: the nginx-free files the module, gms-token, the unit tests and
# the fuzzers share (t/01-unit.t checks that none includes nginx)
LIB_SRCS         := $(wildcard src/lib/*.c)
LIB_HDRS         := $(wildcard src/lib/*.h)
# and the tool's files that need neither Redis nor GMS
PURE_SRCS        := $(LIB_SRCS) src/tool/gms_policy.c \
                    src/tool/gms_follow_journal.c
PURE_HDRS        := $(LIB_HDRS) src/tool/gms_policy.h \
                    src/tool/gms_follow_journal.h

PROVE_FLAGS      ?=
# the test files 'make test' and 'make test-asan' run
TESTS            ?= t/
# prove -j: twice the 2 cores CI has, as a file spends most of its time
# waiting on timers (nginx's, Redis's, Sentinel's, the follower's), not on
# a core; more raise the load under the files that time a failover.
# Those (Sentinel's failover, the discovery and replica timers, and t/78's
# rotation under wrk, which would squeeze them) run one after another
# from the start, beside the rest: at most one of them at a time.
# GmsTest::Prove is prove, but for --rules (par= patterns grouped, so
# that the chain starts first).  Ports are locked across files
# (GmsTest::free_port).  PROVE_JOBS=1: one file at a time, as before.
PROVE_JOBS       ?= 4
PROVE_SERIAL     := t/{25,26,62,63,64,78}-*.t
PROVE_RUN        = perl -I t/lib -MGmsTest::Prove \
                    -e 'exit GmsTest::Prove->main(@ARGV)' -- \
                    -I t/lib -j$(PROVE_JOBS) \
                    --rules='seq=$(PROVE_SERIAL)' --rules='par=**' \
                    $(PROVE_FLAGS) $(TESTS)

# the module's version ($gms_module_version, gms_module_build_info):
# debian/changelog's latest entry unless given ('make GMS_VERSION=...');
# config reads it when nginx's tree is configured
ifndef GMS_VERSION
GMS_VERSION      := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' \
                        debian/changelog)
endif
VERSION_STAMP    := $(BUILD)/version
export GMS_VERSION

.PHONY: all module deps test unit demo clean FORCE

all: module

deps:
	@sh tools/install-deps.sh

module: $(MODULE)

# rewritten only when the version changes: nginx's tree is then
# configured again, and the module built with the new one
$(VERSION_STAMP): FORCE
	@mkdir -p $(BUILD)
	@echo '$(GMS_VERSION)' | cmp -s - $@ || echo '$(GMS_VERSION)' > $@

$(NGX_BUILD)/objs/Makefile: config $(VERSION_STAMP)
	rm -rf $(NGX_BUILD)
	mkdir -p $(BUILD)
	cp -a $(NGINX_SRC) $(NGX_BUILD)
	cd $(NGX_BUILD) && if [ -f conf_flags ]; then \
	    bash -c '. ./conf_flags && ./configure "$${NGX_CONF_FLAGS[@]}" \
	        --with-cc-opt="$(DEB_CC_OPT)" --with-ld-opt="$(DEB_LD_OPT)" \
	        --add-dynamic-module=$(CURDIR)' > $(BUILD)/configure.log; \
	else \
	    ./configure $${NGINX_CONF_FLAGS:---with-compat --with-http_ssl_module} \
	        --add-dynamic-module=$(CURDIR) > $(BUILD)/configure.log; \
	fi

$(MODULE): $(NGX_BUILD)/objs/Makefile $(SRCS)
	$(MAKE) -C $(NGX_BUILD) -f objs/Makefile modules \
	    CFLAGS_EXTRA= > $(BUILD)/make.log 2>&1 \
	    || { cat $(BUILD)/make.log; exit 1; }
	@grep -E ': (warning|error):' $(BUILD)/make.log || true

$(BUILD)/unit/%: t/unit/%.c $(PURE_SRCS) $(PURE_HDRS) $(wildcard t/unit/*.h) \
                 Makefile
	@mkdir -p $(BUILD)/unit
	$(UNIT_CC) $(CFLAGS_UNIT) -o $@ $< $(PURE_SRCS) $(LIBS_UNIT)

# a test renamed or gone leaves no binary behind for t/01-unit.t to run
unit: fuzz-deps $(UNIT_TESTS)
	@rm -f $(filter-out $(UNIT_TESTS),$(wildcard $(BUILD)/unit/*))

test: deps module unit
	GMS_MODULE=$(MODULE) GMS_UNIT_DIR=$(BUILD)/unit NGINX_BIN=$(NGINX_BIN) \
	    $(PROVE_RUN)

demo: deps module
	@sh tools/demo.sh $(MODULE)

clean:
	rm -rf $(BUILD)


# --- gms-token: the tool that fills the Redis cache --------------------------
#
#   make tool        build/gms-token
#   make install     the module to $(MODULES_DIR), the tool to $(BIN_DIR),
#                    under $(DESTDIR)

TOOL             := $(BUILD)/gms-token
TOOL_SRCS        := $(wildcard src/tool/*.c) src/lib/gms_token.c \
                    src/lib/gms_lookup.c src/lib/gms_oauth_jwks.c \
                    src/lib/gms_slot.c src/lib/gms_events.c \
                    src/lib/gms_id_memo.c src/lib/gms_secret.c \
                    src/lib/gms_topology.c
TOOL_DEPS        := $(TOOL_SRCS) $(wildcard src/tool/*.h) $(LIB_HDRS)
CFLAGS_TOOL      := -g -O2 -Wall -Wextra -Werror -fstack-protector-strong \
                    -Wformat -Werror=format-security -D_FORTIFY_SOURCE=2 \
                    -Isrc/lib -Isrc/tool
# -pthread: follow mirrors the privileges in a thread of its own
LIBS_TOOL        := $(LIBS_UNIT) -lssl -lcurl -pthread
MODULES_DIR      ?= /usr/lib/nginx/modules
BIN_DIR          ?= /usr/local/bin

.PHONY: tool install

all: tool
test: tool
demo: tool
test: export GMS_TOKEN_BIN := $(TOOL)

tool: $(TOOL)

$(TOOL): $(TOOL_DEPS)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_TOOL) $(LDFLAGS) -o $@ $(TOOL_SRCS) $(LIBS_TOOL)

install: module tool
	install -D -m 0644 $(MODULE) \
	    $(DESTDIR)$(MODULES_DIR)/ngx_http_gms_module.so
	install -D -m 0755 $(TOOL) $(DESTDIR)$(BIN_DIR)/gms-token

# --- end of gms-token -------------------------------------------------------


# --- hardening: fuzzers and a sanitizer run ----------------------------------
#
#   make fuzz [FUZZ_SECONDS=60]   each libFuzzer harness in fuzz/ for that
#                                 long; fails on a crash, leak or report
#   make test-asan                the whole suite with the module built
#                                 with AddressSanitizer and UBSan,
#                                 preloaded into Debian's nginx

FUZZ_SECONDS     ?= 60
FUZZERS          := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_CFLAGS      := -g -O1 -fsanitize=fuzzer,address,undefined \
                    -fno-sanitize-recover=all -Isrc/lib -It/unit
ASAN_BUILD       := $(BUILD)/nginx-asan
ASAN_MODULE      := $(ASAN_BUILD)/objs/ngx_http_gms_module.so
# gcc, as Debian's nginx: its UBSan reports memcpy(NULL, p, 0) (nonnull
# attribute), not arithmetic on a null pointer (the unit tests' clang does)
ASAN_SANITIZE    := -fsanitize=address,undefined
ASAN_CC_OPT      := -g -O1 -fPIC -fno-omit-frame-pointer $(ASAN_SANITIZE) \
                    -fno-sanitize-recover=all
LIBASAN          = $(shell gcc -print-file-name=libasan.so)
ASAN_TOOL        := $(BUILD)/asan/gms-token
ASAN_TOOL_CFLAGS := -g -O1 -Wall -Wextra -Werror -Isrc/lib -Isrc/tool \
                    -fno-omit-frame-pointer -fsanitize=address,undefined \
                    -fno-sanitize-recover=all

.PHONY: fuzz fuzz-deps test-asan

$(BUILD)/fuzz/%: fuzz/%.c $(PURE_SRCS) $(PURE_HDRS) $(wildcard t/unit/*.h)
	@mkdir -p $(BUILD)/fuzz
	clang $(FUZZ_CFLAGS) -o $@ $< $(PURE_SRCS) $(LIBS_UNIT)

fuzz-deps:
	@sh tools/install-deps.sh clang libclang-rt-dev

fuzz: deps fuzz-deps $(FUZZERS)
	@for f in $(FUZZERS); do \
	    name=$$(basename $$f | sed 's/^fuzz_//'); \
	    corpus=$(BUILD)/fuzz/corpus-$$name; \
	    mkdir -p $$corpus; cp fuzz/corpus/$$name/* $$corpus/; \
	    echo "fuzz: $$name for $(FUZZ_SECONDS)s"; \
	    $$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	        -print_final_stats=0 -artifact_prefix=$(BUILD)/fuzz/$$name- \
	        $$corpus 2> $(BUILD)/fuzz/$$name.log \
	    || { tail -40 $(BUILD)/fuzz/$$name.log; exit 1; }; \
	    grep -E '^(#[0-9]+.*DONE|Done)' $(BUILD)/fuzz/$$name.log | tail -1; \
	done

$(ASAN_BUILD)/objs/Makefile: config Makefile $(VERSION_STAMP)
	rm -rf $(ASAN_BUILD)
	mkdir -p $(BUILD)
	cp -a $(NGINX_SRC) $(ASAN_BUILD)
	cd $(ASAN_BUILD) && bash -c '. ./conf_flags && ./configure \
	    "$${NGX_CONF_FLAGS[@]}" --with-cc-opt="$(ASAN_CC_OPT)" \
	    --with-ld-opt="$(ASAN_SANITIZE)" \
	    --add-dynamic-module=$(CURDIR)' > $(BUILD)/configure-asan.log

$(ASAN_MODULE): $(ASAN_BUILD)/objs/Makefile $(SRCS)
	$(MAKE) -C $(ASAN_BUILD) -f objs/Makefile modules \
	    > $(BUILD)/make-asan.log 2>&1 \
	    || { cat $(BUILD)/make-asan.log; exit 1; }

$(ASAN_TOOL): $(TOOL_DEPS) Makefile
	@mkdir -p $(BUILD)/asan
	$(CC) $(ASAN_TOOL_CFLAGS) -o $@ $(TOOL_SRCS) $(LIBS_TOOL)

# nginx is not built with ASan: libasan is preloaded into it (libubsan
# comes with the module); leaks are not checked (nginx frees its pools,
# not everything, at exit).  A memory error aborts the worker; undefined
# behaviour in the module ends it too (exit code 1: UBSan reads its
# options only at its first report, after nginx's setproctitle has
# overwritten the environment); the tests see either in the error log.
# gms-token is built with ASan and UBSan and checked for leaks too: a
# report aborts it (exit code 134, no code of its own), which fails the
# test that ran it.
test-asan: deps $(ASAN_MODULE) unit $(ASAN_TOOL)
	GMS_MODULE=$(ASAN_MODULE) GMS_UNIT_DIR=$(BUILD)/unit \
	GMS_TOKEN_BIN=$(ASAN_TOOL) NGINX_BIN=$(NGINX_BIN) \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=abort_on_error=1:print_stacktrace=1 \
	GMS_NGINX_WRAPPER="env LD_PRELOAD=$(LIBASAN) ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_odr_violation=0" \
	    $(PROVE_RUN)

# --- end of hardening --------------------------------------------------------


# --- container ---------------------------------------------------------------
#
#   make docker-base   the Dockerfile's base, BASE_IMAGE (debian:trixie;
#                      or debian:bookworm): present, pulled, or made with
#                      debootstrap from this host's apt mirror
#                      (tools/docker-base.sh)
#   make docker-test   docker-base, then build the image (Dockerfile) and
#                      run it beside a redis-server and stand-ins for GMS
#                      and the search cluster: t/docker/smoke.sh.  Both
#                      start a dockerd when none answers, and stop it
#                      afterwards (tools/with-dockerd.sh); part of CI

.PHONY: docker-deps docker-base docker-test

docker-deps:
	@sh tools/install-deps.sh docker.io debootstrap redis-tools

docker-base: docker-deps
	@sh tools/with-dockerd.sh sh tools/docker-base.sh

docker-test: deps docker-deps
	@sh tools/with-dockerd.sh sh -c \
	    'sh tools/docker-base.sh && bash t/docker/smoke.sh'

# --- end of container ---------------------------------------------------------


# --- platforms ---------------------------------------------------------------
#
#   make test-matrix   the whole suite on each Debian release, in a
#                      container of that release (t/matrix/run.sh):
#                      bookworm (nginx 1.22, Redis 7.0), trixie (nginx
#                      1.26, Redis 8.0), trixie-valkey (Valkey 8.1) and
#                      forky-valkey (nginx 1.30, Valkey 9.1).  MATRIX
#                      names fewer; MATRIX_TESTS fewer files
#   make test-matrix-ci   CI's part of it: trixie and forky-valkey, the
#                      files of MATRIX_CI_TESTS

MATRIX           ?= bookworm trixie trixie-valkey forky-valkey
MATRIX_CI        := trixie forky-valkey
# what differs between releases, about 4 minutes each: the harness
# against the server, the unit tests against the release's hiredis and
# clang, lookups and hostile replies through hiredis 1.x, credentials,
# the shipped configurations under that nginx, invalidation, TLS and IPv6
# with its OpenSSL, Sentinel, Cluster, getEsTaskStatus's body filter and
# hostile requests under that nginx, and gms-token against that server
# and through that libcurl
MATRIX_CI_TESTS  := t/00-harness.t t/01-unit.t t/10-auth.t \
                    t/18-hostile-redis.t t/19-credentials.t \
                    t/20-conf-examples.t t/22-shipped-config.t \
                    t/24-invalidate.t t/25-redis-transport.t \
                    t/26-redis-sentinel.t t/30-es-task.t t/40-gms-token.t \
                    t/41-gms-sync.t t/43-gms-follow.t \
                    t/46-gms-token-transport.t \
                    t/50-hostile.t t/57-es-task-openapi.t \
                    t/60-redis-cluster.t t/61-gms-token-cluster.t

.PHONY: test-matrix test-matrix-ci

test-matrix: docker-deps
	@sh tools/with-dockerd.sh bash t/matrix/run.sh $(MATRIX)

test-matrix-ci: docker-deps
	@MATRIX_TESTS="$(MATRIX_CI_TESTS)" \
	    sh tools/with-dockerd.sh bash t/matrix/run.sh $(MATRIX_CI)

# --- end of platforms -----------------------------------------------------------


# --- nginx.org's builds: the module loaded into them -------------------------
#
#   make nginxorg-test  in a debian:forky container (made by docker-base if
#                       missing): the module built with --with-compat from
#                       the nginx's own source, loaded into Debian's nginx
#                       1.30.6 and, with NGINX_TARBALL=nginx-X.Y.Z.tar.gz,
#                       into nginx built with nginx.org's packages'
#                       arguments; nginx -t and real requests
#                       (t/nginxorg/load-test.sh); not part of CI

.PHONY: nginxorg-test

nginxorg-test: docker-deps
	@sh tools/with-dockerd.sh sh -c \
	    'BASE_IMAGE=debian:forky sh tools/docker-base.sh \
	     && bash tools/nginxorg-test.sh'

# --- end of nginx.org's builds ------------------------------------------------


# --- bench: the module under load, beside its alternatives -------------------
#
#   make bench       wrk against nine front ends (A..I) (bench/run.pl); not part of
#                    make test.  BENCH_ROUNDS, BENCH_DURATION, ...: see there
#   make bench-check the instructions per request of fronts A C D E F G
#                    against their budgets (about a minute); .ci/run runs it

.PHONY: bench bench-check

bench:
	@sh tools/install-deps.sh wrk valgrind gnuplot-nox
	@$(MAKE) --no-print-directory module
	NGINX_BIN=$(NGINX_BIN) perl bench/run.pl $(MODULE)

# the instruction budgets alone (fronts A C D E F G, no wrk rounds): run
# by .ci/run; exits 1 when a front costs more than its budget
bench-check:
	@sh tools/install-deps.sh wrk valgrind gnuplot-nox
	@$(MAKE) --no-print-directory module
	BENCH_CHECK=1 NGINX_BIN=$(NGINX_BIN) perl bench/run.pl $(MODULE)

# --- end of bench -----------------------------------------------------------


# --- bench-follow: gms-token follow at DataHub's size ------------------------
#
#   make bench-follow  follow against the stand-in GMS (20 ms a request) and
#                      three edges, 1,000 to 100,000 tokens, polling and on
#                      the Events API (bench/follow.pl); not part of make
#                      test.  BENCH_FOLLOW_SIZES, _DELAY, _ARGS, _REVOKES,
#                      _MODES, _CHANGES, _IDLE: see there

.PHONY: bench-follow

bench-follow: deps module tool
	NGINX_BIN=$(NGINX_BIN) GMS_MODULE=$(MODULE) GMS_TOKEN_BIN=$(TOOL) \
	    perl -I t/lib bench/follow.pl

# --- end of bench-follow ----------------------------------------------------


# --- bench-scale: the edge at 1,000 to 1,000,000 tokens ----------------------
#
#   make bench-scale   the cache and Redis as the tokens grow, and a flood
#                      of random ones (bench/scale.pl, about 6 minutes);
#                      not part of make test.  BENCH_SCALE_SIZES,
#                      BENCH_SCALE_DURATION: see there

.PHONY: bench-scale

bench-scale: deps module tool
	@sh tools/install-deps.sh wrk
	NGINX_BIN=$(NGINX_BIN) GMS_MODULE=$(MODULE) GMS_TOKEN_BIN=$(TOOL) \
	    perl -I t/lib bench/scale.pl

# --- end of bench-scale -----------------------------------------------------


# --- Debian packages ---------------------------------------------------------
#
#   make deb        libnginx-mod-http-gms and gms-token .debs in build/deb/,
#                   built by dpkg-buildpackage (debian/) from a copy of the
#                   tree in build/deb/src, then checked by lintian
#   make deb-test   installs them into a clean system of the release they
#                   were built for (a debootstrap chroot cached in
#                   build/deb-chroot, or debian:<suite> under Docker) and
#                   runs t/deb/install-test.sh there, which also upgrades
#                   them to the same tree built as a later version (make
#                   deb-next, in build/deb-next/); skipped, with the
#                   reason, where neither is possible
#
# DEB_SUITE (default: this host's release) builds for another release:
# the same targets run in a debian:$(DEB_SUITE) container
# (tools/deb-container.sh), e.g. 'make deb DEB_SUITE=trixie' on bookworm.

DEB_DIR          := $(BUILD)/deb
DEB_NEXT_DIR     := $(BUILD)/deb-next
DEB_TREE         := src/ngx-http-gms-module
HOST_SUITE       := $(shell . /etc/os-release 2>/dev/null \
                        && echo $$VERSION_CODENAME)
DEB_SUITE        ?= $(HOST_SUITE)

.PHONY: deb deb-deps deb-next deb-test

# $(1): where the tree is copied to ($(1)/$(DEB_TREE)), built, and its
# packages left; $(2): a command run in the copy first
define deb_build
	rm -rf $(1)
	mkdir -p $(1)/$(DEB_TREE)
	tar -C $(CURDIR) --exclude=./build --exclude=./.git -cf - . \
	    | tar -C $(1)/$(DEB_TREE) -xf -
	cd $(1)/$(DEB_TREE) && ($(2)) && dpkg-buildpackage -us -uc -b \
	    > $(1)/build.log 2>&1 || { tail -40 $(1)/build.log; exit 1; }
	mv $(1)/src/*.deb $(1)/src/*.changes $(1)/src/*.buildinfo $(1)/
	echo $(HOST_SUITE) > $(1)/suite
endef

# debian/changelog's latest entry again, as version <latest>+next1
DEB_NEXT_ENTRY   := v=$$(dpkg-parsechangelog -S Version)+next1; \
    m=$$(dpkg-parsechangelog -S Maintainer); \
    d=$$(dpkg-parsechangelog -S Date); \
    { printf '%s\n\n' "ngx-http-gms-module ($$v) UNRELEASED; urgency=medium" \
      "  * make deb-test: this tree as a later version, to upgrade to." \
      " -- $$m  $$d"; cat debian/changelog; } > changelog.next \
    && mv changelog.next debian/changelog

deb-deps:
	@sh tools/install-deps.sh build-essential debhelper dpkg-dev fakeroot \
	    lintian help2man

ifeq ($(DEB_SUITE),$(HOST_SUITE))

deb: deps deb-deps
	$(call deb_build,$(DEB_DIR),true)
	lintian --fail-on error,warning --display-info $(DEB_DIR)/*.changes
	@ls -1 $(DEB_DIR)/*.deb

deb-next: deps deb-deps
	$(call deb_build,$(DEB_NEXT_DIR),$(DEB_NEXT_ENTRY))
	@ls -1 $(DEB_NEXT_DIR)/*.deb

deb-test: deb deb-next
	@bash tools/deb-test.sh $(DEB_DIR) $(DEB_NEXT_DIR)

else

deb deb-next: docker-deps
	@sh tools/with-dockerd.sh bash tools/deb-container.sh $(DEB_SUITE) $@

# one container builds both
deb-test: docker-deps
	@sh tools/with-dockerd.sh sh -c \
	    'bash tools/deb-container.sh $(DEB_SUITE) deb deb-next \
	     && bash tools/deb-test.sh $(DEB_DIR) $(DEB_NEXT_DIR)'

endif

# --- end of Debian packages ----------------------------------------------------
