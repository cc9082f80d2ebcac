# make lab       : create/update the environment and open JupyterLab at the repository root
# make test      : create/update the environment and run every test (unit tests, all notebooks,
#                  and the calculators in JupyterLab in a headless Chromium where one is installed)
# make test-unit : the unit tests alone (a few minutes; no notebook runs, but the calculators'
#                  check starts JupyterLab kernels for their cells)
# make run       : execute every notebook headless into build/ and write build/REPORT.md;
#                  it goes on after a failing notebook (PROFILE=laptop runs the laptop sizes)
# make bench     : measure the series' own numbers into bench/results.json and bench/RESULTS.md
# make site      : the series as a static website in build/site/, from the stored notebooks
#                  (never executed), built offline where the machine can cut the network off
# make test-site : build the site and check it (links, images, no other host, in Chromium)
# make student   : copies of the notebooks without solutions, in build/student/
# make notebooks : re-execute stored notebooks in place (clean kernel, ci profile) [NB=04]
# make teaching  : run the notebook suite once and write its minutes into TEACHING.md
# make lock      : refresh the per-Python constraint files in constraints/ (maintainers)
#
# Python: the newest of 3.13, 3.12, 3.11 that runs here, or PYTHON=/path/to/python3.X.
# Each Python and requirements file gets its own environment (.venv-3.13 for requirements.txt
# on Python 3.13, .venv-gpu-3.13 for requirements-gpu.txt), so a new Python never reuses an
# environment built for another one, and CPU and CUDA wheels never mix.
SHELL := /bin/bash
SUPPORTED := 3.13 3.12 3.11
# `command -v` alone is not enough: a pyenv shim exists for every version pyenv knows and
# fails when that version is not selected, so each candidate must really start.
PYTHON ?= $(firstword $(foreach v,$(SUPPORTED),$(shell python$(v) -c 'import venv' \
            >/dev/null 2>&1 && echo python$(v))) python3)
PYVER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
REQUIREMENTS ?= requirements.txt
FLAVOUR := $(patsubst requirements%.txt,%,$(notdir $(REQUIREMENTS)))
VENV ?= .venv$(FLAVOUR)-$(PYVER)
CONSTRAINTS := constraints/$(if $(FLAVOUR),$(FLAVOUR:-%=%)-)py$(PYVER).txt
BIN := $(VENV)/bin
CHECK_PYTHON = case " $(SUPPORTED) " in *" $(PYVER) "*) ;; *) echo "The series runs on Python \
  3.11, 3.12 or 3.13, and $(PYTHON) is $(or $(PYVER),not a Python that runs) (TensorFlow 2.21 has \
  no wheel for 3.14): install one, then make PYTHON=/path/to/python3.13"; exit 1;; esac
STAMP := $(VENV)/.installed

.PHONY: lab test test-unit test-site site run bench lint clean venv notebooks student teaching lock

venv: $(STAMP)

$(STAMP): $(REQUIREMENTS) requirements-mxnet.txt pyproject.toml $(CONSTRAINTS)
	@$(CHECK_PYTHON)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { \
	  echo "Could not create $(VENV): install Python $(PYVER) with venv (Debian: apt-get install python3-venv)"; exit 1; }
	@echo "Installing $(REQUIREMENTS) into $(VENV): TensorFlow and MXNet are large downloads the first time"
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -r $(REQUIREMENTS) -c $(CONSTRAINTS)
	@echo "MXNet 1.9.1 without its stale numpy<2 requirement (README: Why MXNet installs apart)."
	@echo "pip check will name that requirement; it is expected and harmless for the series."
	$(BIN)/python -m pip install --no-deps -r requirements-mxnet.txt
	$(BIN)/python -m pip install --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (series)" >/dev/null
	@touch $@
	@echo "$(VENV) is ready."

$(CONSTRAINTS):
	@$(CHECK_PYTHON)
	@echo "No $@: the series has constraint files for Python $(SUPPORTED) (make lock writes them)"; exit 1

