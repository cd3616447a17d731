#!/usr/bin/env bash
# Issue 38 on the GPU machine (no bubblewrap there): the same wheel from two HOMEs and two
# work folders with nothing installed. For each SOURCE (default: the bundled example; else
# an sdist file, NAME==VERSION from the index, or a source folder), two cold builds
# (--cache none, empty XDG cache each) in two HOMEs of different length, /tmp/hq1 and
# /tmp/a/much/longer/home/hq2; prints the route each build took (run.work_path_route, and
# why not a better one), both sha256s and "same" or "DIFFER". Before the builds: what
# `tailor detect` says of the route, and whether bwrap is on PATH.
#
# usage: bench/fixed_path_gpu.sh [--tailor PATH] [--arch 9.0] [--route namespace|folder|...] [SOURCE...]
# --route sets TAILOR_FIXED_PATH_ROUTE (the test switch) for every build; unset: tailor's choice.
# One source per call keeps a real package's pair inside a 10-minute command limit.
# Exit 0 when every pair is the same, 1 otherwise.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
arch=9.0
route=""
sources=()
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --route) route=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) sources+=("$1"); shift ;;
  esac
done
[ ${#sources[@]} -gt 0 ] || sources=("")
[ -x "$tailor" ] || { echo "no tailor at $tailor (--tailor PATH)"; exit 2; }
homes=(/tmp/hq1 /tmp/a/much/longer/home/hq2)
out=$(mktemp -d /tmp/fixed-path-gpu-XXXXXX)
echo "== machine: $(uname -r), uid $(id -u), bwrap: $(command -v bwrap || echo 'not on PATH')"
echo "== user namespaces: max_user_namespaces=$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo ?)," \
  "unprivileged_userns_clone=$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo n/a)"
echo "== tailor detect:"
TAILOR_FIXED_PATH_ROUTE=$route "$tailor" detect --no-python | awk '/^fixed work path/ {on=1; next} on && /^[^ ]/ {on=0} on'
status=0
for source in "${sources[@]}"; do
  label=${source:-example}
  label=${label##*/}
  shas=()
  for i in 0 1; do
    home=${homes[$i]}
    rm -rf "$home" && mkdir -p "$home"
    work="$home/work-$i"
    dest="$out/$label-$i"
    start=$SECONDS
    # The example is found from inside the repository; any other source is given.
    (cd "$here" && HOME="$home" XDG_CACHE_HOME="$home/.cache" TAILOR_FIXED_PATH_ROUTE=$route \
      "$tailor" build ${source:+"$source"} --arch "$arch" --work-dir "$work" --out "$dest" --cache none \
      --no-tests --progress plain >"$out/$label-$i.log" 2>&1)
    rc=$?
    report=$(ls "$dest"/*.report.json 2>/dev/null | head -1)
    sha=$(sha256sum "$dest"/*.whl 2>/dev/null | head -1 | cut -d' ' -f1)
    shas+=("${sha:-none}")
    if [ -n "$report" ]; then
      r=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["run"]; print(j.get("work_path_route"), "|", j.get("work_path"), "|", j.get("work_path_tried") or "-", "|", j.get("work_path_note") or "-")' "$report")
    else
      r="no report"
    fi
    echo "$label build $i: exit $rc, $((SECONDS - start)) s, HOME=$home"
    echo "    route | work path | not taken | warning: $r"
    echo "    sha256 ${sha:-none}"
    [ "$rc" = 0 ] || { tail -n 15 "$out/$label-$i.log" | sed 's/^/    | /'; status=1; }
  done
  if [ "${shas[0]}" != none ] && [ "${shas[0]}" = "${shas[1]}" ]; then
    echo "$label: same wheel from both HOMEs (${shas[0]})"
  else
    echo "$label: DIFFER (${shas[0]} vs ${shas[1]})"
    status=1
  fi
done
echo "logs and wheels: $out"
exit $status
