#!/usr/bin/env bash
# Installs the Debian packages octasim builds with, and only the missing ones.
# Called by `make run` / `make test`; safe to run repeatedly (a no-op once all are present).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config make
  libsystemc-dev verilator
  libfmt-dev libcli11-dev nlohmann-json3-dev python3 python3-jsonschema
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format
  libprotobuf-dev libonnx-dev libonnx-testdata
  zlib1g-dev dataset-fashion-mnist
  pybind11-dev python3-dev python3-numpy python3-matplotlib
  openmpi-bin libopenmpi-dev
)
# Optional, not installed here: python3-torch for octasim.torch, its tests (skipped without it)
# and examples/qat_fashion_mnist.py.

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

[ ${#missing[@]} -eq 0 ] && exit 0

echo "octasim: installing missing Debian packages: ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "octasim: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
