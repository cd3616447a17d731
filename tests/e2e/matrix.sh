#!/usr/bin/env bash
# `tailor matrix` on examples/tailor.toml: the three variant names, plans for each,
# and a GitHub Actions workflow with one job per variant.
set -euo pipefail
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cfg="$TAILOR_SOURCE_DIR/examples/tailor.toml"

"$TAILOR" matrix --config "$cfg" > "$tmp/list.txt" || fail "matrix list"
for n in pytorch-sm90-avx512 pytorch-sm86-avx2 pytorch-cpu-avx2; do
  grep -q "^$n " "$tmp/list.txt" || fail "variant $n not listed"
done
[ "$(grep -c '^pytorch-' "$tmp/list.txt")" = 3 ] || fail "expected exactly 3 variants"

"$TAILOR" matrix --config "$cfg" --emit github-actions > "$tmp/wf.yml" || fail "emit"
[ "$(grep -c 'tailor build torch --config' "$tmp/wf.yml")" = 3 ] || fail "one build job per variant"
if python3 -c 'import yaml' 2> /dev/null; then
  python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); assert len(d["jobs"]) == 3' "$tmp/wf.yml" || fail "workflow yaml"
fi

# A variant of the config through plan, as the matrix names it.
"$TAILOR" plan --config "$cfg" --variant pytorch-sm90-avx512 --format json > "$tmp/p.json" 2> "$tmp/p.err" \
  || fail "plan of a matrix variant: $(cat "$tmp/p.err")"
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["env"]; assert e["TORCH_CUDA_ARCH_LIST"]=="9.0"; assert "-march=x86-64-v4" in e["CXXFLAGS"]' "$tmp/p.json" \
  || fail "sm90-avx512 plan"
set +e
"$TAILOR" matrix --config "$tmp/missing.toml" > /dev/null 2>&1
[ $? = 2 ] || fail "missing config must exit 2"
set -e
echo "matrix e2e: ok"
