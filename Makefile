# Entry points. Each installs what is missing first: `make setup` what run and lab need,
# `make setup-all` also the optional parts the tests use (vagrant, shellcheck, SimGrid's
# development files, an SSH server for --cluster).
PYTHON := .venv/bin/python

.PHONY: setup setup-all test test-unit test-emulation run lab clean

setup:
	@bash scripts/setup.sh

setup-all:
	@bash scripts/setup.sh --all

test: setup-all
	$(PYTHON) -m pytest -q -rs

test-unit: setup-all
	$(PYTHON) -m pytest -q -m "not emulation"

test-emulation: setup-all
	$(PYTHON) -m pytest -q -m emulation

# The main job: a 4-host star, in-network aggregation and ring, int32 and float32, at the
# default K (256 on the built-in switch: docs/results/k-default.md).
run: setup
	@rm -rf results/star4-int32 results/star4-float32
	$(PYTHON) -m experiments compare --topo star:4 --modes ina,ring --elements 1000000 --dtype int32 --out results/star4-int32
	$(PYTHON) -m experiments compare --topo star:4 --modes ina,ring --elements 1000000 --dtype float32 --out results/star4-float32
	@echo "== summary (results/star4-*/results.json) =="
	@$(PYTHON) -m experiments table results/star4-int32 results/star4-float32

# Mininet's CLI on a programmed 4-host star, with allreduce, ring, tree, slots, counters, jobs.
lab: setup
	$(PYTHON) -m lab --topo star:4 --cli

clean:
	rm -rf build logs pcaps .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
	-mn -c >/dev/null 2>&1
