# Two commands for a fresh machine:  `make app` (set up, then start the app)
#                                     `make test` (set up, then run the tests)
PYTHON ?= python3
# Where pip finds torch: empty = pip's own index; https://download.pytorch.org/whl/cpu gives the
# CPU build on a machine where PyPI's default is the CUDA one (see README, Two commands).
TORCH_INDEX ?=
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
APT_PACKAGES := wordnet-base wordnet-sense-index

.PHONY: setup app test test-all lint browser-deps system-deps test-deps load pool

# Debian packages: WordNet for NLTK (Chromium for the browser test: browser-deps).
system-deps:
	@dpkg -s $(APT_PACKAGES) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $(APT_PACKAGES); \
	  else echo "please run: sudo apt-get install $(APT_PACKAGES)"; exit 1; fi; }

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install -q -r requirements.txt
	touch $(STAMP)

# The tests' and the linter's tools (pytest, ruff, datasets), which the app does not need.
DEV_STAMP := $(VENV)/.installed-dev
$(DEV_STAMP): $(STAMP) requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(DEV_STAMP)

# Models are converted once into the cache (NONCE_CACHE_DIR, default ~/.cache/nonce-arena).
setup: system-deps $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m backends fetch

app: setup
	HF_HUB_OFFLINE=1 $(PY) app.py

# A failed install does not stop the tests: the browser test is then skipped, and says why.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq chromium; } \
	  || echo "browser test will be skipped: Chromium is not installed (needs root: apt-get install chromium)"
	@[ -d tests/browser/node_modules ] || { [ -f tests/browser/package.json ] && cd tests/browser && npm install --no-audit --no-fund --silent; } \
	  || echo "browser test will be skipped: npm install in tests/browser failed"

# The arena's prepared pool (assets/arena_items.jsonl), rebuilt from WordNet and GCIDE. Only this
# needs Debian's dict-gcide (GCIDE's quotations): the app reads the pool file, never GCIDE.
POOL_APT_PACKAGES := dict-gcide
pool: setup
	@dpkg -s $(POOL_APT_PACKAGES) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $(POOL_APT_PACKAGES); \
	  else echo "please run: sudo apt-get install $(POOL_APT_PACKAGES)"; exit 1; fi; }
	HF_HUB_OFFLINE=1 $(PY) -m tools.build_arena_pool --count 600 --out assets/arena_items.jsonl

# PostgreSQL server for the reliability tests (a throwaway cluster per run); skipped without it.
TEST_APT_PACKAGES := postgresql
test-deps:
	@dpkg -s $(TEST_APT_PACKAGES) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TEST_APT_PACKAGES); \
	  else echo "PostgreSQL tests will be skipped: sudo apt-get install $(TEST_APT_PACKAGES)"; fi; }

# The default run: unit + integration tests on the real embedded models; slow
# model-quality tests run only with NONCE_SLOW=1 (make test-all).
# -ra lists every skipped test with its reason; the last lines say which suites did not run.
test: setup $(DEV_STAMP) browser-deps test-deps
	@HF_HUB_OFFLINE=1 $(PY) -m pytest -q -ra; status=$$?; $(PY) -m tests.tools.skips; exit $$status

test-all: setup $(DEV_STAMP) browser-deps test-deps
	@NONCE_SLOW=1 HF_HUB_OFFLINE=1 $(PY) -m pytest -q -ra; status=$$?; NONCE_SLOW=1 $(PY) -m tests.tools.skips; exit $$status

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

# The full-size load test: 50 annotators x 10 000 votes on SQLite and on PostgreSQL,
# and the Learn click under 5 concurrent users.
load: setup test-deps
	HF_HUB_OFFLINE=1 $(PY) -m tests.tools.loadtest --annotators 50 --votes 10000 --learn-users 5 --learn-clicks 2
	HF_HUB_OFFLINE=1 $(PY) -m tests.tools.loadtest --annotators 50 --votes 10000 --db postgres
