# shellcheck shell=bash disable=SC2034  # fail, failures, src, redis_port, tiny_ext: read by the scripts that source this file
# Plumbing shared by the e2e scripts (tests/e2e/*.sh): the check helpers (ok, bad,
# expect_eq, expect_grep, fail), JSON reads, test wheels, and for the scripts that start
# servers and build the test fixture extension (cache_shared.sh, cache_s3.sh, dist.sh,
# governor.sh, build_failure.sh, stack.sh ...) ports, a Redis and package copies. Sourced,
# never run. Safe under `set -euo pipefail`; it changes no shell option and starts nothing
# until a function is called.
#
# Two styles of script use it. Most check everything and end with `exit $fail`: ok,
# bad, expect_eq and expect_grep print one line per check and set fail=1 on a failure.
# The others stop at the first failure: fail prints one line and exits 1.

# This folder (tests/e2e/lib), absolute: the scripts may cd after sourcing this file.
e2e_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The source tree: TAILOR_SOURCE_DIR, else the tree this file is in.
src=${TAILOR_SOURCE_DIR:-$(cd "$e2e_lib/../../.." && pwd)}

# A failed check (bad, expect_eq, expect_grep) sets fail to 1 and counts in failures; the
# script ends with `exit $fail`.
fail=0
failures=0

# ok NAME: "ok   NAME".
ok() { echo "ok   $*"; }

# bad WHAT: "FAIL WHAT" and fail=1; the script goes on.
bad() { echo "FAIL $*"; fail=1; failures=$((failures + 1)); }

# expect_eq NAME GOT WANT: "ok   NAME", or a FAIL line with both values and fail=1.
expect_eq() {
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi
}

# expect_grep NAME PATTERN FILE: "ok   NAME" when FILE has PATTERN, else a FAIL line, the
# file's last 40 lines and fail=1.
expect_grep() {
  if grep -q -- "$2" "$3"; then ok "$1"; else bad "$1: no '$2' in $3"; sed 's/^/    /' "$3" | tail -40; fi
}

# fail WHAT: "FAIL: WHAT" on stderr and exit 1, for the scripts that stop at the first
# failure. (The variable fail above is the flag of the scripts that go on; bash keeps
# functions and variables apart.)
fail() { echo "FAIL: $*" >&2; exit 1; }

# json_get FILE EXPR: the Python expression EXPR over the JSON document of FILE (as `j`).
json_get() { python3 -c 'import json,sys; j=json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$2" "$1"; }

# make_wheel [--stored] [--bad-hash] OUT FILE:ARC...: a wheel of those files, its name,
# version and tag taken from OUT's file name (lib/make_wheel.py).
make_wheel() { python3 "$e2e_lib/make_wheel.py" "$@"; }

# free_port: a loopback TCP port that nothing listened on a moment ago.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_port PORT [TENTHS]: wait until something listens on loopback PORT, at most TENTHS
# tenths of a second (default 600: moto takes 2-15 s to import); 1 when nothing did.
wait_port() {
  local _
  for _ in $(seq "${2:-600}"); do
    python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),0.2)' "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# start_redis DIR: Debian's redis-server on a free loopback port, nothing persisted, its
# files and redis.log in DIR; sets redis_port and redis_pid and waits up to 5 s for it to
# listen (1 when it did not). Call stop_redis from the script's EXIT trap.
redis_pid=
start_redis() {
  redis_port=$(free_port)
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$1" >"$1/redis.log" 2>&1 &
  redis_pid=$!
  wait_port "$redis_port" 50
}
# stop_redis: the server of start_redis, stopped and waited for; nothing when none runs.
stop_redis() {
  [ -n "$redis_pid" ] || return 0
  kill "$redis_pid" 2>/dev/null
  wait "$redis_pid" 2>/dev/null
  redis_pid=
}

# The test fixture extension (tests/e2e/data/tiny_ext): a real torch CUDAExtension package
# of one small .cu and one .cpp, no torch header, that builds in seconds. The tests of the
# build's infrastructure (caches, dist, governor, failures, stack) build it;
# build_example.sh builds the real example, examples/fused_ops.
tiny_ext=$src/tests/e2e/data/tiny_ext

# copy_package DIR DEST...: the package folder DIR into each DEST folder (made when
# missing), as DEST/<basename of DIR>, as a user copies it (cp -r: fresh times, which the
# wheel must not depend on: SOURCE_DATE_EPOCH comes from the source, never its files' times).
copy_package() {
  local dir=$1 dest
  shift
  for dest in "$@"; do
    mkdir -p "$dest" && cp -r "$dir" "$dest/" || return 1
  done
}
