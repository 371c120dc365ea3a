#!/usr/bin/env bash
# Prove the docker-compose stack (docker-compose.yml): build the images, bring
# the stack up, wait until both members are joined and Ready, propagate a
# namespace, a ConfigMap and a Deployment written through the SECOND replica,
# check the copies in both members, then tear everything down.
#
#   sudo scripts/compose-check.sh            # prints each step with its time
#
# Needs root, Docker (Debian's docker.io; a dockerd is started for the run
# and stopped after when none is running), Compose (`docker compose` or
# Debian's `docker-compose`, installed with apt when neither is there),
# kubectl ($KUBECTL, else .tools/venv/bin/kubectl, else on PATH).
# Exits non-zero, after tearing down, when any step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start ))s] $*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then fail "run as root (debootstrap and docker need it)"; fi

started_dockerd=""
if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || { say "installing docker.io (apt-get)"; apt-get install -y docker.io >/dev/null; }
  say "starting dockerd (stopped again at the end)"
  dockerd >/tmp/ubernetes-compose-dockerd.log 2>&1 &
  started_dockerd=$!
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || fail "dockerd did not start (see /tmp/ubernetes-compose-dockerd.log)"
fi

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  command -v docker-compose >/dev/null || { say "installing docker-compose (apt-get)"; apt-get install -y docker-compose >/dev/null; }
  compose=(docker-compose)
fi
compose+=(-p ubernetes -f "$root/docker-compose.yml")

kubectl=${KUBECTL:-}
if [ -z "$kubectl" ]; then
  if [ -x "$root/.tools/venv/bin/kubectl" ]; then kubectl="$root/.tools/venv/bin/kubectl"; else kubectl=kubectl; fi
fi
fed_a=(--kubeconfig "$root/.compose/federation-a/kubeconfig" --context=federation)
fed_b=(--kubeconfig "$root/.compose/federation-b/kubeconfig" --context=federation)

teardown() {
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "--- logs of the stack (last 30 lines each) ---" >&2
    "${compose[@]}" logs --tail=30 >&2 || true
  fi
  say "tearing down (compose down -v)"
  "${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  rm -rf "$root/.compose"
  if [ -n "$started_dockerd" ]; then
    kill "$started_dockerd" 2>/dev/null || true
    wait "$started_dockerd" 2>/dev/null || true
  fi
  say "done (exit $rc)"
}
trap teardown EXIT

say "building the images"
deploy/image/build.sh "${UBERNETES_BINARY:-}"

"${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
rm -rf "$root/.compose"
mkdir -p "$root/.compose"
up=$(date +%s)
say "compose up"
"${compose[@]}" up -d

# The one-shot joins end when their member is joined.
for j in join-east join-west; do
  id=$("${compose[@]}" ps -q "$j")
  [ -n "$id" ] || fail "no container for $j"
  code=$(timeout 120 docker wait "$id") || fail "$j did not finish in 120 s"
  [ "$code" = 0 ] || { docker logs "$id" >&2; fail "$j exited with $code"; }
done
say "both members joined"

for _ in $(seq 1 60); do
  ready=$("$kubectl" "${fed_a[@]}" get clusters -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}' 2>/dev/null || true)
  case "$ready" in *east=True*west=True*|*west=True*east=True*) break;; esac
  sleep 1
done
case "$ready" in *east=True*west=True*|*west=True*east=True*) ;; *) fail "clusters not Ready: $ready";; esac
say "clusters Ready: $ready ($(( $(date +%s) - up ))s after compose up)"

# Written through the second replica: either replica serves the API, the
# leader's controllers propagate.
"$kubectl" "${fed_b[@]}" create namespace compose-check >/dev/null
"$kubectl" "${fed_b[@]}" -n compose-check create configmap settings --from-literal=color=blue >/dev/null
"$kubectl" "${fed_b[@]}" -n compose-check create deployment web --image=nginx --replicas=4 >/dev/null
say "created namespace compose-check, ConfigMap settings, Deployment web (4 replicas) through federation-b"

for m in east west; do
  member=(--kubeconfig "$root/.compose/$m/kubeconfig" --context=federation)
  ok=""
  for _ in $(seq 1 60); do
    color=$("$kubectl" "${member[@]}" -n compose-check get configmap settings -o jsonpath='{.data.color}' 2>/dev/null || true)
    replicas=$("$kubectl" "${member[@]}" -n compose-check get deployment web -o jsonpath='{.spec.replicas}' 2>/dev/null || true)
    if [ "$color" = blue ] && [ -n "$replicas" ]; then ok=1; break; fi
    sleep 1
  done
  [ -n "$ok" ] || fail "the objects did not reach $m (color=$color replicas=$replicas)"
  say "$m has ConfigMap settings (color=$color) and Deployment web ($replicas replicas)"
  total=$(( ${total:-0} + replicas ))
done
# The federation spreads the Deployment's replicas over the members.
[ "$total" = 4 ] || fail "the members hold $total replicas of web, not 4"
"$kubectl" "${fed_a[@]}" get clusters
# One replica leads the controllers (a coordination.k8s.io Lease).
holder=$("$kubectl" "${fed_a[@]}" -n kube-system get lease ubernetes-controller-manager -o jsonpath='{.spec.holderIdentity}')
[ -n "$holder" ] || fail "no replica holds the controllers' Lease"
say "the controllers' Lease is held by $holder"
say "the stack came up and propagated in $(( $(date +%s) - up ))s after compose up"
