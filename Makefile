# teachgrad Makefile -- two commands are all you need:
#
#   make lab    set everything up, then open the tutorial notebooks in JupyterLab
#   make test   set everything up, then run the test suite
#
# "Set everything up" means: install graphviz's `dot` (needs root, Debian/Ubuntu),
# create a virtual environment in .venv, and `pip install -e` this project into it.
# Each step is skipped when it is already done.
#
# Other targets: lint, bench, test-gpu, clean, distclean.
# Pass options through:  make test PYTEST_ARGS='-x -k grad'
#                        make test PYTEST_WORKERS=0   (one process; default: one per CPU)
#                        make lab LAB_ARGS='--no-browser --port 8888'

PYTHON      ?= python3
VENV        ?= .venv
PY          := $(VENV)/bin/python
PIP         := $(PY) -m pip
PYTEST_ARGS ?=
PYTEST_WORKERS ?= auto
LAB_ARGS    ?=
# ruff is pinned: each release formats code slightly differently.
RUFF_VERSION := 0.17.6

.PHONY: test lab lint bench test-gpu release venv system-deps clean distclean

# ---------------------------------------------------------------- the two main jobs

# The tests run in parallel, one pytest-xdist worker per CPU.
test: system-deps $(VENV)/.installed-test  ## run the tests
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# JupyterLab serves notebooks/ and opens the tour, 00_tour.ipynb, first: default_url is
# also the address it prints, so the link works with --no-browser too.
# (Jupyter refuses to run as root unless told --allow-root, e.g. in a container.)
lab: system-deps $(VENV)/.installed-lab  ## open the tutorial notebooks
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks --LabApp.default_url=/lab/tree/00_tour.ipynb \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# ---------------------------------------------------------------- other jobs

lint: $(VENV)/.installed-ruff-$(RUFF_VERSION)  ## style check (no files are changed)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: $(VENV)/.installed-test  ## teachgrad vs hand-written NumPy (and PyTorch if installed)
	$(PY) benchmarks/bench.py
	$(PY) benchmarks/bench_nn.py
	$(PY) benchmarks/bench_gpu.py  # (says what it needs and skips without CuPy and a GPU)

# GPU tests need CuPy (pip install -e '.[gpu]') and a CUDA GPU. Without them every
# cuda test would be skipped and the run would look green, so we refuse instead.
test-gpu: $(VENV)/.installed-test
	@$(PY) -c 'import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0' || { \
	  echo "make test-gpu: needs CuPy and a CUDA GPU; try: $(PIP) install -e '.[gpu]'"; exit 1; }
	$(PY) -m pytest -m cuda $(PYTEST_ARGS)

clean:  ## remove build and cache files (keeps .venv)
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o \
	  \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -print0 | xargs -0 rm -rf

distclean: clean  ## also remove the virtual environment
	rm -rf $(VENV)

# ---------------------------------------------------------------- setup steps

# graphviz's `dot` turns graphs into pictures. Installing it needs root; without
# root, or if apt-get fails, we only warn (viz falls back to a text rendering).
system-deps:
	@if ! command -v dot >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y graphviz; } || \
	      echo "warning: could not install graphviz; continuing without 'dot'"; \
	  else \
	    echo "hint: graphviz's 'dot' is missing; install it (e.g. sudo apt-get install graphviz) for graph pictures"; \
	  fi; \
	fi

venv: system-deps $(PY)

# The virtual environment. Debian/Ubuntu ship `venv` without `ensurepip` in a
# separate package (python3-venv); install it when we can.
$(PY):
	@if ! $(PYTHON) -c 'import venv, ensurepip' >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv; \
	  else \
	    echo "error: '$(PYTHON) -m venv' is unavailable; install it (e.g. sudo apt-get install python3-venv)"; \
	    exit 1; \
	  fi; \
	fi
	$(PYTHON) -m venv $(VENV)

# Stamp files: pip runs again only when pyproject.toml is newer than the stamp.
# (`| $(PY)` = "the venv must exist", without comparing timestamps with it.)
$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PIP) install -e ".[test,viz]"
	touch $@

$(VENV)/.installed-lab: pyproject.toml | $(PY)
	$(PIP) install -e ".[notebook,test]"
	touch $@

$(VENV)/.installed-ruff-$(RUFF_VERSION): | $(PY)
	$(PIP) install "ruff==$(RUFF_VERSION)"
	touch $@

# The student notebooks are generated from the instructor notebooks (solutions and hidden
# tests removed); commit the result. tests/course checks that they are up to date.
release: | $(PY)  ## regenerate course/exercises/*/student.ipynb
	$(PY) -m course.release
