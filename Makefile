# Thin aliases for the nox sessions (see noxfile.py). nox itself is installed into .venv/
# on first use when it is not on PATH, so a fresh machine needs only Python 3.11+ and g++.
# Pass arguments to a case with ARGS, e.g. make tile-unload-race ARGS="--arch sm_120".

PYTHON ?= python3
NOX_VERSION := 2026.10.20
NOX := $(shell command -v nox 2>/dev/null || echo .venv/bin/nox)

.PHONY: test test-slow test-slurm lock lock-check tile-unload-race tcgen05-ablation tcgen05-sass lint validate report env bench list

# The toolchains, the whole suite on this machine's Python, then the run stage and the record
# step on every Python pyproject.toml supports (tests_py-3.11, tests_py-3.12). A Python this
# machine does not have is reported as skipped, as the cluster tests are where Slurm cannot run:
# nox's default on CI (CI set) is to fail for it, and no registry CI reaches serves CPython.
test: $(NOX)
	$(NOX) -s toolchain tests -- $(ARGS)
	$(NOX) --no-error-on-missing-interpreters -s tests_py

# The slow tier: every committed document's rerun steps, executed as the comment prints them.
test-slow: $(NOX)
	$(NOX) -s tests_slow -- $(ARGS)

# locks/: write them (after changing pins or pyproject.toml's dependencies), or check that they
# are current (CI).
lock: $(NOX)
	$(NOX) -s lock

lock-check: $(NOX)
	$(NOX) -s lock -- --check

test-slurm: $(NOX)
	$(NOX) -s slurm_test -- $(ARGS)

tile-unload-race: $(NOX)
	$(NOX) -s tile_unload_race -- $(ARGS)

tcgen05-ablation: $(NOX)
	$(NOX) -s tcgen05_ablation -- $(ARGS)

tcgen05-sass: $(NOX)
	$(NOX) -s tcgen05_sass -- $(ARGS)

lint: $(NOX)
	$(NOX) -s lint

validate: $(NOX)
	$(NOX) -s validate

report: $(NOX)
	$(NOX) -s report -- $(RESULT)

env: $(NOX)
	$(NOX) -s env -- $(ARGS)

bench: $(NOX)
	$(NOX) -s bench -- $(ARGS)

list: $(NOX)
	$(NOX) -l

.venv/bin/nox:
	$(PYTHON) -m venv .venv
	.venv/bin/python -m pip install -q --disable-pip-version-check "nox[uv]==$(NOX_VERSION)"
