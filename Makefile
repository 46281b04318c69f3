# Thin aliases for the nox sessions (see noxfile.py). nox itself is installed into .venv/
# on first use when it is not on PATH, so a fresh machine needs only Python 3.11+ and g++.
# Pass arguments to a case with ARGS, e.g. make tile-unload-race ARGS="--arch sm_120".

PYTHON ?= python3
NOX_VERSION := 2026.10.20
NOX := $(shell command -v nox 2>/dev/null || echo .venv/bin/nox)

.PHONY: check test test-slow test-slurm test-slurm-where-possible lock lock-check tile-unload-race tcgen05-ablation tcgen05-sass lint validate report env bench list

# The two tiers (README, "Testing"). make test: the fast tier, every module's unit and contract
# tests, end-to-end runs of the fake case, the schema and the committed documents' validation
# (pytest -m "not slow"; no toolchain, no GPU).
test: $(NOX)
	$(NOX) -s tests -- $(ARGS)

# The slow tier: the locked toolchains and the tests marked slow (fault injection at volume,
# committed documents re-rendered and their rerun steps executed, real nvcc/tileiras builds, every
# case's default plan, packaging), then the run stage and the record step on every Python
# pyproject.toml supports (tests_py-3.11, tests_py-3.12; the one nox runs under is skipped, as
# make test and tests_slow run those files on it), then the cluster tests where Slurm can
# start. A Python this machine does not have is reported as skipped, as the cluster tests are
# where Slurm cannot run: nox's default on CI (CI set) is to fail for it, and no registry CI
# reaches serves CPython.
test-slow: $(NOX)
	$(NOX) -s toolchain tests_slow -- $(ARGS)
	GPUREPRO_TIERS_RAN_HERE=1 $(NOX) --no-error-on-missing-interpreters -s tests_py
	$(MAKE) test-slurm-where-possible

# Everything CI runs (.ci/run): lint, the locks, both tiers.
check: lint lock-check test test-slow

# locks/: write them (after changing pins or pyproject.toml's dependencies), or check that they
# are current (CI).
lock: $(NOX)
	$(NOX) -s lock

lock-check: $(NOX)
	$(NOX) -s lock -- --check

test-slurm: $(NOX)
	$(NOX) -s slurm_test -- $(ARGS)

# tests/slurm_cluster.py available installs Debian's slurm-wlm and munge when they are missing and
# this is root, then starts and stops a cluster once; where Slurm cannot run it says why in one
# line, and this target says so plainly without failing. A failing cluster test fails it.
test-slurm-where-possible: $(NOX)
	@if $(PYTHON) tests/slurm_cluster.py available; then \
		$(MAKE) test-slurm; \
	else \
		echo "make test-slurm not run: Slurm cannot run on this machine (the line above says why)"; \
	fi

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
