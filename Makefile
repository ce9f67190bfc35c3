# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
# PYTHON is a command or a version: `make test PYTHON=3.12` finds python3.12 on PATH or in pyenv
# (.ci/find-python) and installs into a venv of that version's own, .venv-3.12.
PYTHON     ?= python3
PYTHON_CMD := $(shell .ci/find-python $(PYTHON))
ifeq ($(PYTHON_CMD),)
$(error no interpreter for PYTHON=$(PYTHON) (what .ci/find-python said is above))
endif
PYVER      := $(shell $(PYTHON_CMD) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
VENV       ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(PYVER))
BIN        := $(VENV)/bin
# What `make run` needs (raydap and Ray), then what `make test` adds (the test stack: pytest,
# Playwright, Neovim, Ray Train and Serve, torch on 3.11).
RUN_STAMP  := $(VENV)/.installed-run
STAMP      := $(VENV)/.installed
# What the matrix needs on each other Python (the extra test-every-python): no browser, editor,
# type checker, Ray Train or Serve.
MATRIX_STAMP := $(VENV)/.installed-every-python

# Every Python raydap supports. `make test` runs the whole suite on PYTHON, beside a reduced but
# real one on each other version found here: what differs between Pythons. That is the code
# that runs inside workers (the unit tests, with every in-worker expression and private hook
# checked), the adapter against a real debugpy of that Python (tests/integration/adapter), and
# the end-to-end tests marked `every_python` (a real Ray head, bridge and workers: stops by
# breakpoint(), post-mortem, successive and legacy pdb, live workers' editor breakpoints, pause,
# set_trace and failed tasks, a followed group, child processes, stacks read and a rank paused
# from outside). `MATRIX=` skips it; in CI a missing one fails. What the bridge and the clients
# do with those stops (sharing sessions, restarts, ids, the CLI, the terminal debugger, path
# mapping), the bridge's own server integration tests (HTTP, MCP, WebSockets, limits, load) and
# the DAP fuzz run on PYTHON only: the same asyncio code on every version.
MATRIX       ?= 3.10 3.11 3.12 3.13
MATRIX_TESTS := tests/unit tests/integration/adapter tests/e2e/test_bridge.py tests/e2e/test_live.py \
                tests/e2e/test_follow.py tests/e2e/test_stacks_and_pause.py tests/e2e/test_children.py \
                -m 'not e2e or every_python' \
                --deselect tests/integration/adapter/test_fuzz_sessions.py::test_random_traffic_gets_valid_replies_and_harms_nobody

.PHONY: run test setup lanes lane-head lane-side side-checks side-matrix suite suite-head suite-tail install lint typecheck unit integration e2e bench bench-live bench-hangs bench-children bench-mcp bench-collectives bench-captures bench-page bench-soak bench-fleet bench-rank-sets clean install-every-python ext-check web-check web-vendor vsix e2e-tools screenshots \
        matrix matrix-suite

# The VS Code extension (vscode-ext/) and the tools of its end-to-end test (.tools/): Node 24 and
# code-server from npm, Debian's Chromium for Playwright. Versions are pinned here.
EXT         := vscode-ext
EXT_STAMP   := $(EXT)/node_modules/.installed
TOOLS       := .tools
NODE24_DIR  := $(TOOLS)/node24
CODE_SERVER := $(TOOLS)/code-server/node_modules/.bin/code-server
DAP_CLIENTS := $(TOOLS)/dap-clients/node_modules/@vscode/debugadapter-testsupport
# The MCP Inspector's CLI: an MCP client independent of the Python SDK, for tests/e2e/test_mcp.py.
MCP_INSPECTOR := $(TOOLS)/mcp-inspector/node_modules/@modelcontextprotocol/inspector-cli
APT_PACKAGES := chromium tmux gdb libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev
NPM_INSTALL := npm install --no-audit --no-fund --no-save --loglevel=error

$(BIN)/python:
	$(PYTHON_CMD) -m venv $(VENV)

# Reinstall only when the dependencies change. pip compiles every file it installs, and must:
# where PYTHONDONTWRITEBYTECODE is set (this machine sets it) nothing imported later is ever
# cached, and every Ray process would compile Ray again (tried: the matrix took 8 minutes, not 5).
# raydap itself is installed in place (editable), so pip compiles none of it: it is compiled here
# (a bridge then starts in 1.9 s of CPU rather than 2.4; a file changed since is compiled anew
# whenever it is imported, as Python always does).
PIP_INSTALL := $(BIN)/python -m pip install --quiet

