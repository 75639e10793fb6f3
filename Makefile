# Developer entry points. `make setup` is idempotent; every other target depends on it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-done
# pytest runs in parallel (pytest-xdist): the real simulations mostly wait, so 6 workers on 2 cores (measured on
# fresh clones, quiet machine: pytest 12 min 17 s with 6, 13 min 42 s with 4; docs/decisions.md). Tests sharing the POC system or the demo campaign run as one serial group each, scheduled
# by tests/conftest.py.
WORKERS ?= 6
PARALLEL := -n $(WORKERS)

# Bytecode of the product code, written once before the suite: with PYTHONDONTWRITEBYTECODE set (as on CI images)
# every runner or diagnose CLI a test starts would compile ~130 modules again (0.24 s of CPU per start, 0.08 s with
# the bytecode; measured, docs/decisions.md).
BYTECODE := $(PY) -m compileall -q -j 0 skills shared

.PHONY: setup test unit integration eval bench mutate sync sync-check validate lint demo demo-diagnose dist clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	touch $(STAMP)

# The eval harness (CPU-bound, ~100 s) runs beside pytest (whose simulations mostly wait); its output is printed
# after pytest's, and the target fails when either fails.
test: setup sync-check validate lint
	@$(BYTECODE) >/dev/null
	@evals_log=$$(mktemp); $(PY) evals/run_evals.py >$$evals_log 2>&1 & evals_pid=$$!; \
	$(PY) -m pytest $(PARALLEL) --durations=15; tests_rc=$$?; \
	wait $$evals_pid; evals_rc=$$?; cat $$evals_log; rm -f $$evals_log; \
	echo "pytest exit $$tests_rc, evals exit $$evals_rc"; test $$tests_rc -eq 0 -a $$evals_rc -eq 0

unit: setup
	@$(BYTECODE) >/dev/null
	$(PY) -m pytest $(PARALLEL) -m "not integration"

integration: setup
	@$(BYTECODE) >/dev/null
	$(PY) -m pytest $(PARALLEL) -m integration

eval: setup
	$(PY) evals/run_evals.py

bench: setup
	$(PY) bench/run_all.py

# Mutation testing of the pure cores (mutmut; tens of minutes, not part of `make test`). ARGS="--only guard".
mutate: setup
	nice -n 15 $(PY) bench/mutate.py $(ARGS)

sync: setup
	$(PY) shared/sync.py

sync-check: setup
	$(PY) shared/sync.py --check

validate: setup
	@for d in skills/*/; do echo "agentskills validate $$d"; $(VENV)/bin/agentskills validate $$d || exit 1; done

lint: setup
	$(VENV)/bin/ruff format --check skills shared evals bench tests examples
	$(VENV)/bin/ruff check .

demo: setup
	$(PY) examples/demo.py

demo-diagnose: setup
	$(PY) examples/demo_diagnose.py

dist: setup
	$(PY) shared/package_skills.py --output dist

clean:
	rm -rf build dist demo_out .pytest_cache .ruff_cache
