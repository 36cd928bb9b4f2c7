# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CHROMIUM ?= /usr/bin/chromium

.PHONY: install browser browser-background test suite typecheck docs screenshots chaos soak demo demo-mcp demo-team lint clean record-histories

install: $(VENV)/.installed

# Runtime packages at the versions of the worker image's lock (deploy/requirements.lock),
# so tests run what ships and tests/integration/test_deploy.py's lock check holds on any day.
# uv resolves and installs them (about 10 s on the reference machine, where pip took 70 s);
# the venv keeps pip for whoever wants it.
UV_VERSION := 0.13.9
# The runtime alone (what `make demo` needs: 42 packages, about 320 MB, 14 s measured on
# the reference machine, 2026-12-07), then the test tools on top for `make test` (137
# packages, about 870 MB: Playwright, mypy, moto, ruff...).
# An older Python is refused before .venv exists: a venv made with it stayed behind, and a
# second `make demo PYTHON=python3.12` kept it (uv's resolver error said nothing of PYTHON).
$(VENV)/.runtime-installed: pyproject.toml deploy/constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "make: durable-agents needs Python 3.11 or newer, and $(PYTHON) is " + sys.version.split()[0] + ": run make again with PYTHON=python3.12 (or another 3.11+)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -c deploy/constraints.txt -e .
	touch $@

$(VENV)/.installed: $(VENV)/.runtime-installed
	$(BIN)/uv pip install --quiet --python $(BIN)/python -c deploy/constraints.txt -e '.[test]'
	touch $@

# The browser tests (tests/integration/test_ui_browser.py, test_inbox*.py) drive Debian's
# Chromium (Playwright never downloads a browser): installed here when missing and we are
# root; otherwise those tests skip, saying why.
BROWSER_MARK := .browser-installing
browser:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the browser tests"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq chromium >/dev/null; } \
		|| echo "warning: could not install chromium; the browser tests will skip"; \
	else echo "note: no $(CHROMIUM) and not root: the browser tests will skip"; fi

# `make test` installs it in the background (about 90 s of apt on the reference machine)
# while the venv fills and the tests start: the browser tests wait while $(BROWSER_MARK)
# exists (tests/support/browser.py), which is gone once the install ends, however it ends.
browser-background:
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		touch $(BROWSER_MARK); \
		{ $(MAKE) --no-print-directory browser; rm -f $(BROWSER_MARK); } > .browser.log 2>&1 & \
	else $(MAKE) --no-print-directory browser; fi

# The chaos suite's long scenarios (marked chaos_slow) run in `make chaos` only; its
# fast slice (kill -9 failover, cancel, model and tool faults, bad input, a versioned
# deploy with one build) runs here.
# Four pytest processes (pytest-xdist), each with its own dev server. Measured on the
# 2-core reference machine from a fresh clone, quiet, Chromium already installed:
# 2026-12-07 13:19 UTC, 2,371 tests: pytest 330 s, the whole target 349 s — over the
# 5 minutes it should stay within (the same day the 1.0.0 build measured 302 / 320 s, and
# 279 / 296 s the day before: the docs tests now run the tutorial's Temporal UI and inbox
# steps in Chromium). mypy and the docs build run beside the tests (before them: +8 s;
# five processes: +13 s). The suite waits more than it computes (about 1.6 of 2 cores
# busy), so a fourth process helps. --dist worksteal: an idle
# process takes tests queued for a busy one (with xdist's default, one process was seen
# running the last 130 s alone while two stood idle). Beside a second whole suite (load
# average up to 18, 2026-12-06): pytest 577 s, 620 s in all.
# bench.peers' framework peers are not installed here (about 2 minutes): their runners'
# test (tests/integration/test_bench_peer_runners.py) runs where `make peer-venvs` did.
# The set-up steps run side by side (apt's Chromium in the background while uv fills the
# venv; mypy and the docs build beside the tests).
# PYTHONDONTWRITEBYTECODE is cleared: the worker and agentctl processes the tests start
# then import our package from bytecode written once, not compiled anew each time.
test:
	@$(MAKE) --no-print-directory browser-background
	@$(MAKE) --no-print-directory $(VENV)/.docs-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@$(MAKE) --no-print-directory -j3 typecheck docs suite

# The tests alone (`make test` runs them beside mypy and the docs build: any failing fails it).
suite: install
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n 4 --dist worksteal -m "not chaos_slow and not soak" --durations=15

