#!/usr/bin/env bash
# Installs every build and test dependency from Debian's packages, then builds ncclwatch into
# build/. Run as root (or with sudo available). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  libboost-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev zlib1g-dev libzstd-dev libsimdjson-dev libsqlite3-dev
  clang libclang-rt-14-dev python3
  # the HTML report's browser test (headless) and the venvs scripts/test.sh installs HTA and
  # py-spy (the stacks test) into
  chromium python3-venv
  # `ncclwatch exporter` (prometheus-cpp), and its tests against a real Prometheus server
  # (prometheus brings promtool; curl scrapes and queries its HTTP API)
  prometheus-cpp-dev prometheus curl
)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

if [ ! -f /usr/local/cuda/include/nccl.h ] && [ -z "${CUDA_HOME:-}" ]; then
  echo "setup: the CUDA toolkit headers (nccl.h, cupti.h, cuda_runtime_api.h) are needed at build" >&2
  echo "setup: time; install the CUDA toolkit or set CUDA_HOME" >&2
  exit 1
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$(nproc)"
