#!/usr/bin/env bash
# `tailor __governed` (chosen Ninja targets of a configured tree under the builder's memory
# governor) on a tiny CMake-shaped build.ninja of two real C units, then `tailor plan torch
# --measured` on the report it wrote: every unit of the tree predicted from the measured
# ones, in text and JSON, and the refusals (exit 2, one line). Seconds; needs cc and ninja.
set -euo pipefail
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
command -v cc > /dev/null && command -v ninja > /dev/null || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, json_get
tree=$tmp/tree
mkdir -p "$tree"
for u in a b c; do echo "int $u(void) { return 1; }" > "$tree/$u.c"; done
cat > "$tree/build.ninja" << 'NINJA'
rule C_COMPILER__x_unscanned_Release
  command = cc -O2 -o $out -c $in
rule CUSTOM_COMMAND
  command = $COMMAND
build CMakeFiles/x.dir/a.c.o: C_COMPILER__x_unscanned_Release a.c
build CMakeFiles/x.dir/b.c.o: C_COMPILER__x_unscanned_Release b.c
build CMakeFiles/x.dir/c.c.o: C_COMPILER__x_unscanned_Release c.c
build gen/made.cpp: CUSTOM_COMMAND
  COMMAND = mkdir -p gen && touch gen/made.cpp
NINJA

"$TAILOR" __governed --build-dir "$tree" --work-dir "$tmp/work" --max-jobs 2 \
  CMakeFiles/x.dir/a.c.o CMakeFiles/x.dir/b.c.o > "$tmp/gov.out" 2> "$tmp/gov.err" ||
  { cat "$tmp/gov.out" "$tmp/gov.err"; fail "__governed: exit $?"; }
[ -f "$tree/CMakeFiles/x.dir/a.c.o" ] && [ -f "$tree/CMakeFiles/x.dir/b.c.o" ] || fail "objects not built"
[ ! -e "$tree/CMakeFiles/x.dir/c.c.o" ] || fail "a target not asked for was built"
grep -q '^unit c CMakeFiles/x.dir/a.c.o ' "$tmp/gov.out" || { cat "$tmp/gov.out"; fail "no unit line"; }
rep=$tmp/work/governed.report.json
[ "$(json_get "$rep" 'len(j["run"]["job_timeline"])')" = 2 ] || fail "report: not 2 units"
[ "$(json_get "$rep" 'j["ok"]')" = True ] || fail "report: not ok"
mode=$(json_get "$rep" 'j["run"]["memory"]["mode"]')
case $(ninja --version) in
  1.1[3-9]* | 1.[2-9][0-9]*) [ "$mode" = governor ] || fail "ninja $(ninja --version): mode $mode" ;;
esac
ok "__governed: 2 of 3 units built, report with their timeline ($mode)"

"$TAILOR" plan torch --measured "$rep" --build-ninja "$tree/build.ninja" --cores 4 --memory 8 \
  --check > "$tmp/plan.out" || fail "plan --measured: exit $?"
grep -q 'from 2 measured units of 1 kinds; kinds not measured (every unit.s mean used): other' \
  "$tmp/plan.out" || { cat "$tmp/plan.out"; fail "plan --measured: summary"; }
grep -q '^check interleaved: fitted on 1 units, 1 predicted' "$tmp/plan.out" ||
  { cat "$tmp/plan.out"; fail "plan --measured: check"; }
"$TAILOR" plan torch --measured "$rep" --build-ninja "$tree/build.ninja" --cores 4 --memory 8 \
  --format json > "$tmp/plan.json" || fail "plan --measured --format json"
[ "$(json_get "$tmp/plan.json" 'j["units_total"]')" = 4 ] || fail "json: units_total"
[ "$(json_get "$tmp/plan.json" 'j["kinds"]["c"]["measured"]')" = 2 ] || fail "json: c measured"
[ "$(json_get "$tmp/plan.json" 'j["schema"]')" = tailor.plan-prediction/1 ] || fail "json: schema"
ok "plan --measured: 4 units, 2 measured, text and JSON"

# Refusals: one line, exit 2, nothing half-made.
refuse() {
  local name=$1 want=$2; shift 2
  set +e
  "$TAILOR" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err"
  local rc=$?
  set -e
  [ "$rc" = 2 ] || { cat "$tmp/$name.err"; fail "$name: exit $rc, want 2"; }
  [ "$(wc -l < "$tmp/$name.err")" = 1 ] && grep -qF -- "$want" "$tmp/$name.err" ||
    { cat "$tmp/$name.err"; fail "$name: want one line with: $want"; }
}
refuse no_ninja "no build.ninja" __governed --build-dir "$tmp" --work-dir "$tmp/w2" x.o
refuse no_target "no Ninja target given" __governed --build-dir "$tree" --work-dir "$tmp/w2"
refuse bad_jobs "expected a positive number" __governed --build-dir "$tree" --max-jobs x a
refuse no_bn "--build-ninja FILE" plan torch --measured "$rep"
refuse not_report "not JSON" plan torch --measured "$tree/a.c" --build-ninja "$tree/build.ninja"
refuse stray "go with --measured" plan torch --cores 4
[ ! -e "$tmp/w2/governed.report.json" ] || fail "a refused run wrote a report"
ok "refusals: one line, exit 2"
exit 0
