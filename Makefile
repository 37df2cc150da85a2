# dqd: the two front-door commands (make demo, make test) plus bench, fuzz and matrix.
# Every target installs the Debian packages it needs when they are missing (as root),
# configures with CMake and builds. Nothing outside this repository is read.

SHELL := /bin/bash
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Tests run at once by each CTest stage: most end-to-end tests wait on sockets and timers,
# and the CPU-bound ones hold the CTest resource lock `cpu` (tests/README.md).
TEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
# make test's brief run of each target (14 targets: 42 CPU-s; 5 s each until 28 November,
# cut for make test under 8 minutes on 2 cores, issue 28): `make fuzz` is the real search
FUZZ_SMOKE_SECONDS ?= 3
# The end-to-end runs under real Erlang load (label scenarios), the tests that run nothing
# compiled here (label nosan: the source checks, the wrapper built as a rebar3 or Mix
# dependency; the sanitizer build gives it to adapt/all too, whose cases run one test each
# there) and the docs' samples and the tutorial's commands (label docs) run in the normal
# build only; every other test also runs under the sanitizers.
ASAN_SKIP_LABELS ?= scenarios|nosan|docs
# make install: where (PREFIX) and under which staging root (DESTDIR, for packages).
PREFIX ?= /usr/local
DESTDIR ?=

# Packages the build, the tests, the wrapper and the demo use (prometheus for promtool,
# which the integration tests run on /metrics; python3-prometheus-client for its strict
# OpenMetrics parser, which test_history runs on /metrics with exemplars; systemd for systemd-analyze, which the
# install test runs on the unit; git for the wrapper's rebar3 dependency test; chromium for
# the dashboard's browser test, tests/web, driven over its DevTools port; elixir for the
# elixir scenario, a Mix project using the wrapper).
DEB_PACKAGES := build-essential cmake pkg-config clang clang-format libclang-rt-14-dev \
	libuv1-dev libfftw3-dev libsqlite3-dev sqlite3 libjansson-dev libcurl4-openssl-dev \
	libhttp-parser-dev erlang-nox erlang-dev erlang-eunit erlang-proper-dev rebar3 \
	curl procps python3 python3-prometheus-client prometheus systemd git chromium libprotobuf-c-dev \
	protobuf-c-compiler zlib1g-dev elixir

# Node.js and npm for the dashboard's `npm ci` (uPlot, pinned in
# controller/web/package-lock.json; the build installs it into the build folder). Debian's
# are installed only when the machine has no node or no npm: with a Node.js installed
# another way, Debian's npm would conflict with it.
NODE_PACKAGES := $(shell command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
	|| echo nodejs npm)

.PHONY: all deps build build-asan test test-c test-asan test-erl format-check deps-check size-check \
	bench fuzz fuzz-build demo matrix install clean bench-web bench-nanopb docs-screenshot \
	docs-screenshots

all: build

# npm packages, each folder from its committed package-lock.json: tests/otlp holds the
# OpenTelemetry JS SDK and exporters of the OTLP end-to-end tests (Node 20's npm; Debian's
# nodejs and npm only when there is none).
NPM_DIRS := tests/otlp

deps:
	@./tools/install-deps $(DEB_PACKAGES) $(NODE_PACKAGES)
	@for d in $(NPM_DIRS); do \
		if [ ! -f $$d/node_modules/.package-lock.json ] || \
		   [ $$d/package-lock.json -nt $$d/node_modules/.package-lock.json ]; then \
			./tools/quiet "npm ci $$d" npm ci --prefix $$d --ignore-scripts --no-audit --no-fund; \
		fi; \
	done

# Builds print one line unless they fail (tools/quiet shows the whole log then).
build: deps
	@./tools/quiet "configure $(BUILD)" cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DDQD_WERROR=ON
	@./tools/quiet "build $(BUILD)" cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@./tools/quiet "configure $(ASAN_BUILD)" cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
		-DDQD_WERROR=ON -DDQD_SANITIZE=ON
	@./tools/quiet "build $(ASAN_BUILD)" cmake --build $(ASAN_BUILD) -j $(JOBS)

