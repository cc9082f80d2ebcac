# make lab       : create/update the environment and open JupyterLab at the repository root
# make test      : create/update the environment and run every test (unit tests and all notebooks)
# make test-unit : the unit tests alone (a couple of minutes, no notebook kernels)
# make run       : execute every notebook headless into build/ and write build/REPORT.md
# make bench     : measure the series' own numbers into bench/results.json and bench/RESULTS.md
# make student   : copies of the notebooks without solutions, in build/student/
# make notebooks : re-execute stored notebooks in place (clean kernel, ci profile) [NB=04]
# make teaching  : run the notebook suite once and write its minutes into TEACHING.md
#
# REQUIREMENTS=requirements-gpu.txt selects the CUDA stack. Each requirements file gets its
# own environment (.venv for requirements.txt, .venv-gpu for requirements-gpu.txt), so
# switching between them never mixes CPU and CUDA wheels in one place.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
REQUIREMENTS ?= requirements.txt
VENV ?= $(if $(filter requirements.txt,$(notdir $(REQUIREMENTS))),.venv,.venv-$(patsubst requirements-%.txt,%,$(notdir $(REQUIREMENTS))))
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: lab test test-unit run bench lint clean venv notebooks student teaching

venv: $(STAMP)

$(STAMP): $(REQUIREMENTS) pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { \
	  echo "Could not create $(VENV): install Python 3.11 or 3.12 with venv (Debian: apt-get install python3.11-venv)"; exit 1; }
	@echo "Installing $(REQUIREMENTS) into $(VENV): TensorFlow and MXNet are large downloads the first time"
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -r $(REQUIREMENTS) -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (series)" >/dev/null
	@touch $@
	@echo "$(VENV) is ready."

# Root (containers, cloud images) must say --allow-root or Jupyter refuses to start.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

# Served from the repository root, so the programs the notebooks refer to (helpers/workers/)
# open beside them; the browser starts in notebooks/.
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks \
	  $(ROOT_FLAG) $(LAB_ARGS)

test: $(STAMP)
	SERIES_PROFILE=ci $(BIN)/python -m pytest

test-unit: $(STAMP)
	SERIES_PROFILE=ci $(BIN)/python -m pytest tests

run: $(STAMP)
	$(BIN)/python -m tools.run_series --output build

notebooks: $(STAMP)
	$(BIN)/python -m tools.execute $(if $(NB),$(wildcard notebooks/$(NB)*.ipynb),notebooks/*.ipynb)

student: $(STAMP)
	$(BIN)/python -m tools.student --output build/student

# One run of the notebook suite under nbval; its JUnit report gives TEACHING.md's run minutes.
teaching: $(STAMP)
	$(BIN)/python -m tools.teaching --run

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

lint: $(STAMP)
	$(BIN)/ruff check helpers tools tests bench

clean:
	rm -rf build results notebooks/results .pytest_cache
