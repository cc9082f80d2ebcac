# make lab   : create/update .venv and open the series in JupyterLab
# make test  : create/update .venv and run every test (unit tests and all notebooks)
# make run   : execute every notebook headless into build/ and write build/REPORT.md
# make bench : measure the series' own numbers into bench/results.json and bench/RESULTS.md
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
REQUIREMENTS ?= requirements.txt
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(notdir $(REQUIREMENTS))

.PHONY: lab test run bench lint clean venv notebooks

venv: $(STAMP)

$(STAMP): $(REQUIREMENTS) pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { \
	  echo "Could not create $(VENV): install Python 3.11 with venv (Debian: apt-get install python3.11-venv)"; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r $(REQUIREMENTS) -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (series)" >/dev/null
	@rm -f $(VENV)/.installed-*
	@touch $@

# Root (containers, cloud images) must say --allow-root or Jupyter refuses to start.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(ROOT_FLAG) $(LAB_ARGS)

test: $(STAMP)
	SERIES_PROFILE=ci $(BIN)/python -m pytest

run: $(STAMP)
	$(BIN)/python -m tools.run_series --output build

# Re-execute stored notebooks in place (clean kernel, ci profile): make notebooks [NB=04]
notebooks: $(STAMP)
	$(BIN)/python -m tools.execute $(if $(NB),$(wildcard notebooks/$(NB)*.ipynb),notebooks/*.ipynb)

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

lint: $(STAMP)
	$(BIN)/ruff check helpers tools tests bench

clean:
	rm -rf build results notebooks/results .pytest_cache
