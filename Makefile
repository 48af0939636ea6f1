# `make run`: install, migrate, load the demo catalogue, create the demo merchant, serve.
# `make test`: install and run the whole suite (ruff, mypy, import-linter, pytest).
# `make quick`: the tests that need no worker or server, on two processes.
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
# The API bench's load generator (bench/bench_api.py runs this target when wrk is missing).
APT_WRK := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends wrk

.PHONY: install browser nginx pgbouncer bench-tools run test quick lint typecheck imports audit lock clean

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

bench-tools:
	@command -v wrk >/dev/null 2>&1 || $(APT_WRK) || ($(SUDO) apt-get update && $(APT_WRK))

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

# The suite in two runs. First the quick tests, with the slow ones marked side_by_side (they
# wait on their own workers and servers, their bounds are minutes rather than ratios, and they
# kill only their own workers), on four processes (pytest-xdist, a test file each at a time,
# the files of slow tests first; each process has its own test database and the Redis database
# after REDIS_URL's, see config/settings/test.py): most of their time is spent waiting, so four
# keep two cores busy. Then the other slow tests (those that time one merchant's or lab's work
# against another's, or slow clients against a server) one at a time, with nothing else of the
# suite running beside them, and those marked serial (tests pytest-xdist cannot tell apart, see
# tests/conftest.py).
QUICK := -n 4 --dist loadfile -m "(not slow or side_by_side) and not serial"
ALONE := -m "(slow and not side_by_side) or serial"
# Then the tests of pooling once more, in one run through PgBouncer in transaction mode started
# on a free port in front of the same server, with DATABASE_PREPARED_STATEMENTS=0: the
# connection is pooled so (test_pooler.py, which runs only there), and the workers these tests
# start reach the database through it, keep their connections and carry on when they are cut
# (test_pipeline_connections.py). Nothing else of the service behaves otherwise behind it
# (docs/deployment.md, "Behind a connection pooler"), so the rest is not run twice. One process:
# there a worker's connections are counted by their name alone (tests/support/worker.py).
POOLED_TESTS := tests/api/test_pooler.py tests/orders/test_pipeline_connections.py
TEST_ENV = DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)}
# Each run's processes (pytest's, and the workers and servers its tests start) read the same
# modules: compiled once, into __pycache__, even where the environment says not to write them
# (pytest then rewrote the asserts of every test module again in every process, 15 s each).
test quick: export PYTHONDONTWRITEBYTECODE :=
test: install browser nginx pgbouncer lint typecheck imports
	$(TEST_ENV) $(VENV)/bin/pytest -q $(QUICK)
	$(TEST_ENV) $(VENV)/bin/pytest -q $(ALONE)
	$(TEST_ENV) $(PY) -m tests.support.pgbouncer $(VENV)/bin/pytest -q $(POOLED_TESTS)

# The tests that start no worker or server (not marked slow), for a developer's quick check:
# `make test`'s first run without its side_by_side tests, then the serial ones.
quick: install browser
	$(TEST_ENV) $(VENV)/bin/pytest -q -n 4 --dist loadfile -m "not slow and not serial"
	$(TEST_ENV) $(VENV)/bin/pytest -q -m "serial and not slow"

clean:
	rm -rf var .mypy_cache .ruff_cache
