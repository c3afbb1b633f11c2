# One command to set up and run the demo, one to set up and run the tests.
#   make demo: a virtual environment with the package and its plots extra, then the demo
#   make test: the same environment plus the test-only stack (dev and eval extras,
#              lm-polygraph and the modules it imports) and chromium, then pytest
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# every command picks its own thread count (sigmoid_head/threads.py: the CPUs it may use,
# less those the machine's load keeps busy); THREADS=N makes it N
THREADS ?=
THREADS_OPT := $(if $(THREADS),--threads $(THREADS),)
# PyTorch is installed first, on its own, so that the package's `torch>=2.1` is already met.
# TORCH_SPEC is what pip installs; TORCH_INDEX, when set, is the only index pip reads for it.
# The default takes torch from your pip's configured index: a CPU build where that index
# serves one (macOS, Windows, a mirror with CPU wheels), the CUDA build with its nvidia-*
# packages (several GB) from the public index on Linux. For the CPU build there:
#   make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
TORCH_INDEX_OPT := $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)

.PHONY: setup setup-demo browser demo test test-slow test-notice lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	@echo "installing PyTorch ($(TORCH_SPEC)) from $(if $(TORCH_INDEX),$(TORCH_INDEX),pip's configured index); TORCH_INDEX=... picks another (see the Makefile)"
	$(BIN)/pip install $(TORCH_INDEX_OPT) "$(TORCH_SPEC)"

# lm-polygraph (the polygraph extra) without its long dependency list: only the modules
# that `import lm_polygraph` needs (all wheels, nothing compiles; ~1.5 min here), so that
# the plugin's tests run in CI against the real package. The modules go in first and
# lm-polygraph last with --no-deps: pip then checks no dependency list, so it prints no
# resolver error about the packages of lm-polygraph's list that are left out on purpose.
POLYGRAPH_IMPORTS := openai pandas datasets nltk sentence-transformers diskcache spacy \
	rouge-score absl-py bert-score omegaconf

# Each install step leaves a stamp file in the environment and runs again only when
# pyproject.toml or this Makefile is newer than its stamp (or the environment is gone):
# pip took 20-27 s here to find that nothing is missing (`time make setup FORCE_SETUP=1`,
# which runs the installs anyway).
FORCE_SETUP ?=
ifneq ($(FORCE_SETUP),)
.PHONY: $(VENV)/.demo-installed $(VENV)/.test-installed
endif

# what the demo needs: the package and its figures (nothing of the test-only stack)
setup-demo: $(VENV)/.demo-installed

$(VENV)/.demo-installed: pyproject.toml Makefile | $(BIN)/python
	$(BIN)/pip install -e ".[plots]"
	@touch $@

# what the tests need besides: the dev and eval extras and lm-polygraph's imports
setup: setup-demo $(VENV)/.test-installed

$(VENV)/.test-installed: pyproject.toml Makefile $(VENV)/.demo-installed
	@echo "make setup: installing the test-only packages (dev and eval extras, lm-polygraph and its imports)"
	$(BIN)/pip install -e ".[dev,plots,eval]"
	$(BIN)/pip install $(POLYGRAPH_IMPORTS)
	@echo "lm-polygraph without its dependency list (only the modules above, which it imports); a pip 'dependency conflicts' message after this line names the packages left out on purpose"
	$(BIN)/pip install --no-deps "lm-polygraph==0.7.0"
	@touch $@

demo: setup-demo
	$(BIN)/sigmoid-head demo $(THREADS_OPT)

# The HTML page's test loads it in Debian's chromium (tests/test_evaluation_html.py). Installed here
# when missing and possible (apt-get as root or with password-less sudo; about 2-3 minutes);
# otherwise that one test is skipped.
browser:
	@command -v chromium >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	  else echo "chromium is missing and cannot be installed: the browser test will be skipped"; exit 0; fi; \
	  echo "make test: installing Debian's chromium with apt-get (about 100 packages, 2-3 minutes) for the HTML page's browser test"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium \
	    || echo "installing chromium failed: the browser test will be skipped"; }

test-notice:
	@echo "make test: sets up $(VENV) with the test-only packages, installs chromium with apt-get when it is missing (root or password-less sudo), then runs pytest"

# The suite, then the same suite's test files that touched an optional extra run again with
# that extra hidden (tests/check_extras.py): a test that needs an extra must skip without it.
# Last, the committed results that pass through BLAS or an optimizer are rebuilt once more
# with numpy's AVX-512 paths off, OpenBLAS's Haswell kernels and two OpenBLAS threads (two
# OpenMP threads in one of its two children; tests/check_portable.py): a check that compares
# floats as bytes cannot come back.
# The suite runs on TEST_WORKERS processes (pytest-xdist), one torch thread each, each test
# file whole on one worker (its module fixtures built once), the longest files first
# (tests/conftest.py SLOW_FIRST; --no-loadscope-reorder keeps that order); TEST_WORKERS=0
# runs it in one process. The tests marked slow (they train on the real SmolLM2) are left
# out: `make test-slow` runs them. Wall times: docs/development.md.
TEST_WORKERS ?= 2
TEST_ENV := OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
test: test-notice setup browser
	$(TEST_ENV) SIGMOID_HEAD_RECORD_EXTRAS=.pytest-extras.json $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=12
	$(TEST_ENV) $(BIN)/python tests/check_extras.py --record .pytest-extras.json --workers $(TEST_WORKERS)
	$(TEST_ENV) $(BIN)/python tests/check_portable.py

# The tests that train a head on the real SmolLM2 (marker `slow`: pyproject.toml's addopts
# leave them out of every other pytest run), kept out of `make test` to hold it within 12
# minutes on 2 cores.
test-slow: setup
	$(TEST_ENV) $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=2 -m slow

lint: setup
	$(BIN)/ruff check src tests recipes benchmarks
