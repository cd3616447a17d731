#!/usr/bin/env bash
# End-to-end: a local sccache-dist cluster (`tailor dist up --servers 2`: a scheduler and
# two bubblewrap build servers on loopback, token auth) in a temporary state folder, the
# test fixture extension (tests/e2e/data/tiny_ext: one .cu, one .cpp; a real CUDAExtension
# that builds in seconds) built with `tailor build --dist`, the report's distributed compile count
# checked (nvcc's cudafe++/cicc/ptxas/host steps and the C++ file go to the servers; the
# nvcc drivers stay here and the report says so), `tailor doctor --dist` with a right and a
# wrong token, then `tailor dist down`, and no sccache-dist/sccache process of the test left.
# With Debian's redis-server, the build also uses a shared cache (--cache-url redis://):
# a second --dist build from a fresh work folder hits for the C++, cicc and ptxas steps,
# sends fewer compiles to the servers, and makes the same wheel.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
for tool in sccache sccache-dist bwrap; do
  command -v "$tool" >/dev/null || { echo "skip: $tool not installed (scripts/setup.sh installs it)"; exit 77; }
done
bwrap --ro-bind / / --dev /dev --unshare-all true 2>/dev/null || { echo "skip: bwrap cannot make a sandbox here (root and user namespaces needed)"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# src, fail, ok, bad, json_get, start_redis/stop_redis, tiny_ext.
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

tmp=$(mktemp -d)
state=$tmp/state
# Our processes: those whose command line names this test's state folder or work folder.
# The build's own sccache server has no arguments: it is found by SCCACHE_CONF in its environment.
ours() {
  ps -eo pid=,args= | grep -F -e "$tmp/" | grep -E 'sccache' | grep -v grep
  for pid in $(pgrep -x sccache) $(pgrep -x sccache-dist); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SCCACHE_CONF=$state/client.toml" && echo "$pid sccache (build server of this test)"
  done
}
cleanup() {
  "$TAILOR" dist down --state-dir "$state" >/dev/null 2>&1
  stop_redis
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free port block for the scheduler and two servers.
port=$(python3 -c 'import socket,random
for _ in range(200):
    p=random.randint(20000,60000)
    try:
        for q in (p,p+1,p+2):
            s=socket.socket(); s.bind(("127.0.0.1",q)); s.close()
        print(p); break
    except OSError: pass')

"$TAILOR" dist up --state-dir "$state" --servers 2 --port "$port" >"$tmp/up.out" 2>&1
rc=$?
[ "$rc" = 0 ] && ok "dist up" || { bad "dist up exit $rc"; cat "$tmp/up.out"; exit 1; }
grep -q "with 2 build servers" "$tmp/up.out" && ok "two servers registered" || bad "up did not report 2 servers"
grep -q "sccache-dist server --config server.toml" "$tmp/up.out" && ok "prints how to add a remote server" || bad "no remote server help"
[ "$(stat -c %a "$state/token")" = 600 ] && ok "token is 0600" || bad "token mode $(stat -c %a "$state/token")"
[ "$(stat -c %a "$state/client.toml")" = 600 ] && ok "client config is 0600" || bad "client config mode"
grep -q 'type = "overlay"' "$state/server-1/server.toml" && ok "bubblewrap (overlay) builder" || bad "server config has no overlay builder"
"$TAILOR" dist status --state-dir "$state" >"$tmp/status.out" 2>&1 && ok "dist status" || { bad "dist status"; cat "$tmp/status.out"; }
grep -q "2 build servers" "$tmp/status.out" && ok "status: 2 build servers" || bad "status does not show 2 servers"
"$TAILOR" dist up --state-dir "$state" --servers 2 --port "$port" >/dev/null 2>"$tmp/up2.err"
[ $? = 1 ] && grep -q "already running" "$tmp/up2.err" && ok "second up refused" || bad "second up not refused"

"$TAILOR" doctor --dist "$state" >"$tmp/doctor.out" 2>&1 && ok "doctor --dist passes" || { bad "doctor --dist"; cat "$tmp/doctor.out"; }
grep -q "^ok *auth" "$tmp/doctor.out" && ok "doctor: token accepted" || bad "doctor: no auth line"
sed 's/^token = .*/token = "wrong"/' "$state/client.toml" >"$tmp/wrong.toml"
"$TAILOR" doctor --dist "$tmp/wrong.toml" >"$tmp/doctor2.out" 2>&1
[ $? = 1 ] && grep -q "^fail *auth .*401" "$tmp/doctor2.out" && ok "doctor: wrong token refused (one line)" || { bad "wrong token not caught"; cat "$tmp/doctor2.out"; }

# A shared cache for the dist builds, when Redis is here: a server of this test's own.
storage=()
if command -v redis-server >/dev/null; then
  start_redis "$tmp"
  rport=$redis_port
  # nvcc's cached steps are keyed by the source's path: a shared cache builds in a stable
  # work folder (here in $tmp), the same on every machine.
  printf '[cache]\nurl = "redis://127.0.0.1:%s"\nwork_root = "%s"\n' "$rport" "$tmp/shared" >"$tmp/tailor.toml"
  storage=(--config "$tmp/tailor.toml")
else
  echo "note: redis-server not installed: the dist build with a shared cache is not checked"
  storage=(--work-dir "$tmp/work")
fi

# The fixture, built on the cluster; a cache of its own (the empty Redis, else a fresh
# folder) so nothing is a hit.
SCCACHE_DIR="$tmp/sccache" "$TAILOR" build "$tiny_ext" --arch 7.5 --dist "$state" "${storage[@]}" --out "$tmp/dist" \
  --progress plain --no-tests --json >"$tmp/report.json" 2>"$tmp/build.err"
rc=$?
[ "$rc" = 0 ] && ok "build --dist" || { bad "build --dist exit $rc"; tail -30 "$tmp/build.err"; }
if [ "$rc" = 0 ]; then
  n=$(json_get "$tmp/report.json" 'j["run"]["dist"]["dist_compiles"]')
  total=$(json_get "$tmp/report.json" 'j["run"]["dist"]["compilations"]')
  servers=$(json_get "$tmp/report.json" 'len(j["run"]["dist"]["per_server"])')
  echo "     dist_compiles=$n of $total compiler runs, on $servers server(s); errors $(json_get "$tmp/report.json" 'j["run"]["dist"]["dist_errors"]')"
  [ "$n" -gt 0 ] && ok "distributed compiles > 0" || bad "no compile was distributed"
  # Two sources (1 .cu, 1 .cpp): the nvcc driver stays here, so some runs are local, and the report says why.
  [ "$total" -gt "$n" ] && ok "nvcc drivers counted as local" || bad "expected local nvcc driver runs"
  json_get "$tmp/report.json" '" ".join(j["run"]["dist"]["notes"])' | grep -q "nvcc drivers always do" \
    && ok "report names the local nvcc step" || bad "report does not say what stayed local"
  grep -q "dist ok: " "$tmp/build.err" && ok "preflight lines printed" || bad "no dist preflight lines"
  ls "$tmp/dist"/*.whl >/dev/null 2>&1 && ok "wheel published" || bad "no wheel"
fi

# The same build from a fresh work folder against the filled Redis: the compiles hit,
# fewer are distributed, the wheel is the same.
if [ "$rc" = 0 ] && [ -n "$redis_pid" ]; then
  rm -rf "$tmp/shared"  # another machine: nothing local is left
  SCCACHE_DIR="$tmp/sccache2" "$TAILOR" build "$tiny_ext" --arch 7.5 --dist "$state" "${storage[@]}" --out "$tmp/dist3" \
    --progress plain --no-tests --json >"$tmp/report3.json" 2>"$tmp/build3.err"
  rc3=$?
  [ "$rc3" = 0 ] && ok "second build --dist with the shared cache" || { bad "second build exit $rc3"; tail -30 "$tmp/build3.err"; }
  if [ "$rc3" = 0 ]; then
    hits=$(json_get "$tmp/report3.json" 'j["run"]["cache"]["hits"]')
    misses=$(json_get "$tmp/report3.json" 'j["run"]["cache"]["misses"]')
    n3=$(json_get "$tmp/report3.json" 'j["run"]["dist"]["dist_compiles"]')
    store=$(json_get "$tmp/report3.json" 'j["run"]["cache"]["storage"]')
    echo "     second build: $hits hits, $misses misses, $n3 distributed; storage $store"
    echo "     by step kind: $(json_get "$tmp/report3.json" "j[\"run\"][\"cache\"][\"categories\"]")"
    # The costly steps (cicc, ptxas) and the C++ file hit. sccache 0.16 in dist mode keys
    # the host compile of nvcc's cudafe++ output by its temporary file, so those (one per
    # .cu, the cheapest step) miss on every dist build and are sent out again.
    miss_of() { json_get "$tmp/report3.json" "j['run']['cache']['categories'].get('$1',{}).get('misses',-1)"; }
    hit_of() { json_get "$tmp/report3.json" "j['run']['cache']['categories'].get('$1',{}).get('hits',0)"; }
    for kind in "C/C++" "PTX (cicc)" "cubin (ptxas)"; do
      [ "$(miss_of "$kind")" = 0 ] && [ "$(hit_of "$kind")" -gt 0 ] && ok "$kind: all hits" || bad "$kind: $(hit_of "$kind") hits, $(miss_of "$kind") misses"
    done
    [ "$n3" -lt "$n" ] && ok "fewer compiles sent to the servers ($n3 < $n)" || bad "$n3 compiles distributed on a warm cache (cold: $n)"
    case "$store" in "redis://127.0.0.1:$rport") ok "report names the Redis storage" ;; *) bad "storage '$store'" ;; esac
    a=$(sha256sum "$tmp"/dist/*.whl | cut -d' ' -f1); b=$(sha256sum "$tmp"/dist3/*.whl | cut -d' ' -f1)
    [ -n "$a" ] && [ "$a" = "$b" ] && ok "same wheel bytes" || bad "wheels differ ($a, $b)"
  fi
fi

# A --dist build against a stopped cluster fails in the preflight, before compiling.
"$TAILOR" dist down --state-dir "$state" >"$tmp/down.out" 2>&1 && ok "dist down" || { bad "dist down"; cat "$tmp/down.out"; }
[ "$(grep -c '^stopped' "$tmp/down.out")" = 3 ] && ok "three processes stopped" || bad "down stopped $(grep -c '^stopped' "$tmp/down.out")"
"$TAILOR" build "$tiny_ext" --arch 7.5 --dist "$state" --out "$tmp/dist2" --work-dir "$tmp/work" --progress plain --no-tests \
  >/dev/null 2>"$tmp/build2.err"
[ $? = 1 ] && grep -q "tailor: error: distributed compiles: .*not reachable" "$tmp/build2.err" \
  && ok "build --dist without a scheduler fails in preflight" || { bad "no preflight failure"; tail -5 "$tmp/build2.err"; }
sleep 1
left=$(ours)
[ -z "$left" ] && ok "no sccache-dist/sccache process left" || { bad "processes left:"; echo "$left"; }
exit $fail
