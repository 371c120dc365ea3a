#!/usr/bin/env bash
# Every API-only [Conformance] spec of the upstream e2e.test (v1.36.2), run against
# kube-apiserver + kube-controller-manager and against `ubernetes serve`, the same list on both.
#
#   scripts/conformance-all.sh list                 # print the specs that run (all [Conformance]
#                                                   # minus e2e/tests/kube_reference/conformance-skip.txt)
#   scripts/conformance-all.sh kube OUTDIR          # kube.sh up confref --kcm, run the list, down
#   scripts/conformance-all.sh ours OUTDIR [BINARY] # ubernetes serve (default target/debug/ubernetes), run, stop
#
# Each prints PASS/FAIL per spec and "N passed, M failed of T". FOCUS_OVERRIDE='<regex>' runs only
# the listed specs that match it (to rerun one). SHARDS (default 2) is how many e2e.test processes
# share the list (the binary alone cannot run Ginkgo's parallel mode; each shard is a serial
# e2e.test with its own slice of the list). It takes 40-60 minutes on 2 cores, so it is not part
# of scripts/test.sh. Needs ../shared/kube (kube.sh and its binaries) and kubectl on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
KUBE_SH=${KUBE_SH:-$root/../shared/kube/kube.sh}
SKIP_FILE=$root/e2e/tests/kube_reference/conformance-skip.txt
SHARDS=${SHARDS:-2}
[ -x "$KUBE_SH" ] || { echo "conformance-all: $KUBE_SH not found (../shared/kube is needed)" >&2; exit 2; }
KUBE_BIN=$("$KUBE_SH" unpack)
E2E=$KUBE_BIN/e2e.test

# The spec list: every [Conformance] spec of e2e.test (a dry run), minus the skip file.
spec_list() { # spec_list OUT
  local dry; dry=$(mktemp -d)
  "$E2E" --ginkgo.dry-run --ginkgo.focus='\[Conformance\]' --ginkgo.no-color --report-dir="$dry" >/dev/null 2>&1 || true
  python3 - "$dry" "$SKIP_FILE" "${FOCUS_OVERRIDE:-}" >"$1" <<'PY'
import sys, glob, os, re, xml.etree.ElementTree as ET
dry, skip_file, focus = sys.argv[1:4]
skip = {l.split("\t", 1)[1].rstrip("\n") for l in open(skip_file) if l.strip() and not l.startswith("#")}
names = set()
for f in glob.glob(os.path.join(dry, "junit*.xml")):
    for tc in ET.parse(f).getroot().iter("testcase"):
        n = tc.get("name", "")
        if n.startswith("[It] ") and tc.find("skipped") is None:
            names.add(n[5:])
if not names:
    sys.exit("conformance-all: the dry run listed no spec")
unknown = skip - names
if unknown:
    sys.exit("conformance-all: the skip file names specs e2e.test does not have: %s" % sorted(unknown)[:3])
for n in sorted(names - skip):
    if not focus or re.search(focus, n):
        print(n)
PY
  rm -rf "$dry"
}

# A Go (RE2) regex that matches exactly the given spec names (one a line on stdin).
focus_regex() {
  python3 -c '
import sys
esc = lambda s: "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in s)
print("(" + "|".join(esc(l.rstrip("\n")) for l in sys.stdin if l.strip()) + ")")'
}

run_list() { # run_list KUBECONFIG CONTEXT OUTDIR
  local kcfg=$1 ctx=$2 out=$3 i pids=()
  mkdir -p "$out"
  kubectl --kubeconfig "$kcfg" config view --raw --flatten --minify --context "$ctx" >"$out/kubeconfig"
  spec_list "$out/specs.txt"
  local total; total=$(wc -l <"$out/specs.txt")
  echo "conformance-all: $total specs, $SHARDS shards, logs in $out" >&2
  for i in $(seq 0 $((SHARDS - 1))); do
    awk -v n="$SHARDS" -v i="$i" '(NR - 1) % n == i' "$out/specs.txt" >"$out/shard$i.txt"
    [ -s "$out/shard$i.txt" ] || continue
    mkdir -p "$out/shard$i"
    timeout "${CONFORMANCE_TIMEOUT:-3600}" "$E2E" --kubeconfig="$out/kubeconfig" --provider=skeleton \
      --num-nodes=0 --allowed-not-ready-nodes=-1 --kubectl-path="$(command -v kubectl)" \
      --ginkgo.focus="$(focus_regex <"$out/shard$i.txt")" --ginkgo.no-color --ginkgo.timeout=59m \
      --report-dir="$out/shard$i" >"$out/shard$i/run.log" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || true; done
  python3 - "$out" "$total" <<'PY'
import sys, glob, os, xml.etree.ElementTree as ET
out, total = sys.argv[1], int(sys.argv[2])
res = {}
for f in glob.glob(os.path.join(out, "shard*", "junit*.xml")):
    for tc in ET.parse(f).getroot().iter("testcase"):
        n = tc.get("name", "")
        if not n.startswith("[It] ") or tc.find("skipped") is not None:
            continue
        res[n[5:]] = "FAIL" if (tc.find("failure") is not None or tc.find("error") is not None) else "PASS"
for n in open(os.path.join(out, "specs.txt")).read().splitlines():
    print(res.get(n, "NOT-RUN"), n)
p = sum(v == "PASS" for v in res.values())
print(f"{p} passed, {len(res) - p} failed of {total}")
PY
}

cmd=${1:-}; shift || true
case "$cmd" in
  list) out=$(mktemp); spec_list "$out"; cat "$out"; rm -f "$out" ;;
  kube)
    out=${1:?usage: conformance-all.sh kube OUTDIR}; name=confref-$$
    trap '"$KUBE_SH" down "$name"' EXIT
    kcfg=$("$KUBE_SH" up "$name" --kcm)
    run_list "$kcfg" "$name" "$out" ;;
  ours)
    out=${1:?usage: conformance-all.sh ours OUTDIR [BINARY]}; bin=${2:-$root/target/debug/ubernetes}
    data=$(mktemp -d); mkdir -p "$out"
    "$bin" serve --data-dir "$data" --secure-port 0 >"$out/server.log" 2>&1 &
    spid=$!
    trap 'kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; rm -rf "$data"' EXIT
    for _ in $(seq 1 240); do [ -s "$data/kubeconfig" ] && kubectl --kubeconfig "$data/kubeconfig" get --raw /readyz >/dev/null 2>&1 && break; sleep 0.5; done
    run_list "$data/kubeconfig" "$(kubectl --kubeconfig "$data/kubeconfig" config current-context)" "$out" ;;
  *) sed -n '2,15p' "$0"; exit 2 ;;
esac
