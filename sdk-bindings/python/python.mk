# Python binding of mcp-resume: make targets, included by the top-level Makefile
# (which defines ROOT := $(abspath .)).
#
#   make python-setup   .venv at the repository root with the binding (editable,
#                       with its test extras), mcp, pytest and uv, from PyPI; then
#                       `python -m mcp_resume precompile` fills the plugin's compilation cache
#   make python-test    mypy --strict on the package, then the binding's pytest
#                       suite: unit, conformance, end to end (needs Go on PATH
#                       to build the broker, and redis-server on PATH: with
#                       MCP_RESUME_REQUIRE_REDIS=1 the Redis runs fail without it)
#   make python-bench   startup cost of resume in the example server
#                       (examples/bench/python/bench_startup.py)

PYTHON ?= python3
PY_VENV := $(ROOT)/.venv
PY := $(PY_VENV)/bin/python
PY_SRC := $(ROOT)/sdk-bindings/python
# Reinstall when the package metadata, the example's requirements or the
# plugin change (the build copies plugin/plugin.wasm into the package).
PY_STAMP := $(PY_VENV)/.mcp-resume-python.stamp
PY_STAMP_DEPS := $(PY_SRC)/pyproject.toml $(PY_SRC)/hatch_build.py \
	$(ROOT)/examples/python-server/requirements.txt $(ROOT)/plugin/plugin.wasm

# How the demo and other tools start the Python example server (from ROOT).
PYTHON_SERVER_CMD = .venv/bin/python examples/python-server/server.py

.PHONY: python-setup python-test python-bench

python-setup: $(PY_STAMP)

$(PY_STAMP): $(PY_STAMP_DEPS)
	@test -x $(PY) || $(PYTHON) -m venv $(PY_VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check \
		-e '$(PY_SRC)[test]' -r $(ROOT)/examples/python-server/requirements.txt
	$(PY) -m mcp_resume precompile  # compile the plugin into the wasmtime cache now, not at the first start
	@touch $@

python-test: python-setup
	cd $(PY_SRC) && $(PY) -m mypy
	cd $(ROOT) && MCP_RESUME_REQUIRE_REDIS=$(MCP_RESUME_REQUIRE_REDIS) $(PY) -m pytest -p no:cacheprovider sdk-bindings/python/tests

python-bench: python-setup
	cd $(ROOT) && $(PY) examples/bench/python/bench_startup.py --runs 15
