# The README's two commands: `make demo` runs the whole loop on a dev box, `make test` runs every
# test stage. Both install what is missing first (deploy/dev/install-deps.sh).

SWIFT ?= swift
export GATTWAY_PYTHON := $(CURDIR)/.venv/bin/python3

.PHONY: demo test build deps bench

demo:
	deploy/dev/install-deps.sh
	$(SWIFT) build
	$(SWIFT) run gattway demo

test:
	deploy/dev/install-deps.sh --test
	Tests/run-all.sh

build:
	$(SWIFT) build

bench:
	deploy/dev/install-deps.sh
	Tests/run-benchmarks.sh
