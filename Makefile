# teachgrad Makefile -- two commands are all you need:
#
#   make lab    set everything up, then open the tutorial notebooks in JupyterLab
#   make test   set everything up, then run the test suite
#
# "Set everything up" means: install graphviz's `dot` (needs root, Debian/Ubuntu),
# create a virtual environment in .venv, and `pip install -e` this project into it (done
# by uv where it can be had: it is faster).
# `make test` also installs what only the tests need: PyTorch (CPU build), the oracle
# teachgrad's values and gradients are compared with, Chromium for the browser test, and
# CuPy's CUDA 12 wheel, whose names and signatures are checked (it imports without a GPU).
# Each step is skipped when it is already done. CI (.ci/run) runs exactly `make test`.
#
# Other targets: lint, bench, test-gpu, oracle, cupy, browser, clean, distclean.
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
# The oracle: one pinned torch, the CPU build from PyTorch's own index where the
# platform has one (PyPI's Linux wheel of the same version is the multi-GB CUDA build).
TORCH_VERSION := 2.13.0
TORCH_INDEX   := https://download.pytorch.org/whl/cpu
# What `make lab` serves: the repository's root, so both the tutorials (notebooks/) and
# the exercises (course/exercises/*/student.ipynb) open; the tour opens first.
LAB_ROOT      := .
LAB_FIRST     := notebooks/00_tour.ipynb

.PHONY: test lab lint bench test-gpu release venv system-deps oracle cupy browser clean distclean

# ---------------------------------------------------------------- the two main jobs

# The tests run in parallel, one pytest-xdist worker per CPU. The style check (ruff) is
# one of them (tests/test_style.py). If the oracle or Chromium could not be installed,
# their tests skip and the run ends with a loud line that counts them; with CI set,
# such a skip fails the run (tests/needs.py).
# Then the CUDA path, without a GPU: the op, engine, in-place, view, nn, optim, functional,
# forward-AD, saved-tensor and snapshot tests again, with "cuda" as the default device on
# a strict CuPy stand-in (tests/cupy_standin.py; about 13,000 tests, 50 s on 2 CPUs).
# The grids that compare every op's dtypes and layouts with torch's run there as well: the
# stand-in lays out results and rounds floor division, % and a max/min tie as CuPy's
# kernels do, so it does not just give the CPU's answers again. torch's OpInfo samples
# are left out (60 s there: CI's budget), as their values are the CPU's.
STANDIN_TESTS := tests/teachgrad/ops tests/teachgrad/inplace tests/teachgrad/nn \
  tests/teachgrad/optim tests/teachgrad/test_devices.py \
  $(addprefix tests/teachgrad/autograd/,test_engine.py test_quiet_pass.py test_gradcheck.py test_forward_ad.py \
    test_functional.py test_saved_hooks_and_anomaly.py test_events_and_snapshots.py)
NOT_ON_STANDIN := --ignore=tests/teachgrad/ops/test_torch_opinfo_samples.py
test: system-deps browser $(VENV)/.installed-test oracle cupy  ## run the tests
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)
	$(PY) -m pytest -n $(PYTEST_WORKERS) --device-standin $(STANDIN_TESTS) $(NOT_ON_STANDIN) $(PYTEST_ARGS)

# JupyterLab serves the learning path and opens the tour first: default_url is also the
# address it prints, so the link works with --no-browser too.
# (Jupyter refuses to run as root unless told --allow-root, e.g. in a container.)
lab: system-deps $(VENV)/.installed-lab  ## open the tutorials and the exercises
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(LAB_ROOT) --LabApp.default_url=/lab/tree/$(LAB_FIRST) \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# ---------------------------------------------------------------- other jobs

lint: $(VENV)/.installed-test  ## style check (no files are changed; also part of make test)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: $(VENV)/.installed-test  ## teachgrad vs hand-written NumPy (and PyTorch if installed)
	$(PY) benchmarks/bench.py
	$(PY) benchmarks/bench_viz.py
	$(PY) benchmarks/bench_nn.py
	$(PY) benchmarks/bench_gpu.py  # (says what it needs and skips without CuPy and a GPU)

