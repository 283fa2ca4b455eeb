# The README's two commands: `make demo` runs the whole loop on a dev box, `make test` runs every
# test stage. Both install what is missing first (deploy/dev/install-deps.sh).

SWIFT ?= swift
export GATTWAY_PYTHON := $(CURDIR)/.venv/bin/python3

.PHONY: demo test build deps bench deb-arm64 lint format

demo:
	deploy/dev/install-deps.sh
	$(SWIFT) build
	$(SWIFT) run gattway demo

test:
	deploy/dev/install-deps.sh --test
	Tests/run-all.sh

build:
	$(SWIFT) build

# The code's formatting (.swift-format; swift-format ships with the toolchain). `make test` runs
# lint as its first stage; `make format` rewrites the files to match.
lint:
	$(SWIFT) format lint --strict --recursive Sources Tests

format:
	$(SWIFT) format format --in-place --recursive Sources Tests

bench:
	deploy/dev/install-deps.sh
	Tests/run-benchmarks.sh

# The Raspberry Pi package (arm64, Debian 13 / Raspberry Pi OS), cross-built on x86_64 Debian.
deb-arm64:
	deploy/dev/install-deps.sh --test
	deploy/build-deb.sh --arch arm64
