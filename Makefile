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

setup: $(BIN)/python
	$(BIN)/pip install -e ".[dev,plots,eval]"

demo: setup
	$(BIN)/sigmoid-head demo

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check src tests recipes benchmarks
