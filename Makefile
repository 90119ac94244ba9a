# Entry points. `sudo make test` and `sudo make run` install what is missing first.
PYTHON := .venv/bin/python

.PHONY: setup test test-unit test-emulation run clean

setup:
	@bash scripts/setup.sh

test: setup
	$(PYTHON) -m pytest -q -rs

test-unit: setup
	$(PYTHON) -m pytest -q -m "not emulation"

test-emulation: setup
	$(PYTHON) -m pytest -q -m emulation

clean:
	rm -rf build logs pcaps .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
	-mn -c >/dev/null 2>&1
