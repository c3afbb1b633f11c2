# One command to set up and run the demo, one to set up and run the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	# the CPU build of PyTorch first, so nothing pulls the CUDA one
	$(BIN)/pip install torch==2.13.0

# lm-polygraph (the polygraph extra) without its long dependency list: only the modules
# that `import lm_polygraph` needs (all wheels, nothing compiles; ~1.5 min here), so that
# the plugin's tests run in CI against the real package
POLYGRAPH_IMPORTS := openai pandas datasets nltk sentence-transformers diskcache spacy \
	rouge-score absl-py bert-score omegaconf

setup: $(BIN)/python
	$(BIN)/pip install -e ".[dev,plots,eval]"
	$(BIN)/pip install --no-deps "lm-polygraph==0.7.0"
	$(BIN)/pip install $(POLYGRAPH_IMPORTS)

demo: setup
	$(BIN)/sigmoid-head demo

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check src tests recipes benchmarks
