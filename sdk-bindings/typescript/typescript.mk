# TypeScript binding (sdk-bindings/typescript) and example server
# (examples/typescript-server). Included by the top-level Makefile, which
# defines ROOT := $(abspath .).
#
#   make typescript-setup   npm ci + tsc for the binding and the example (idempotent)
#   make typescript-test    type-check, then conformance, unit and end-to-end tests (needs Go and
#                           redis-server on PATH: MCP_RESUME_REQUIRE_REDIS=1 fails the Redis runs without it)
#   make typescript-bench   startup (load vs baseline) and memory benchmark, Markdown tables
#                           (examples/bench/typescript/startup.mjs); the handle store's benchmark
#                           is examples/bench/typescript/handles.mjs (make bench-handles)
#
# $(TYPESCRIPT_SERVER_CMD) runs the example server from the repository root.

TYPESCRIPT_SERVER_CMD = node examples/typescript-server/dist/server.js

TS_BINDING := $(ROOT)/sdk-bindings/typescript
TS_EXAMPLE := $(ROOT)/examples/typescript-server
NPM ?= npm
NODE ?= node
TS_NPM_CI := $(NPM) ci --no-audit --no-fund --loglevel=error

.PHONY: typescript-setup typescript-test typescript-bench typescript-clean

# npm ci runs only when package-lock.json is newer than the installed tree
# (npm writes node_modules/.package-lock.json on every install), so a second
# `make typescript-setup` just rebuilds. The build copies plugin/plugin.wasm
# into the package (gitignored) and compiles with tsc.
$(TS_BINDING)/node_modules/.package-lock.json: $(TS_BINDING)/package-lock.json $(TS_BINDING)/package.json
	cd $(TS_BINDING) && $(TS_NPM_CI)
	@touch $@

# The example links the binding (file:../../sdk-bindings/typescript); its
# install scripts are ours to run, after the binding is built.
$(TS_EXAMPLE)/node_modules/.package-lock.json: $(TS_EXAMPLE)/package-lock.json $(TS_EXAMPLE)/package.json $(TS_BINDING)/node_modules/.package-lock.json
	cd $(TS_EXAMPLE) && $(TS_NPM_CI) --ignore-scripts
	@touch $@

typescript-setup: $(TS_BINDING)/node_modules/.package-lock.json $(TS_EXAMPLE)/node_modules/.package-lock.json
	cd $(TS_BINDING) && $(NPM) run --silent build
	cd $(TS_EXAMPLE) && $(NPM) run --silent build

typescript-test: typescript-setup
	@command -v $${GO:-go} >/dev/null || { echo "typescript-test needs Go on PATH (it builds examples/broker)"; exit 2; }
	cd $(TS_BINDING) && $(NODE) node_modules/typescript/bin/tsc -p tsconfig.test.json
	cd $(TS_BINDING) && MCP_RESUME_REQUIRE_REDIS=$(MCP_RESUME_REQUIRE_REDIS) $(NODE) --import tsx --test test/*.test.ts

typescript-bench: typescript-setup
	cd $(ROOT) && $(NODE) examples/bench/typescript/startup.mjs -n 20

typescript-clean:
	rm -rf $(TS_BINDING)/node_modules $(TS_BINDING)/dist $(TS_BINDING)/plugin.wasm $(TS_EXAMPLE)/node_modules $(TS_EXAMPLE)/dist