# GPU tests need CuPy (pip install -e '.[gpu]') and a CUDA GPU. Without them every
# cuda test would be skipped and the run would look green, so we refuse instead.
# On the GPU: the tests marked cuda, then the stand-in's set on real CuPy ("cuda" as the
# default device), then the GPU benchmark.
test-gpu: $(VENV)/.installed-test
	@$(PY) -c 'import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0' || { \
	  echo "make test-gpu: needs CuPy and a CUDA GPU; try: $(PIP) install -e '.[gpu]'"; exit 1; }
	$(PY) -m pytest -m cuda $(PYTEST_ARGS)
	$(PY) -m pytest --device-cuda $(STANDIN_TESTS) $(PYTEST_ARGS)
	$(PY) benchmarks/bench_gpu.py --require-gpu

clean:  ## remove build and cache files (keeps .venv)
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o \
	  \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -print0 | xargs -0 rm -rf

distclean: clean  ## also remove the virtual environment
	rm -rf $(VENV)

# ---------------------------------------------------------------- setup steps

# $(call apt-install,COMMAND,PACKAGE,WHAT FOR): install a Debian package whose command is
# missing. Installing needs root: without root or apt-get we only print a hint, and if
# apt-get fails we only warn (each missing piece has its fallback: text pictures, a
# skipped test that the run's closing line counts).
define apt-install
	@if ! command -v $(1) >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(2); } || \
	      echo "warning: could not install $(2); continuing without $(3)"; \
	  else \
	    echo "hint: '$(1)' is missing; install it (e.g. sudo apt-get install $(2)) for $(3)"; \
	  fi; \
	fi
endef

# graphviz's `dot` turns graphs into pictures (viz falls back to text without it).
system-deps:
	$(call apt-install,dot,graphviz,graph pictures)

# Chromium drives the browser test (tests/viz/test_browser.py) through playwright, which
# never downloads a browser of its own.
browser:
	$(call apt-install,chromium,chromium,the browser test)

venv: system-deps $(PY)

# PyTorch, the test oracle. If it cannot be installed (no network, no wheel for this
# platform) make test goes on without it, and its tests report what was skipped.
# (--retries 1: where PyTorch's index cannot be reached at all, pip's five retries for
# torch and for each of its dependencies cost half a minute before it looks elsewhere.)
oracle: $(VENV)/.installed-test
	@$(PY) -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "$(TORCH_VERSION)")' 2>/dev/null || \
	  $(PIP) install --retries 1 "torch==$(TORCH_VERSION)" --extra-index-url $(TORCH_INDEX) || \
	  echo "warning: could not install the PyTorch oracle; the tests that compare with it will be skipped"

# CuPy's CUDA 12 wheel (about 140 MB), for the CuPy surface check; it imports without a
# GPU. Like the oracle: if it cannot be installed, its tests report what was skipped.
cupy: $(VENV)/.installed-test
	@$(PY) -c 'import cupy' 2>/dev/null || $(PIP) install cupy-cuda12x || \
	  echo "warning: could not install CuPy; the CuPy surface check will be skipped"

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

# $(call install-project,EXTRAS): `pip install -e ".[EXTRAS]"`, done by uv where it can
# be had: uv (installed into the venv first) fetches and unpacks the hundred-odd packages
# in parallel (the test extras: 30 s on a 2-CPU machine where pip took 80 s), and compiles
# their bytecode as pip does (the sandboxed graders cannot write it later). If uv cannot be
# installed or fails (an index only pip's configuration knows, say), pip does the install.
define install-project
	$(PIP) install -q uv && $(PY) -m uv pip install --python $(PY) --compile-bytecode -e ".[$(1)]" || \
	  $(PIP) install -e ".[$(1)]"
endef

TEST_EXTRAS := test,viz
LAB_EXTRAS  := notebook,test

# Stamp files: the install runs again only when pyproject.toml is newer than the stamp.
# (`| $(PY)` = "the venv must exist", without comparing timestamps with it.)
$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(call install-project,$(TEST_EXTRAS))
	touch $@

$(VENV)/.installed-lab: pyproject.toml | $(PY)
	$(call install-project,$(LAB_EXTRAS))
	touch $@

# The student notebooks are generated from the instructor notebooks (solutions and hidden
# tests removed); commit the result. tests/course checks that they are up to date.
# It also builds what an instructor hands out: release/student/ and release/student.zip
# (student notebooks, visible tests, the code check() runs, a README, `make lab`).
release: | $(PY)  ## regenerate the student notebooks; build release/student(.zip)
	$(PY) -m course.release
