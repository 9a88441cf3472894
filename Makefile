# The two commands a user needs: `make demo` (main job) and `make test` (tests).
# Both do all set-up themselves: Debian packages via apt-get when missing, Python
# packages pinned in requirements.lock into .venv.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
P4SRC  := p4src/alinea.p4
BUILD  := build
APT_PKGS := cpp iproute2 python3-venv tcpdump gcc python3-dev tshark
ENGINE := engine
ENGINE_SRC := $(ENGINE)/Cargo.toml $(ENGINE)/Cargo.lock $(wildcard $(ENGINE)/src/*.rs $(ENGINE)/src/*/*.rs)
ENGINE_STAMP := $(VENV)/.engine
# The engine needs Rust >= 1.82 (engine/Cargo.toml rust-version). Debian 12's cargo is 1.63: prefer rustup's.
RUST_MIN := 1.82
CARGO_DIR := $(shell for c in "$$CARGO_HOME/bin/cargo" "$$HOME/.cargo/bin/cargo" /root/.cargo/bin/cargo "$$(command -v cargo)"; do \
  [ -x "$$c" ] && v=$$("$$c" --version 2>/dev/null | cut -d' ' -f2) && \
  [ "$$(printf '%s\n%s\n' $(RUST_MIN) "$$v" | sort -V | head -1)" = "$(RUST_MIN)" ] && { dirname "$$c"; break; }; done)

.PHONY: setup sysdeps engine test test-bmv2 lint pytest p4 bench ns3-venv conformance demo wireshark fuzz fuzz-topo results map tcp-validation clean

