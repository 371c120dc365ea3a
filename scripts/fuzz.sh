#!/usr/bin/env bash
# Fuzz the request decoders, selector parsers and patch engines (fuzz/, see
# fuzz/README.md), on the stable toolchain.
#
#   ./scripts/fuzz.sh            # each target 10 s
#   ./scripts/fuzz.sh 600        # each target 10 min
#   ./scripts/fuzz.sh 60 label_selector json_patch   # only these targets
#   UBERNETES_FUZZ_DEV=1 ./scripts/fuzz.sh 5   # unoptimised build (the test command's)
#
# Installs cargo-fuzz (pinned below) into .tools/cargo if missing, builds
# every target (release, debug assertions on, no sanitizer: `--sanitizer
# none` needs no nightly; RUSTC_BOOTSTRAP=1 lets stable rustc take the few
# unstable flags cargo-fuzz passes), replays the fixed crashes in
# fuzz/regressions/<target>/, then runs each target for SECONDS on its seed
# corpus fuzz/corpus/<target>/ (new inputs go to fuzz/work/<target>/, not
# committed). Exits non-zero if any target crashed; the crashing inputs are
# in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

CARGO_FUZZ_VERSION=0.13.1
seconds=${1:-10}
shift || true

tools="$root/.tools/cargo"
export PATH="$tools/bin:$PATH"
if ! cargo fuzz --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
  echo "==> installing cargo-fuzz $CARGO_FUZZ_VERSION into $tools"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$tools"
fi

export RUSTC_BOOTSTRAP=1
cd fuzz
# 16 codegen units: builds several times faster than cargo-fuzz's default
# of 1, for slightly slower runs. UBERNETES_FUZZ_SERVER=1 decodes JSON/YAML
# through the apiserver crate itself (a much longer build; see README.md).
flags=(--sanitizer none --debug-assertions --codegen-units 16)
if [ "${UBERNETES_FUZZ_SERVER:-0}" = 1 ]; then
  flags+=(--features server)
fi
# UBERNETES_FUZZ_DEV=1 (the test command): unoptimised targets. They build in
# ~2.3 min instead of ~3.7 on 2 cores and run ~20x fewer inputs a second,
# plenty for a few seconds over the seed corpus; long runs by hand stay
# optimised.
if [ "${UBERNETES_FUZZ_DEV:-0}" = 1 ]; then
  flags+=(--dev)
fi

echo "==> building the fuzz targets"
cargo fuzz build "${flags[@]}"

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi

mkdir -p work
failed=()
for t in "${targets[@]}"; do
  if [ -d "regressions/$t" ] && [ -n "$(ls -A "regressions/$t")" ]; then
    echo "==> $t: replaying regressions/$t"
    if ! cargo fuzz run "${flags[@]}" "$t" "regressions/$t" -- -runs=0 >"work/$t.log" 2>&1; then
      tail -40 "work/$t.log"
      failed+=("$t (regression)")
      continue
    fi
  fi
  echo "==> $t: fuzzing ${seconds}s"
  mkdir -p "work/$t"
  if ! cargo fuzz run "${flags[@]}" "$t" "work/$t" "corpus/$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    >"work/$t.log" 2>&1; then
    tail -60 "work/$t.log"
    failed+=("$t")
    continue
  fi
  grep -E "^stat::number_of_executed_units|^Done" "work/$t.log" | tr '\n' ' '
  echo
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found crashes in: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
  exit 1
fi
echo "==> fuzzing: ${#targets[@]} targets, no crash"
