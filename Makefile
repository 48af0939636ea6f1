# `make run`: install, migrate, load the demo catalogue, create the demo merchant, serve.
# `make test`: install and run the whole suite (ruff, mypy, import-linter, pytest).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

# The test suite talks to the machine's PostgreSQL and Redis unless told otherwise.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

# Browser tests drive Debian's Chromium (never a downloaded browser).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_CHROMIUM := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends chromium

.PHONY: install browser run test lint typecheck imports bench clean

$(PY):
	python3.11 -m venv $(VENV) || python3 -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

browser:
	@command -v chromium >/dev/null 2>&1 || $(APT_CHROMIUM) || ($(SUDO) apt-get update && $(APT_CHROMIUM))

# `make run` is local development: the local settings, said explicitly (wsgi.py and the Celery
# app default to production settings, which refuse to start without a secret key).
run: export DJANGO_SETTINGS_MODULE := config.settings.local
run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
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

test: install browser lint typecheck imports
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(VENV)/bin/pytest -q

clean:
	rm -rf var .mypy_cache .ruff_cache