# mypy, strict on workflows/ (pyproject.toml [tool.mypy]), on the package as a wheel
# lays it out: a view of links, since mypy cannot follow the editable install's mapping
# of the repository's folders into durable_agents.
typecheck: install
	rm -rf .typecheck && mkdir -p .typecheck/durable_agents
	ln -s $(CURDIR)/durable_agents/*.py .typecheck/durable_agents/
	ln -s $(CURDIR)/durable_agents/dataplane .typecheck/durable_agents/dataplane
	for d in workflows activities client; do ln -s $(CURDIR)/$$d .typecheck/durable_agents/$$d; done
	cd .typecheck && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml \
		-p durable_agents.workflows

# The docs site (docs/, mkdocs.yml) into site/, strict: a broken link, anchor or API
# reference fails the build (about 5 s; part of `make test`). Its packages (the `docs`
# extra, about 15 s to install) come with the first `make docs`, not with `make demo`.
# mkdocstrings reads the public face from a view of links laid out as the wheel lays the
# package out (as `make typecheck` does): workflows/, activities/, client/ under durable_agents/.
docs: $(VENV)/.docs-installed
	rm -rf .docs-view && mkdir -p .docs-view/durable_agents
	ln -s $(CURDIR)/durable_agents/*.py .docs-view/durable_agents/
	ln -s $(CURDIR)/durable_agents/dataplane .docs-view/durable_agents/dataplane
	for d in workflows activities client; do ln -s $(CURDIR)/$$d .docs-view/durable_agents/$$d; done
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The docs' pictures (docs/img/*.png): the browser tests that check what they show take
# them against a real dev server's UI and a real gateway (about 40 s; Chromium needed).
screenshots: install browser
	DOCS_SCREENSHOTS=$(CURDIR)/docs/img $(BIN)/pytest -q -p no:cacheprovider \
		"tests/integration/test_ui_browser.py::test_operator_finds_the_waiting_run_in_the_ui_and_sees_the_pending_tool" \
		"tests/integration/test_inbox.py::test_an_approver_decides_calls_of_several_runs_from_the_inbox"

$(VENV)/.docs-installed: $(VENV)/.installed
	$(BIN)/uv pip install --quiet --python $(BIN)/python -c deploy/constraints.txt -e '.[docs]'
	touch $@

# Cutting a release: the scenario tests (marked @pytest.mark.history) run in record mode
# and write their runs' histories into the folder of the release this checkout builds
# (pyproject's MAJOR.MINOR), each with the workflow id it replays under (ids.jsonl);
# a scenario the folder holds already is skipped, never overwritten (tests/support/recording.py).
# Another folder: make record-histories HISTORIES_INTO=/tmp/hist-1.1
BUILT_RELEASE = $$($(BIN)/python -c 'from tests.support.histories import built_release as b; print(b())')
record-histories: install
	RECORD_HISTORIES=$(or $(HISTORIES_INTO),tests/histories/$(BUILT_RELEASE)) PYTHONDONTWRITEBYTECODE= \
		$(BIN)/pytest -n 2 -q -p no:cacheprovider -m history tests/integration

# Long runs (hundreds of turns: the 300-turn session of tests/integration/test_context_window.py;
# the S3 store against the SDK's own driver at scale, tests/integration/test_payload_store_s3.py;
# history per turn flat over 13 messages of 20 KB, tests/integration/test_long_runs.py).
soak: install
	$(BIN)/pytest -m soak

# Fault injection with real processes (tests/chaos/, about 6 minutes): writes bench/RELIABILITY.md.
chaos: install
	CHAOS_REPORT=bench/RELIABILITY.md $(BIN)/pytest tests/chaos

# Other ports or data file: make demo DEMO_ARGS="--port 7234 --ui-port 8234 --dev-db /tmp/dev.db"
demo: $(VENV)/.runtime-installed
	$(BIN)/python -m examples.demo $(DEMO_ARGS)

# An agent whose tools come from an MCP server (examples/mcp_tickets.py), offline.
demo-mcp: $(VENV)/.runtime-installed
	$(BIN)/python -m examples.mcp_demo $(DEMO_ARGS)

# Several agents: a handoff, an agent called as a tool (a run of its own), one approval.
demo-team: $(VENV)/.runtime-installed
	$(BIN)/python -m examples.team_demo $(DEMO_ARGS)

lint: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .temporal .pytest_cache .typecheck .docs-view site $(PEER_VENVS)

# Benchmarks (README: Benchmarks): about 26 minutes (12 of them the peers), writes bench/RESULTS.md.
.PHONY: bench
bench: install peer-venvs
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[bench]'
	$(BIN)/python -m bench.run

# The same runs through AgentWorkflow and its peers (bench/peers.py), a table on stdout.
.PHONY: bench-peers peer-venvs
bench-peers: install peer-venvs
	$(BIN)/python -m bench.peers --turns 10,50,100,200 --sizes 1000,20000

# The framework peers, each in a virtualenv of its own (.bench-venvs/NAME) made from
# bench/peer_requirements/NAME.txt (its versions pinned); a peer that cannot be installed
# is skipped by bench.peers, which says why.
PEER_VENVS := .bench-venvs
PEERS := openai-agents pydantic-ai
peer-venvs:
	@for peer in $(PEERS); do \
		req=bench/peer_requirements/$$peer.txt; dir=$(PEER_VENVS)/$$peer; \
		if [ ! -f $$dir/.installed ] || [ $$req -nt $$dir/.installed ]; then \
			echo "installing the $$peer peer in $$dir"; \
			{ rm -rf $$dir && $(PYTHON) -m venv $$dir \
				&& $$dir/bin/pip install --quiet -r $$req && touch $$dir/.installed; } \
			|| echo "warning: could not install the $$peer peer; bench.peers skips it, saying why"; \
		fi; \
	done
