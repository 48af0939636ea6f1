# `make run`: install, migrate, load the demo catalogue, create the demo merchant, serve.
# `make test`: install and run the whole suite (ruff, mypy, import-linter, pytest).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# Installs come from the lock (exact versions, hashes checked); `make lock` regenerates it.
LOCK := requirements/dev.lock
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml $(LOCK) | cksum | cut -d' ' -f1)
UV_LOCK := --generate-hashes --universal --python-version 3.11 --custom-compile-command "make lock" -q

# The test suite talks to the machine's PostgreSQL and Redis unless told otherwise.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

# Browser tests drive Debian's Chromium (never a downloaded browser).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_CHROMIUM := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends chromium
# The production topology's proxy (deploy/): Debian's nginx, and envsubst to render its config.
APT_NGINX := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends nginx gettext-base
HAVE_NGINX := (command -v nginx || test -x /usr/sbin/nginx) >/dev/null 2>&1 && command -v envsubst >/dev/null 2>&1
# The connection pooler the API and pipeline tests also run behind (transaction mode).
APT_PGBOUNCER := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends pgbouncer
HAVE_PGBOUNCER := (command -v pgbouncer || test -x /usr/sbin/pgbouncer) >/dev/null 2>&1

.PHONY: install browser nginx pgbouncer run test lint typecheck imports audit lock bench clean

# Each step says what it does; pip shows its own progress (a line a package, its download bars).
$(PY):
	@echo "==> [1/4] Creating the virtual environment $(VENV)"
	python3.11 -m venv $(VENV) || python3 -m venv $(VENV)

$(STAMP): pyproject.toml $(LOCK) | $(PY)
	@echo "==> [2/4] Upgrading pip"
	$(PIP) install --upgrade --progress-bar on pip
	@echo "==> [3/4] Installing the $$(grep -c '^[a-z0-9]' $(LOCK)) locked packages of $(LOCK) (hashes checked)"
	$(PIP) install --progress-bar on --require-hashes -r $(LOCK)
	@echo "==> [4/4] Installing the project itself (editable) and checking its dependencies"
	$(PIP) install --quiet --no-deps -e .
	@$(PIP) check >/dev/null || { $(PIP) check; echo "$(LOCK) is behind pyproject.toml: run make lock"; exit 1; }
	rm -f $(VENV)/.installed-*
	touch $(STAMP)
	@echo "==> Installed into $(VENV)"

install: $(STAMP)

browser:
	@command -v chromium >/dev/null 2>&1 || $(APT_CHROMIUM) || ($(SUDO) apt-get update && $(APT_CHROMIUM))

nginx:
	@$(HAVE_NGINX) || $(APT_NGINX) || ($(SUDO) apt-get update && $(APT_NGINX))

pgbouncer:
	@$(HAVE_PGBOUNCER) || $(APT_PGBOUNCER) || ($(SUDO) apt-get update && $(APT_PGBOUNCER))

# The locks: dev.lock (everything `make install` puts in .venv) and production.lock (the
# service and the deploy/ runner only, at the same versions), with every file's hash.
# Not after `install`: that stops when pyproject.toml asks for what the lock lacks, which is
# when a new lock is wanted; the old lock's tools (uv among them) are enough to make one.
lock: | $(PY)
	$(PIP) install --quiet --require-hashes -r $(LOCK)
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --extra deploy $(UV_LOCK) -o requirements/dev.lock
	$(VENV)/bin/uv pip compile pyproject.toml --extra deploy $(UV_LOCK) -c requirements/dev.lock \
		-o requirements/production.lock

# Known vulnerabilities in every locked package (pip-audit asks PyPI's per-release advisory
# data). Where that data cannot be reached pip-audit skips each package ("could not be
# audited"): then the packages with newer releases are listed instead. Fails on a finding.
audit: install
	@$(VENV)/bin/pip-audit --progress-spinner off --disable-pip --require-hashes \
		-r requirements/dev.lock >$(VENV)/pip-audit.txt 2>&1; status=$$?; \
	cat $(VENV)/pip-audit.txt; \
	if grep -q "could not be audited" $(VENV)/pip-audit.txt; then \
		echo "pip-audit could not reach advisory data for the packages above;" \
			"packages with newer releases (pip list --outdated):"; \
		$(PIP) list --outdated --exclude-editable; \
	fi; exit $$status

# `make run` is local development: the local settings, said explicitly (wsgi.py and the Celery
# app default to production settings, which refuse to start without a secret key). It needs no
# root and no system package: nginx and Chromium are for `make test` and deploy/ only.
run: export DJANGO_SETTINGS_MODULE := config.settings.local
run: install
	@echo "==> Migrating the database"
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	@echo "==> Loading the demo catalogue and the demo merchant"
	$(PY) manage.py setup_demo
	$(PY) scripts/run_all.py

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy .

# The import layers and independences of docs/architecture.md (contracts in pyproject.toml).
imports: install
	$(VENV)/bin/lint-imports

# Then the API and the pipeline tests once more, in one run through PgBouncer in transaction
# mode started on a free port in front of the same server, with DATABASE_PREPARED_STATEMENTS=0;
# the workers and web processes these tests start reach the database through it too. All the
# pipeline's tests but the 200-order one (test_pipeline_scale.py) and the noisy neighbours'
# (test_pipeline_noisy_neighbours.py), which pass through it as well but would add two minutes
# or more to every run.
POOLED_TESTS := tests/api $(addprefix tests/orders/,test_api_create.py test_api_read.py \
	test_api_actions.py test_api_shipments.py test_pipeline.py test_pipeline_admin.py \
	test_pipeline_connections.py test_pipeline_embedded.py test_pipeline_faults.py \
	test_pipeline_isolation.py test_pipeline_lanes.py test_pipeline_locks.py \
	test_pipeline_queues.py)
# Each pass in two runs: the quick tests on two processes (pytest-xdist, a test file each at a
# time; each process has its own test database and the Redis database after REDIS_URL's, see
# config/settings/test.py), then the tests marked slow (real workers and servers, some timing
# what they do) one at a time, with nothing else of the suite running beside them, and those
# marked serial (tests pytest-xdist cannot tell apart, see tests/conftest.py). The slow tests
# also marked side_by_side only wait on their workers and servers (they time nothing and kill
# no worker): the first pass runs them with its quick tests. Behind PgBouncer they stay with
# the other slow ones: there a worker's connections are counted by their name alone, not in
# their process's test database (tests/support/worker.py), so two processes' would mix.
QUICK := -n 2 --dist loadfile -m "(not slow or side_by_side) and not serial"
ALONE := -m "(slow and not side_by_side) or serial"
POOLED_QUICK := -n 2 --dist loadfile -m "not slow and not serial"
POOLED_ALONE := -m "slow or serial"
test: install browser nginx pgbouncer lint typecheck imports
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(VENV)/bin/pytest -q $(QUICK)
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(VENV)/bin/pytest -q $(ALONE)
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(PY) -m tests.support.pgbouncer $(VENV)/bin/pytest -q $(POOLED_QUICK) $(POOLED_TESTS)
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(PY) -m tests.support.pgbouncer $(VENV)/bin/pytest -q $(POOLED_ALONE) $(POOLED_TESTS)

clean:
	rm -rf var .mypy_cache .ruff_cache