# dqd and dqctl in PREFIX/bin, the docs in PREFIX/share/doc/dqd, the systemd unit in
# PREFIX/lib/systemd/system (docs/running.md, "Installing it"); DESTDIR stages it all.
install: build
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# One job more in the normal build: for its first two minutes three of its jobs are the held
# scenarios, which mostly wait (tests/scenarios/CMakeLists.txt).
test-c: build
	@cd $(BUILD) && ctest --output-on-failure -j $$(( $(TEST_JOBS) + 1 ))

test-asan: build-asan
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j $(TEST_JOBS) \
		-LE '$(ASAN_SKIP_LABELS)'

test-erl: deps
	@./wrapper-erl/run-tests

format-check: deps
	@./tools/format-check

# The module order of tools/modules: no module includes a header of one above it.
deps-check: deps
	@./tools/check-deps

# No function over 150 lines and no .c file over 1,500 in the modules of tools/modules
# (the exceptions are named in tools/check-size).
size-check: deps
	@./tools/check-size

fuzz-build: deps
	@./tools/quiet "configure $(FUZZ_BUILD)" cmake -S . -B $(FUZZ_BUILD) \
		-DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DDQD_FUZZ=ON
	@./tools/quiet "build $(FUZZ_BUILD)" cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers

# Brief fuzzing of every target on its seed corpus (make test); `make fuzz` runs longer.
fuzz-smoke: fuzz-build
	@./tools/run-fuzzers $(FUZZ_BUILD) $(FUZZ_SMOKE_SECONDS)

fuzz: fuzz-build
	@./tools/run-fuzzers $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The checks, then the four test stages at once (tools/run-tests: test-c, test-asan with its
# build, fuzz-smoke with its build, test-erl; logs in $(BUILD)/test-logs).
test: format-check deps-check size-check build
	@./tools/run-tests "$(MAKE)" $(BUILD)/test-logs
	@echo "make test: all suites passed"

bench: build
	@./tools/run-bench $(BUILD)

# The dashboard's main-thread time per live update, 200 probes open, in headless Chromium
# (docs/PERFORMANCE.md, "Dashboard"); also run by `make bench`.
bench-web: build
	@python3 tests/web/bench_dashboard.py $(BUILD)/controller/dqd $(BUILD)/scenarios/sim/dqsim \
		$(BUILD)/bench-web

# The dashboard's pictures in docs/ (running.md, the tutorial), made by its browser tests:
# docs/dashboard.png (tree27 after a diagnosis), and dashboard-history.png,
# dashboard-operators.png, dashboard-800.png (a range across a restart with the heatmap,
# marks and exemplars; a choice's panel; the page at 800 px).
docs-screenshots: build
	@python3 tests/web/test_dashboard.py $(BUILD)/controller/dqd $(BUILD)/controller/dqctl \
		$(BUILD)/scenarios/sim/dqsim scenarios/tree27.dq $(BUILD)/tests/web/artifacts \
		--docs-screenshot docs/dashboard.png
	@python3 tests/web/test_dashboard_history.py $(BUILD)/controller/dqd \
		$(BUILD)/scenarios/sim/dqsim $(BUILD)/tests/web/artifacts --docs-dir docs

docs-screenshot: docs-screenshots

# The protobuf decoders against nanopb (docs/otlp.md §9, "The options"): not part of make
# bench, since the build needs nanopb only for this comparison.
NANOPB_PACKAGES := nanopb libnanopb-dev
bench-nanopb: deps
	@./tools/install-deps $(NANOPB_PACKAGES)
	@./tools/quiet "configure $(BUILD)" cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DDQD_WERROR=ON -DDQD_BENCH_NANOPB=ON
	@./tools/quiet "build bench_otlp_nanopb" cmake --build $(BUILD) -j $(JOBS) --target bench_otlp_nanopb
	@$(BUILD)/tests/otlp/bench_otlp_nanopb

demo: build
	@./tools/demo $(BUILD)

# The long sweeps (tools/run-matrix): the simulator matrix three times over, the Erlang
# mm1k diagnosis three times (never a single worker named), the three-node scenario for
# each fault variant twice, the Erlang queueing stations with the bottleneck in two places
# four times each (rho and saturation against the pools' own accounting), and two `make
# test` at once from two clones, three times (tools/stress-test). One summary line per part
# (per placement for the stations); logs in $(BUILD)/matrix-logs and $(BUILD)/stress.
matrix: build
	@./tools/run-matrix $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) wrapper-erl/dqd_wrapper/_build