# Root (containers, cloud images) must say --allow-root or Jupyter refuses to start.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

# Served from the repository root, so the programs the notebooks refer to (helpers/workers/)
# open beside them; the browser starts in notebooks/.
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks \
	  $(ROOT_FLAG) $(LAB_ARGS)

# The tests also drive JupyterLab in a headless Chromium: Playwright comes from
# requirements-browser.txt, Chromium from the system (without one, that check is skipped and
# says how to get it; .ci/run installs Debian's and makes it required).
BROWSER_STAMP := $(VENV)/.browser
$(BROWSER_STAMP): requirements-browser.txt $(STAMP)
	$(BIN)/python -m pip install -r requirements-browser.txt -c $(CONSTRAINTS)
	@touch $@

test: $(STAMP) $(BROWSER_STAMP) site
	SERIES_PROFILE=ci $(BIN)/python -m pytest

test-unit: $(STAMP) $(BROWSER_STAMP)
	SERIES_PROFILE=ci $(BIN)/python -m pytest tests -m "not notebooks and not site"

# The website's tools live in an environment of their own (they need nothing of the series'
# stack). The build runs with the network cut off (a network namespace of its own) wherever
# the machine allows one, so a page that needed a download would fail here, not on a reader.
SITE_VENV := .venv-site-$(PYVER)
SITE_STAMP := $(SITE_VENV)/.installed
OFFLINE := $(if $(shell unshare -rn true 2>/dev/null && echo yes),unshare -rn)
$(SITE_STAMP): requirements-site.txt constraints/site-py$(PYVER).txt
	@$(CHECK_PYTHON)
	@test -x $(SITE_VENV)/bin/python || $(PYTHON) -m venv $(SITE_VENV)
	$(SITE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SITE_VENV)/bin/python -m pip install -r requirements-site.txt -c constraints/site-py$(PYVER).txt
	@touch $@

site: $(SITE_STAMP)
	$(OFFLINE) $(SITE_VENV)/bin/python -m tools.site --check

test-site: site $(STAMP) $(BROWSER_STAMP)
	$(BIN)/python -m pytest tests/test_site.py tests/test_diagrams.py

run: $(STAMP)
	$(BIN)/python -m tools.run_series --output build $(if $(PROFILE),--profile $(PROFILE)) $(if $(SHRINK),--shrink $(SHRINK))

notebooks: $(STAMP)
	$(BIN)/python -m tools.execute $(if $(NB),$(wildcard notebooks/$(NB)*.ipynb),notebooks/*.ipynb)

student: $(STAMP)
	$(BIN)/python -m tools.student --output build/student

# One run of the notebook suite under nbval; its JUnit report gives TEACHING.md's run minutes.
teaching: $(STAMP)
	$(BIN)/python -m tools.teaching $(if $(RUN),--profile-run $(RUN),--run)

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

lint: $(STAMP)
	$(BIN)/ruff check helpers tools tests bench

# The versions below the pins of each requirements file, for each supported Python, resolved
# by uv (it resolves for a Python that is not installed here); pip installs with them as -c.
lock:
	@test -x .venv-lock/bin/uv || { $(PYTHON) -m venv .venv-lock && \
	  .venv-lock/bin/python -m pip install --quiet uv==0.13.9; }
	for v in $(SUPPORTED); do \
	  .venv-lock/bin/uv pip compile --quiet requirements.txt --python-version $$v \
	    --python-platform x86_64-manylinux_2_28 --no-header -o constraints/py$$v.txt && \
	  .venv-lock/bin/uv pip compile --quiet requirements-gpu.txt --python-version $$v \
	    --python-platform x86_64-manylinux_2_28 --no-header -o constraints/gpu-py$$v.txt && \
	  .venv-lock/bin/uv pip compile --quiet requirements-site.txt --python-version $$v \
	    --python-platform x86_64-manylinux_2_28 --no-header -o constraints/site-py$$v.txt \
	  || exit 1; done

clean:
	rm -rf build results notebooks/results .pytest_cache
