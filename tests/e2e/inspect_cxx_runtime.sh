#!/usr/bin/env bash
# tailor inspect over real ELF files: an extension linked against a library named like
# torch's libc10.so, once with libstdc++ needed dynamically and once with g++
# -static-libstdc++ (its own C++ runtime inside; what a compiler that finds only
# libstdc++.a produces, and what crashed a real build on a GPU machine). Only the second
# gets the runtime warning, in text and in JSON.
set -uo pipefail
: "${TAILOR:?TAILOR must point at the built binary}"
command -v g++ >/dev/null || { echo "skip: no g++"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, ok, bad
cd "$work" || exit 1
printf 'namespace c10 { void fail() { throw 1; } }\n' >c10.cpp
printf 'namespace c10 { void fail(); }\nint ext() { try { c10::fail(); } catch (int) { return 1; } return 0; }\n' >ext.cpp
g++ -shared -fPIC c10.cpp -o libc10.so || { echo "skip: g++ cannot build a shared library"; exit 77; }
g++ -shared -fPIC ext.cpp -L. -lc10 -o ext_dynamic.so || exit 1
if ! g++ -shared -fPIC -static-libstdc++ ext.cpp -L. -lc10 -o ext_static.so 2>"$work/static.err"; then
  echo "skip: g++ has no PIC libstdc++.a: $(head -1 "$work/static.err")"; exit 77
fi

"$TAILOR" inspect ext_static.so >static.txt 2>&1
grep -q "WARNING    links torch (libc10.so) but does not need libstdc++.so.6: a static C++ runtime" static.txt \
  && ok "static runtime: warned" || { bad "static runtime: no warning"; cat static.txt; }
"$TAILOR" inspect ext_static.so --json >static.json 2>/dev/null
n=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(l.get("runtime_warnings", [])) for l in d["libraries"]))' static.json 2>&1)
[ "$n" = 1 ] && ok "static runtime: one runtime warning in JSON" || bad "static runtime: JSON runtime warnings: $n"
"$TAILOR" inspect ext_dynamic.so >dynamic.txt 2>&1
grep -q "does not need libstdc++" dynamic.txt && { bad "dynamic runtime: warned"; cat dynamic.txt; } || ok "dynamic runtime: no warning"
exit $fail
