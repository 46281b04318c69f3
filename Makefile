# Thin aliases for the nox sessions (see noxfile.py). nox itself is installed into .venv/ from its
# lock (locks/nox.txt, from locks/nox.in) on first use when no nox on PATH is as new as the
# noxfile's nox.needs_version, so a fresh machine needs only Python 3.11+ and g++.
# Pass arguments to a case with ARGS, e.g. make tile-unload-race ARGS="--arch sm_120".

PYTHON ?= python3
# The oldest nox noxfile.py runs under (its nox.needs_version, ">=X"), and the nox to use: the
# one on PATH where `sort -V` puts needs_version first (it is at least that), else the locked one.
NOX_NEEDS := $(shell sed -n 's/^nox.needs_version = ">=\(.*\)"$$/\1/p' noxfile.py)
NOX := $(shell found=$$(command -v nox 2>/dev/null); \
	have=$$([ -n "$$found" ] && "$$found" --version 2>/dev/null | tail -n 1); \
	if [ -n "$$have" ] && [ "$$(printf '%s\n%s\n' "$(NOX_NEEDS)" "$$have" | sort -V | head -n 1)" = "$(NOX_NEEDS)" ]; \
	then echo "$$found"; else echo .venv/bin/nox; fi)

.PHONY: check docs history test test-slow test-history test-slurm test-slurm-where-possible lock lock-check tcgen05-ablation tcgen05-sass lint validate report env bench list pack plan new

# The two tiers (docs/testing.md). make test: the fast tier, every module's unit and contract
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

# The history tier: the rerun blocks of the older committed documents (the newest of each case is
# in the slow tier). CI runs it after make check. A block is executed again where what it reads
# changed since its last full pass (tests/e2e/history_verified/); FULL=1 executes every block.
test-history: $(NOX)
	GPUREPRO_HISTORY_FULL=$(FULL) $(NOX) -s tests_history -- $(ARGS)

# Lint, the locks, the documentation site, both tiers: what a change must pass (CI runs this,
# then make test-history).
check: lint lock-check docs test test-slow

# The documentation site (docs/, mkdocs.yml) into build/site, warnings as errors; its results
# pages are generated from results/.
docs: $(NOX)
	$(NOX) -s docs -- $(ARGS)

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

# A case built and packed for an offline GPU node (docs/offline.md):
# make pack CASE=ptxas_abs_clamp ARGS="--bisect ptxas" writes build/packs/<case>-<target>-<commit>.tar.gz.
pack: $(NOX)
	$(NOX) -s pack -- $(CASE) $(ARGS)

# A new case (docs/cases.md): make new NAME=my_bug KIND=wrong-result writes cases/my_bug/ from
# the scaffold of that kind (crash, wrong-result, slowdown, python, python-value; default crash).
new: $(NOX)
	$(NOX) -s new -- $(NAME) --kind $(or $(KIND),crash)

# A case's run before any GPU is used: its trials, design and expected GPU time (nothing built):
# make plan CASE=my_bug ARGS="--arms baseline,trap".
plan: $(NOX)
	$(NOX) -s plan -- $(CASE) $(ARGS)

# Every case folder is a target of its own, its name with - for _ (make tile-unload-race, make
# my-bug): the case's nox session, ARGS passed on. A new case needs no edit here.
CASES := $(patsubst cases/%/manifest.py,%,$(wildcard cases/*/manifest.py))
CASE_TARGETS := $(subst _,-,$(CASES))
.PHONY: $(CASE_TARGETS)
$(CASE_TARGETS): $(NOX)
	$(NOX) -s $(subst -,_,$@) -- $(ARGS)

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

# A case's runs side by side, oldest first, with the regression check:
# make history CASE=tile_unload_race ARGS="--plot build/history.png --fail-on-regression".
history: $(NOX)
	$(NOX) -s history -- $(CASE) $(ARGS)

env: $(NOX)
	$(NOX) -s env -- $(ARGS)

bench: $(NOX)
	$(NOX) -s bench -- $(ARGS)

list: $(NOX)
	$(NOX) -l

# Reinstalled when the lock changes: an older .venv/bin/nox is not kept past a new lock.
.venv/bin/nox: locks/nox.txt
	$(PYTHON) -m venv .venv
	.venv/bin/python -m pip install -q --disable-pip-version-check --require-hashes -r locks/nox.txt
	touch $@
