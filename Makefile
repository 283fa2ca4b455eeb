# The README's two commands: `make demo` runs the whole loop on a dev box, `make test` runs every
# test stage. Both install what is missing first (deploy/dev/install-deps.sh).

SWIFT ?= swift
export GATTWAY_PYTHON := $(CURDIR)/.venv/bin/python3

.PHONY: demo test build deps bench deb-arm64

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

# The Raspberry Pi package (arm64, Debian 13 / Raspberry Pi OS), cross-built on x86_64 Debian.
deb-arm64:
	deploy/dev/install-deps.sh --test
	deploy/build-deb.sh --arch arm64
