#!/usr/bin/env bash
# tailor slim against the reference of rewriting a wheel by hand: `unzip` + `zip -6` of the
# same wheel, timed in the same run, printed as a ratio; plus bytes before and after (the
# wheel, and its libraries as installed) and the largest libraries. An environment (a venv
# or site-packages folder) is copied, and the copy slimmed in place, timed against the
# `cp -a` that made it.
#   KEEP=sm_90 bench/slim.sh WHEEL|ENV...
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: KEEP=sm_90 bench/slim.sh WHEEL|ENV..." >&2; exit 2; }
keep=${KEEP:-sm_90}
T=${TAILOR:-$(cd "$(dirname "$0")/.." && pwd)/build/bin/tailor}
work=$(mktemp -d "${TMPDIR:-/tmp}/slim-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); keep $keep"
bench_wheel() {
whl=$1
echo "== wheel $(basename "$whl") ($(du -h "$whl" | cut -f1))"
rm -rf "$work/out" "$work/unz" "$work/ref.whl"
t0=$(now); "$T" slim "$whl" --keep "$keep" --out "$work/out" --json > "$work/slim.json"; t1=$(now)
t2=$(now); unzip -q "$whl" -d "$work/unz"; (cd "$work/unz" && zip -q -r -6 "$work/ref.whl" .); t3=$(now)
python3 - "$work/slim.json" "$t0" "$t1" "$t2" "$t3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); i = d['inputs'][0]
t0, t1, t2, t3 = map(float, sys.argv[2:6])
slim, ref = t1 - t0, t3 - t2
M = 2 ** 20
rem = sum(f['device_bytes_before'] - f['device_bytes_after'] for f in i['files'])
shr = sum(f['bytes_before'] - f['bytes_after'] for f in i['files'])
print(f"tailor slim {slim:.1f} s; unzip + zip -6 {ref:.1f} s; ratio {slim / ref:.2f}x")
print(f"wheel {i['bytes_before']/M:.1f} -> {i['bytes_after']/M:.1f} MiB ({100*(1-i['bytes_after']/i['bytes_before']):.1f}% smaller)")
print(f"libraries installed {i['installed_bytes_before']/M:.1f} -> {i['installed_bytes_after']/M:.1f} MiB; "
      f"device code removed {rem/M:.1f} MiB, files shrank {shr/M:.1f} MiB ({100*shr/max(rem,1):.1f}% of removed)")
for f in sorted(i['files'], key=lambda f: -f['bytes_before'])[:10]:
    print(f"  {f['path'][-50:]:50s} {f['bytes_before']/M:8.1f} -> {f['bytes_after']/M:8.1f} MiB  kept "
          + ' '.join(t['target'] for t in f['targets'] if t['kept_entries']))
PY
}

bench_env() {
  env=$1
  echo "== environment $env ($(du -sh "$env" | cut -f1))"
  rm -rf "$work/env"
  t0=$(now); cp -a "$env" "$work/env"; t1=$(now)
  before=$(du -sb "$work/env" | cut -f1)
  t2=$(now); "$T" slim "$work/env" --keep "$keep" --in-place --json > "$work/env.json"; t3=$(now)
  after=$(du -sb "$work/env" | cut -f1)
  python3 - "$work/env.json" "$t0" "$t1" "$t2" "$t3" "$before" "$after" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); i = d['inputs'][0]
t0, t1, t2, t3 = map(float, sys.argv[2:6]); before, after = int(sys.argv[6]), int(sys.argv[7])
M = 2 ** 20
rem = sum(f['device_bytes_before'] - f['device_bytes_after'] for f in i['files'])
print(f"environment: tailor slim --in-place {t3 - t2:.1f} s; cp -a of it {t1 - t0:.1f} s; ratio {(t3 - t2) / (t1 - t0):.2f}x")
print(f"environment {before/M:.0f} -> {after/M:.0f} MiB; {len(i['files'])} libraries with device code of "
      f"{i['libraries_scanned']} ELF files; device code removed {rem/M:.1f} MiB, "
      f"shrank {(before-after)/M:.1f} MiB ({100*(before-after)/max(rem,1):.1f}% of removed)")
PY
}

for input in "$@"; do
  if [ -d "$input" ]; then bench_env "$input"; else bench_wheel "$input"; fi
done
