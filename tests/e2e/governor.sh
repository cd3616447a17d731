#!/usr/bin/env bash
# End-to-end: `tailor build` of the test fixture extension (tests/e2e/data/tiny_ext, a real
# CUDAExtension of one .cu and one .cpp that builds in seconds) under the memory governor.
# With --memory-budget and a Ninja that is a jobserver client (1.13+), the build runs in
# governor mode: Ninja joins tailor's fifo jobserver (its own log line says so), MAX_JOBS
# is not set, and the JSON report carries the mode, the series of samples and the
# learned peaks. Then a Ctrl-C in the middle of the compiles: exit 130, no process of the
# build left alive or stopped, the fifo gone. The compiles of that second build are held
# open (each source includes a named pipe nothing writes), so the signal always lands
# while the compilers run, however fast the machine.
set -u
set -m  # background jobs get their own process group, as at a terminal
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch, setuptools, wheel' 2>/dev/null || { echo "skip: python3 with torch, setuptools, wheel needed"; exit 77; }
command -v ninja >/dev/null || { echo "skip: no ninja"; exit 77; }
nv=$(ninja --version 2>/dev/null)
python3 - "$nv" <<'PY' || { echo "skip: ninja $nv is not a jobserver client (1.13 or newer is)"; exit 77; }
import re, sys
m = re.match(r"(\d+)\.(\d+)", sys.argv[1])
sys.exit(0 if m and (int(m[1]), int(m[2])) >= (1, 13) else 1)
PY
here=$(cd "$(dirname "$0")" && pwd)
# src, fail, ok, bad, expect_eq, tiny_ext, copy_package.
# shellcheck source=lib/common.sh
. "$here/lib/common.sh"
. "$here/lib/sleepy_package.sh"  # tagged_processes, wait_until

