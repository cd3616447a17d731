#!/usr/bin/env bash
# Benchmark: `tailor stack` on a 10-package stack (resolution + download + coverage of every
# native wheel) against `pip install --dry-run --report` of the same list for the same
# target, in the same run, as ratios. Two rounds:
#   uncached: pip's HTTP cache off for both (PIP_NO_CACHE_DIR=1), tailor's wheel cache empty;
#   cached:   pip's cache warm for both; tailor's wheel cache, stored resolution (reused after
#             checking the index pages pip read) and inspections filled by the first round.
# Needs the package index (PyPI by default; PIP_INDEX_URL is honoured).
# Usage: TAILOR=build/bin/tailor bench/stack.sh [PACKAGE...]
set -euo pipefail
TAILOR=${TAILOR:-build/bin/tailor}
[ -x "$TAILOR" ] || { echo "bench/stack.sh: build tailor first ($TAILOR)"; exit 1; }
PY=${PYTHON:-python3}
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(torch bitsandbytes einops numpy scipy safetensors accelerate sentencepiece tokenizers huggingface-hub)
# The target is this machine's platform and Python (as tailor is usually run), with a GPU
# named: pip resolves with the same options tailor gives it.
target=(--gpu 8.6)
pip_target=(--only-binary=:all:)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.1f}')"; }

run_pip() {
  local t0 t1
  t0=$(now)
  $PY -m pip install --dry-run --quiet --disable-pip-version-check --ignore-installed --report "$tmp/pip.json" \
    "${pip_target[@]}" "${pkgs[@]}" >/dev/null 2>"$tmp/pip.err" || { echo "pip failed:"; tail -3 "$tmp/pip.err"; exit 1; }
  t1=$(now)
  secs "$t0" "$t1"
}
run_tailor() {
  local t0 t1
  t0=$(now)
  XDG_CACHE_HOME="$tmp/cache" "$TAILOR" stack "${target[@]}" "${pkgs[@]}" --json >"$tmp/stack.json" 2>"$tmp/stack.err" || true
  t1=$(now)
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))' "$tmp/stack.json" 2>/dev/null || { echo "tailor failed:"; tail -3 "$tmp/stack.err"; exit 1; }
  secs "$t0" "$t1"
}

echo "machine: $(nproc) cores, $(uname -m), $($PY -m pip --version | cut -d' ' -f1-2), $("$TAILOR" --version)"
echo "stack: ${pkgs[*]} (${target[*]})"
export PIP_NO_CACHE_DIR=1
p_cold=$(run_pip)
t_cold=$(run_tailor)
unset PIP_NO_CACHE_DIR
run_pip >/dev/null  # fill pip's cache for the cached round
p_warm=$(run_pip)
t_warm=$(run_tailor)
read -r n dl hits res insp <<<"$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(len(j["packages"]), j["downloads"], j["cache_hits"], round(j["seconds"]["resolve"],1), round(j["seconds"]["inspect"],1))' "$tmp/stack.json")"
printf '%-9s %10s %12s %8s\n' round "pip (s)" "tailor (s)" ratio
printf '%-9s %10s %12s %8s\n' uncached "$p_cold" "$t_cold" "$(python3 -c "print(f'{$t_cold/$p_cold:.2f}x')")"
printf '%-9s %10s %12s %8s\n' cached "$p_warm" "$t_warm" "$(python3 -c "print(f'{$t_warm/$p_warm:.2f}x')")"
echo "cached round: $n packages resolved; resolve ${res} s, inspect ${insp} s; $dl downloaded, $hits from tailor's cache"