# The control path's modules compiled by mypyc (controlplane/native.py lists them): extension
# modules beside their sources; any change in controlplane/ rebuilds them (mypy checks what they import).
NATIVE_STAMP := $(BUILD)/native/stamp.json
NATIVE_SRC := $(wildcard controlplane/*.py)

setup: $(STAMP) $(ENGINE_STAMP) $(NATIVE_STAMP)

engine: $(ENGINE_STAMP)

# The compiled engine (engine/, Rust + PyO3): a wheel built by maturin (pinned in
# requirements.lock) from the crates pinned in engine/Cargo.lock, installed into .venv.
$(ENGINE_STAMP): $(STAMP) $(ENGINE_SRC)
	@if [ -z "$(CARGO_DIR)" ]; then \
	  echo "error: building engine/ needs Rust >= $(RUST_MIN) (cargo); none found on PATH or in ~/.cargo/bin." >&2; \
	  echo "       Debian 12's cargo is 1.63, too old: install Rust with rustup (https://rustup.rs), then run make again." >&2; \
	  exit 1; fi
	rm -rf $(BUILD)/wheels
	PATH="$(CARGO_DIR):$$PATH" $(VENV)/bin/maturin build --quiet --release --locked \
	  -m $(ENGINE)/Cargo.toml -i $(PY) -o $(BUILD)/wheels
	$(PY) -m pip install -q --no-deps --force-reinstall $(BUILD)/wheels/hbh_engine-*.whl
	touch $(ENGINE_STAMP)

$(NATIVE_STAMP): $(STAMP) $(NATIVE_SRC)
	$(PY) controlplane/native_build.py

sysdeps:
	@missing=""; \
	command -v cpp >/dev/null || missing="$$missing cpp"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	command -v tcpdump >/dev/null || missing="$$missing tcpdump"; \
	command -v tshark >/dev/null || missing="$$missing tshark"; \
	command -v mn >/dev/null || missing="$$missing mininet"; \
	command -v ping >/dev/null || missing="$$missing iputils-ping"; \
	command -v gcc >/dev/null || missing="$$missing gcc"; \
	$(PYTHON) -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
	  || missing="$$missing python3-dev"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "please install (apt-get):$$missing" >&2; exit 1; fi; \
	fi

$(STAMP): requirements.lock pyproject.toml | sysdeps
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==23.2.1 setuptools==65.5.0 wheel==0.45.1
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps p4runtime-shell==0.0.6
	$(PY) controlplane/stubs_build.py
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

lint: setup
	$(VENV)/bin/ruff check .
	PATH="$(CARGO_DIR):$$PATH" cargo fmt --manifest-path $(ENGINE)/Cargo.toml --check
	PATH="$(CARGO_DIR):$$PATH" cargo clippy --quiet --release --locked --manifest-path $(ENGINE)/Cargo.toml -- -D warnings

# Two workers (pytest-xdist): tests/conftest.py puts the real-time tests (netns, p4switch's real-time
# loop, wake-ups) in one group that one worker runs in turn beside the simulator's tests, and the Ray
# sweeps in another. The "ci" hypothesis profile (derandomized, no example database) here too, so a
# local .hypothesis/ cannot fail what CI passes. PYTEST_WORKERS=0 runs in one process. The BMv2
# differential on every default topology (6 minutes; marker bmv2_full) is `make test-bmv2`'s.
PYTEST_WORKERS ?= 2
pytest: setup
	$(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --hypothesis-profile=ci --durations=20 -m "not bmv2_full"

test: setup lint pytest

# hbh bmv2-diff's check as a test: every default topology for 40 s on BMv2 and p4switch, compared
# (root, simple_switch_grpc and p4c on PATH: docs/howto/bmv2.md; skipped with the reason elsewhere).
test-bmv2: setup
	$(VENV)/bin/pytest -q -m bmv2_full tests/topo/bmv2/test_bmv2_diff.py

p4: setup
	@mkdir -p $(BUILD)
	@if command -v p4c >/dev/null; then \
	  echo "p4c found: compiling $(P4SRC) for BMv2"; \
	  p4c --target bmv2 --arch v1model --std p4-16 -I p4src/include \
	      -o $(BUILD) --p4runtime-files $(BUILD)/alinea.p4info.txtpb $(P4SRC); \
	else \
	  echo "p4c not on PATH: checking with p4switch's front end"; \
	  $(VENV)/bin/hbh p4 check $(P4SRC) && \
	  $(VENV)/bin/hbh p4 info $(P4SRC) -o $(BUILD)/alinea.p4info.txtpb && \
	  $(VENV)/bin/p4switch --device-config $(BUILD)/alinea.p4switch.bin $(P4SRC) && \
	  echo "wrote $(BUILD)/alinea.p4info.txtpb and $(BUILD)/alinea.p4switch.bin (P4Runtime device config)"; \
	fi

# Conformance with p4c's corpus (not part of `make test`): P4C_TESTDATA is p4c's testdata/
# folder, P4C_COMMIT its commit when DIR is not a git checkout. Writes docs/conformance.md.
conformance: setup
	@test -n "$(P4C_TESTDATA)" || { echo "usage: make conformance P4C_TESTDATA=DIR [P4C_COMMIT=SHA]" >&2; exit 2; }
	$(PY) -m p4switch.conformance --testdata $(P4C_TESTDATA) --out docs/conformance.md --jobs 2 \
	  $(if $(P4C_COMMIT),--commit $(P4C_COMMIT))

# ns-3 for the simulator's peer rows, from PyPI into its own environment (not .venv). Developers:
# `make bench BENCH_ONLY=sim,profile` re-measures some parts (tests/bench/run.py PARTS), BENCH_QUICK=1 is a smoke run.
NS3_VENV := $(BUILD)/ns3-venv
$(NS3_VENV)/.installed:
	$(PYTHON) -m venv $(NS3_VENV) && $(NS3_VENV)/bin/pip install -q ns3==3.44.post0 && touch $@ \
	  || echo "warning: ns3 did not install into $(NS3_VENV); the ns-3 rows will say why" >&2

ns3-venv: $(NS3_VENV)/.installed

bench: setup ns3-venv
	$(PY) -m tests.bench.run --out docs/performance.md $(if $(BENCH_ONLY),--only $(BENCH_ONLY)) $(if $(BENCH_QUICK),--quick)

# Wireshark: the ALINEA report dissector into the user's personal Lua plugin folder (docs/reference/p4switch.md).
wireshark:
	@mkdir -p $(HOME)/.local/lib/wireshark/plugins
	cp wireshark/hbh_alinea.lua wireshark/hbh_datagram.lua $(HOME)/.local/lib/wireshark/plugins/
	@echo "installed hbh_alinea.lua and hbh_datagram.lua in $(HOME)/.local/lib/wireshark/plugins (restart Wireshark; tshark reads them at start)"

fuzz: setup
	$(PY) -m tests.bench.fuzz --frames 1000000

# Random topologies (tests/topo/topogen.py) in short simulator runs under the invariants; an all-ALINEA
# one must lose nothing unless the loop analysis warned. Each topology runs in a forked child (memory
# stays bounded). Failures kept in build/fuzz-topo/ (FUZZ_TOPO_OUT: elsewhere, e.g. for a second seed
# run beside it); 0.5-3 s a topology, by the machine's load.
fuzz-topo: setup
	$(PY) -m tests.topo.fuzz_topo --count $(or $(FUZZ_TOPO_COUNT),2000) --seed $(or $(FUZZ_TOPO_SEED),1) --out $(or $(FUZZ_TOPO_OUT),build/fuzz-topo)

# A second `make demo` reuses the comparison runs in results/demo/runs that this code made (and says
# so); `make demo DEMO_ARGS=--rerun` simulates them again.
demo: setup p4
	$(VENV)/bin/hbh demo $(DEMO_ARGS)

results: setup
	$(VENV)/bin/hbh results --out docs/results.md --figures docs/figures

# Where the law works: rates x1-x500, delays 0.1-50 ms, buffers 200 and 1 BDP (Ray; ~20 min on 2 cores) -> docs/map.md
map: setup
	$(VENV)/bin/hbh map --out docs/map.md --figures docs/figures

# Only docs/results.md's TCP sections (issue 23; ~10 min), also part of `make results`
.PHONY: results-tcp
results-tcp: setup
	$(VENV)/bin/hbh results --out docs/results.md --figures docs/figures --only tcp

# The simulator's TCP model against the kernel's (root: netns; ~12 min on a quiet machine): new kernel runs
# into docs/tcp-kernel-runs/, their tables into docs/howto/tcp.md ("Validation against the kernel")
tcp-validation: setup
	chrt -r 10 $(VENV)/bin/hbh tcp-validation --duration 60s --seed 1 --save-kernel docs/tcp-kernel-runs --doc docs/howto/tcp.md
	$(VENV)/bin/hbh tcp-diagnosis --kernel-from docs/tcp-kernel-runs --duration 60s --seed 1 --doc docs/howto/tcp.md

# The sources' TCP experiments, short, on the kernel's TCP in netns beside the model, and the RTM
# ablation (root; ~35 min) -> docs/howto/tcp.md ("The sources' experiments on the kernel's TCP")
.PHONY: tcp-kernel
tcp-kernel: setup
	chrt -r 10 $(VENV)/bin/hbh tcp-kernel --doc docs/howto/tcp.md

clean:
	rm -rf $(BUILD) .pytest_cache controlplane/*.so