tmp=$(mktemp -d)
tok=""
cleanup() {
  [ -n "$tok" ] && tagged_processes "$tok" | while read -r p _; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# The governor's record of job peaks lives in the user cache: this test's own.
export XDG_CACHE_HOME=$tmp/xdg
peaks=$XDG_CACHE_HOME/tailor/governor/peaks.json

# 1. A whole build under a budget. No compiler cache: the fixture compiles in seconds, and
#    only jobs that really compile teach the governor their peaks (a cache hit teaches
#    nothing), so every run of this test records them.
t0=$SECONDS
"$TAILOR" build "$tiny_ext" --arch 7.5 --memory-budget 3G --out "$tmp/dist" --work-dir "$tmp/work" \
  --cache none --progress plain --no-tests --json >"$tmp/report.json" 2>"$tmp/stderr"
rc=$?
echo "     (the build took $((SECONDS - t0)) s)"
expect_eq "build exit" "$rc" 0
[ "$rc" = 0 ] || { tail -30 "$tmp/stderr"; exit 1; }
grep -q "building under the memory governor" "$tmp/stderr" && ok "the status line names the governor" \
  || bad "no governor in the status line: $(grep '==> building' "$tmp/stderr")"
log=$(ls "$tmp"/work/*/build.log)
grep -q "ninja: Jobserver mode detected: .*--jobserver-auth=fifo:" "$log" && ok "ninja joined the fifo jobserver" \
  || bad "ninja never said it joined the jobserver ($log)"
grep -q "MAX_JOBS=" "$log" && bad "MAX_JOBS reached the build (ninja would get -j)" || ok "MAX_JOBS not set for the build"
python3 - "$tmp/report.json" <<'PY' && ok "the report's memory section" || bad "the report's memory section"
import json, sys
m = json.load(open(sys.argv[1]))["run"]["memory"]
def need(cond, what):
    if not cond:
        print("    ", what, json.dumps({k: v for k, v in m.items() if k != "series"})[:800]); sys.exit(1)
need(m["mode"] == "governor", "mode")
need(m["budget_mib"] == 3072, "budget")
need("jobserver client" in m["reason"], "reason")
s = m["series"]
need(2 <= len(s) <= 300, f"series of {len(s)} points")
need(all(len(p) == len(m["series_fields"]) for p in s), "series rows")
need(all(s[i][0] <= s[i + 1][0] for i in range(len(s) - 1)), "series in time order")
need(max(p[5] for p in s) > 0, "build RSS sampled")
need(m["peak_build_rss_mib"] > 100, "peak build RSS")
need(m["max_running"] >= 1, "jobs seen")
need(any(k.startswith("nvcc") for k in m["job_peaks_mib"]), "an nvcc job's peak learned")
# cicc and cc1plus may run too briefly to be sampled; nvcc always is. The link (-flto)
# usually outlasts the 250 ms sample period but not always: a CI run's samples caught only
# cc1plus, cicc and nvcc, so the link is said, not required.
need(m["process_peaks_mib"].get("nvcc", 0) > 0, "process peaks")
link = ("ld", "collect2", "lto1", "lto-wrapper", "ld.bfd", "ld.gold")
print("     link sampled:", [k for k in link if k in m["process_peaks_mib"]] or "no (shorter than a sample period)")
need(m["continued_at_end"] == 0 and all(b["action"] in ("stop", "continue") for b in m["brakes"]), "brakes paired")
print("     peak build RSS", m["peak_build_rss_mib"], "MiB; job peaks", m["job_peaks_mib"], "; brakes", m["brake_count"])
PY
[ -e "$(dirname "$log")/jobserver.fifo" ] && bad "the fifo was left behind" || ok "the fifo is removed"
# What the build measured is kept for the next build of the same package and targets.
python3 - "$peaks" "$tmp/report.json" <<'PY' && ok "the job peaks are recorded for the next build" || bad "no record of the job peaks"
import json, sys
d = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))["run"]["memory"]
assert d["schema"] == "tailor.governor-peaks/1", d.get("schema")
[(key, e)] = d["entries"].items()
assert "targets=sm_75" in key and e["builds"] == 1, (key, e)
assert any(k.startswith("nvcc") for k in e["peaks"]), e
assert m["known_builds"] == 0 and m["known_peaks_mib"] == {}, "the first build started from the recipe"
print("    ", key, {k: v >> 20 for k, v in e["peaks"].items()}, "MiB")
PY

# 2. Ctrl-C while nvcc and the compilers run: nothing left alive or stopped. A copy of the
#    fixture (the same package, so the same record of peaks) whose two sources each
#    include a named pipe that nothing writes: the preprocessors of nvcc and g++ wait in
#    it until the signal comes.
copy_package "$tiny_ext" "$tmp/held"
mkfifo "$tmp/hold.fifo"
for f in "$tmp/held/tiny_ext/csrc/module.cpp" "$tmp/held/tiny_ext/csrc/scale.cu"; do
  printf '\n// Planted by tests/e2e/governor.sh: waits for a writer that never comes.\n#include "%s"\n' "$tmp/hold.fifo" >>"$f"
done
tok="gov-$$-$RANDOM"
TAILOR_E2E_TOKEN=$tok "$TAILOR" build "$tmp/held/tiny_ext" --arch 7.5 --memory-budget 3G --out "$tmp/dist2" \
  --work-dir "$tmp/work2" --cache none --progress plain --no-tests >"$tmp/int.stdout" 2>"$tmp/int.stderr" &
pid=$!
# The build's compiles, not the preflight's test link of the C++ runtime (it runs cc1plus
# too): the build step has started once its line is out.
compiling() { grep -q "^==> \[1/1\]" "$tmp/int.stderr" && tagged_processes "$tok" | grep -qE 'cicc|cc1plus|ptxas'; }
if wait_until 100 compiling; then ok "the build reached its compiles"; else
  bad "no compiler ever ran"; tail -20 "$tmp/int.stderr"; fi
fifo=$(ls "$tmp"/work2/*/jobserver.fifo 2>/dev/null)
[ -p "$fifo" ] && ok "the jobserver fifo exists during the build" || bad "no jobserver fifo during the build"
grep -q "under the memory governor (.*job peaks from 1 earlier build" "$tmp/int.stderr" \
  && ok "the second build starts from the first one's job peaks" \
  || bad "the second build did not start from the first one's peaks: $(grep '==> building' "$tmp/int.stderr")"
kill -INT -- "-$pid"
wait "$pid"
expect_eq "interrupted exit" "$?" 130
none_tagged() { [ -z "$(tagged_processes "$tok")" ]; }
if wait_until 10 none_tagged; then ok "no process of the build left (alive or stopped)"; else
  bad "processes left:"; tagged_processes "$tok" | while read -r p rest; do
    echo "    $p $(sed 's/.*) \(.\).*/\1/' /proc/$p/stat 2>/dev/null) $rest"; done; fi
[ -e "$fifo" ] && bad "the fifo was left behind after the interrupt" || ok "the fifo is removed after the interrupt"
grep -q "^tailor: interrupted; nothing published$" "$tmp/int.stderr" && ok "one line says so" || bad "no interrupt line"
python3 -c 'import json,sys; [e] = json.load(open(sys.argv[1]))["entries"].values(); sys.exit(e["builds"] not in (1, 2))' "$peaks" \
  && ok "the peaks record is whole after the interrupt" || bad "the interrupted build damaged the record"
exit $fail