# `make run` installs raydap and Ray; `make test` everything in one pip run (it was two, one
# after the other, each resolving Ray's dependencies), which also does for `make run`.
$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e .
	$(BIN)/python -m compileall -q protocol adapter bridge live
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e ".[test]"
	$(BIN)/python -m compileall -q protocol adapter bridge live
	touch $(RUN_STAMP) $(MATRIX_STAMP) $(STAMP)

$(MATRIX_STAMP): pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e ".[test-every-python]"
	$(BIN)/python -m compileall -q protocol adapter bridge live
	touch $(RUN_STAMP) $(MATRIX_STAMP)

install: $(STAMP)

## Start a local Ray head, the bridge and an example job paused at breakpoints. Installs only
## raydap and Ray. RUN_ARGS go to `raydap demo` (`make run RUN_ARGS="--port 0 --dap-port 0"`).
RUN_ARGS ?=
run: $(RUN_STAMP)
	$(BIN)/raydap demo $(RUN_ARGS)

## Lint, type-check and run every test (what CI runs), the extension's too. Everything is
## installed first, at once: each Python's venv, the extension and the editors' tools (pip and
## npm mostly wait on the network and the disk, so side by side they take little more than
## the longest of them).
## Then two lanes run side by side, each one's output whole when it ends: an end-to-end test
## often waits (for Ray, for a worker to stop), which the other lane fills. code-server, the
## longest install (about 4 minutes, most of it compiling), is built beside them: only the
## editor tests need it, and they run last in the second lane.
## (Three lanes were tried twice. The second time, on their own, the matrix's first Python took
## 9:24 rather than 4:47 and the load average passed 10: the cores are busy, though `time`
## counts half of them idle, since it never sees Ray's daemons, which are not its children.)
test:
	@$(MAKE) --no-print-directory -j8 --output-sync=target setup
	@$(MAKE) --no-print-directory -j3 --output-sync=target lanes

# How many of the slowest tests each suite names (`DURATIONS=0`: every one, to balance the lanes).
DURATIONS ?= 15
# The lanes end about together: the whole suite on PYTHON but its tail; beside it, the static
# checks, the matrix on the other Pythons, then the tail: a soak, the benchmarks' smoke run,
# `make run` tried from empty homes and the editor tests (VS Code in code-server).
SUITE_TAIL := tests/e2e/test_soak.py tests/e2e/test_bench_smoke.py tests/e2e/test_first_run.py \
              tests/e2e/test_vscode_extension.py
OTHER_PYTHONS := $(filter-out $(PYVER),$(MATRIX))

# One make graph, no make inside another for code-server: the tail waits for it and for the
# matrix, and nothing builds it twice.
lanes: lane-head lane-side $(CODE_SERVER)

lane-head: suite-head

lane-side: suite-tail

side-checks: $(STAMP)
	@$(MAKE) --no-print-directory lint typecheck ext-check web-check

side-matrix: side-checks
	@$(MAKE) --no-print-directory matrix

suite-head: $(STAMP)
	RAYDAP_REQUIRE_EDITOR_TESTS=1 $(BIN)/python -m pytest -q --durations=$(DURATIONS) \
		$(addprefix --ignore=,$(SUITE_TAIL))

suite-tail: $(STAMP) side-matrix $(CODE_SERVER)
	RAYDAP_REQUIRE_EDITOR_TESTS=1 $(BIN)/python -m pytest -q -p no:cacheprovider \
		--durations=$(DURATIONS) $(SUITE_TAIL)

## The whole suite on PYTHON (the editors' tests must run: a missing tool fails them).
suite: $(STAMP)
	RAYDAP_REQUIRE_EDITOR_TESTS=1 $(BIN)/python -m pytest -q --durations=15

# All but code-server, which `make test` builds beside the lanes.
E2E_QUICK_TOOLS := $(TOOLS)/.apt $(NODE24_DIR)/node_modules/.bin/node $(DAP_CLIENTS) \
                   $(MCP_INSPECTOR)/.installed
setup: $(STAMP) vsix $(E2E_QUICK_TOOLS) $(addprefix install-python-,$(filter-out $(PYVER),$(MATRIX)))

# Another Python's venv (the matrix's, with what its tests need), installed by a make of its own;
# in CI a missing one fails.
install-python-%:
	@if .ci/find-python $* >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory install-every-python PYTHON=$*; \
	elif [ -n "$$CI" ]; then .ci/find-python $*; exit 1; \
	else echo "matrix: no Python $* here, its tests are skipped"; fi

