# The README's two commands: `make demo` runs the whole loop on a dev box, `make test` runs every
# test stage. Both install what is missing first (deploy/dev/install-deps.sh).

SWIFT ?= swift
export GATTWAY_PYTHON := $(CURDIR)/.venv/bin/python3

.PHONY: demo test build deps bench deb-arm64 image lint format

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
# It also keeps Foundation out of the shipped code: FoundationEssentials has what gattway uses,
# and Foundation's ICU data would triple the binary (docs/performance.md).
lint:
	$(SWIFT) format lint --strict --recursive Sources Tests
	@if grep -rnE '^(@_[a-zA-Z]+ )?import +([a-z]+ +)?Foundation([ .]|$$)' Sources --include='*.swift'; then \
		echo "lint: the lines above import Foundation; Sources import FoundationEssentials only"; exit 1; fi
	python3 deploy/dev/check-imports.py

format:
	$(SWIFT) format format --in-place --recursive Sources Tests

bench:
	deploy/dev/install-deps.sh
	Tests/run-benchmarks.sh

# The Raspberry Pi package (arm64, Debian 13 / Raspberry Pi OS), cross-built on x86_64 Debian.
deb-arm64:
	deploy/dev/install-deps.sh --test
	deploy/build-deb.sh --arch arm64

# The Raspberry Pi image a user flashes (Debian 13 arm64, gattway installed and enabled), built on
# x86_64 Debian as root: .build/image/gattway-<version>-raspi-arm64.img.xz and its .sha256.
image:
	deploy/dev/install-deps.sh --test
	deploy/build-raspi-image.sh