## The reduced suite on every other Python of MATRIX (each in its own venv), one after another.
matrix:
	@for version in $(OTHER_PYTHONS); do \
		$(MAKE) --no-print-directory matrix-$$version || exit 1; \
	done

matrix-%:
	@if ! .ci/find-python $* >/dev/null 2>&1; then \
		if [ -n "$$CI" ]; then .ci/find-python $*; exit 1; fi; \
		echo "matrix: no Python $* here, its tests are skipped"; \
	else \
		echo "== Python $*: $(MATRIX_TESTS)"; \
		$(MAKE) --no-print-directory matrix-suite PYTHON=$*; \
	fi

install-every-python: $(MATRIX_STAMP)

matrix-suite: $(MATRIX_STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=$(DURATIONS) $(MATRIX_TESTS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy cannot follow the editable install's import hook, so it checks the package through a
# tree of links named as it is installed (raydap/protocol -> protocol/, ...).
TYPECHECK := $(VENV)/typecheck

typecheck: $(STAMP)
	@mkdir -p $(TYPECHECK)/raydap
	@for folder in protocol adapter bridge live; do ln -sfn "$(CURDIR)/$$folder" $(TYPECHECK)/raydap/$$folder; done
	MYPYPATH=$(TYPECHECK) $(BIN)/mypy -p raydap

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

integration: $(STAMP)
	$(BIN)/python -m pytest -q tests/integration

e2e: $(STAMP) vsix e2e-tools
	RAYDAP_REQUIRE_EDITOR_TESTS=1 $(BIN)/python -m pytest -q tests/e2e

## The benchmarks of docs/performance.md (several minutes; not part of `make test`).
## `make bench PYTHON=3.12` runs them on that Python; `make bench-live PYTHON=3.12` only P7.
BENCH_JSON := bench/results$(if $(filter python3,$(PYTHON)),,-$(PYVER)).json

bench: $(STAMP)
	$(BIN)/python -m bench.run --json $(BENCH_JSON)

bench-live: $(STAMP)
	$(BIN)/python -m bench.run --live-only --json bench/results-live-$(PYVER).json

## The hang benchmarks (about 25 minutes: the watch runs 10 minutes each way; needs torch, 3.11).
bench-hangs: $(STAMP)
	$(BIN)/python -m bench.hangs --json bench/results-hangs.json

bench-children: $(STAMP)
	$(BIN)/python -m bench.children --json bench/results-children.json

## Collective verdicts: the recorder's cost, reading it, a verdict over 10,000 ranks (about
## 25 minutes; needs torch, 3.11).
bench-collectives: $(STAMP)
	$(BIN)/python -m bench.collectives --json bench/results-collectives.json

## MCP for coding agents: what each door costs, and every worker at once (bench/mcp.py).
bench-mcp: $(STAMP)
	$(BIN)/python -m bench.mcp --json bench/results-mcp.json

## Capture points: a capture's cost to its worker, how soon it is listed, a hot line, 1,000
## ranks at once (bench/captures.py; about 3 minutes; K1 and K2 need torch, 3.11).
bench-captures: $(STAMP)
	$(BIN)/python -m bench.captures --json bench/results-captures-3.11.json

## The web page in Chromium: the worker view, the stacks chart of 1,000 ranks, Find among 1,000
## workers (bench/page.py; under a minute).
bench-page: $(STAMP)
	$(BIN)/python -m bench.page --json bench/results-page.json

## One bridge over 8 to 64 real gloo ranks: its memory and CPU per rank, stopping and
## continuing every rank, stacks, captures, a hang and a dead rank (bench/fleet.py; about 15
## minutes; a size is skipped where memory is short; needs torch, 3.11).
bench-fleet: $(STAMP)
	$(BIN)/python -m bench.fleet --json bench/results-fleet.json

## Rank sets: matching one against 10,000 simulated ranks, and the mesh coordinates of 1,000
## (bench/rank_sets.py; seconds).
bench-rank-sets: $(STAMP)
	$(BIN)/python -m bench.rank_sets --json bench/results-rank-sets.json

## Successive stops at volume, with replaces (bench/soak.py; about 15 minutes).
bench-soak: $(STAMP)
	$(BIN)/python -m bench.soak --json bench/results-soak.json

$(EXT_STAMP): $(EXT)/package.json $(EXT)/package-lock.json
	cd $(EXT) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## Type-check the extension and run its unit tests.
ext-check: $(EXT_STAMP)
	cd $(EXT) && npm run --silent typecheck && npm test --silent

# The web page's libraries (bridge/web/package.json, pinned in its lockfile) are copied into
# bridge/web/vendor/ and committed: `make run` and the wheel need no npm, and the bridge serves
# them itself (clusters are often offline). `make web-check` fails when they differ.
WEB := bridge/web
WEB_VENDORED := prismjs/components/prism-core.min.js prismjs/components/prism-python.min.js \
                d3/dist/d3.min.js d3-flame-graph/dist/d3-flamegraph.umd.min.js \
                d3-flame-graph/dist/d3-flamegraph.css
WEB_LICENSES := prismjs d3 d3-flame-graph

web-vendor:
	npm ci --no-audit --no-fund --loglevel=error --ignore-scripts --prefix $(WEB)
	@mkdir -p $(WEB)/vendor
	for file in $(WEB_VENDORED); do cp $(WEB)/node_modules/$$file $(WEB)/vendor/; done
	for name in $(WEB_LICENSES); do cp $(WEB)/node_modules/$$name/LICENSE $(WEB)/vendor/$$name.LICENSE.txt; done

web-check:
	@npm ci --no-audit --no-fund --loglevel=error --ignore-scripts --prefix $(WEB)
	@for file in $(WEB_VENDORED); do \
		cmp $(WEB)/node_modules/$$file $(WEB)/vendor/$$(basename $$file) || \
		{ echo "$(WEB)/vendor/ is not what its lockfile pins: make web-vendor"; exit 1; }; \
	done

## Build the extension package vscode-ext/raydap.vsix.
vsix: $(EXT)/raydap.vsix

$(EXT)/raydap.vsix: $(EXT_STAMP) $(wildcard $(EXT)/src/*.ts) $(EXT)/package.json $(EXT)/README.md
	cd $(EXT) && npm run --silent package

## What the editor, terminal and stack tests need: Chromium, tmux and gdb (apt), Node 24, code-server and Microsoft's DebugClient
## (npm), under .tools/. (Neovim comes from PyPI with the test extras; nvim-dap from ../shared.)
e2e-tools: $(E2E_QUICK_TOOLS) $(CODE_SERVER)

$(MCP_INSPECTOR)/.installed:
	$(NPM_INSTALL) --prefix $(TOOLS)/mcp-inspector @modelcontextprotocol/inspector-cli@1.0.3
	touch $@

$(DAP_CLIENTS):
	$(NPM_INSTALL) --prefix $(TOOLS)/dap-clients @vscode/debugadapter-testsupport@1.68.0
	touch $@

$(TOOLS)/.apt:
	@mkdir -p $(TOOLS)
	@sudo=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	dpkg -s $(APT_PACKAGES) >/dev/null 2>&1 || \
	$$sudo apt-get install -y -q $(APT_PACKAGES) || \
	{ $$sudo apt-get update -q && $$sudo apt-get install -y -q $(APT_PACKAGES); }
	touch $@

$(NODE24_DIR)/node_modules/.bin/node:
	$(NPM_INSTALL) --prefix $(NODE24_DIR) node@24.21.0

# code-server compiles native modules: against Node 24's own headers, not the system Node's.
$(CODE_SERVER): $(NODE24_DIR)/node_modules/.bin/node | $(TOOLS)/.apt
	PATH="$(abspath $(NODE24_DIR))/node_modules/.bin:$$PATH" \
	npm_config_nodedir="$$(echo $(abspath $(NODE24_DIR))/node_modules/node/node_modules/node-linux-*)" \
		$(NPM_INSTALL) --prefix $(TOOLS)/code-server code-server@4.139.1
	touch $@

## Re-make the screenshots in docs/ (the editor test takes them).
screenshots: $(STAMP) vsix e2e-tools
	RAYDAP_REQUIRE_EDITOR_TESTS=1 RAYDAP_SCREENSHOTS=docs/img $(BIN)/python -m pytest -q \
		tests/e2e/test_vscode_extension.py tests/e2e/test_web_page.py tests/e2e/test_hangs.py \
		tests/e2e/test_captures.py

clean:
	rm -rf .venv .venv-* .pytest_cache .mypy_cache .ruff_cache .hypothesis $(TOOLS) \
		$(EXT)/node_modules $(EXT)/out $(EXT)/dist $(EXT)/raydap.vsix
