#!/usr/bin/env bash
# Builds a tailor that runs on another x86_64/aarch64 Linux with an older or different
# set of libraries (for example a GPU machine without Debian's -dev packages): libstdc++
# and libgcc linked statically, the other non-glibc libraries copied beside the binary and
# found through RUNPATH=$ORIGIN/lib. Output: OUT_DIR/bin/tailor and OUT_DIR/bin/lib/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-portable}
cmake -S . -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAILOR_TESTS=OFF -DTAILOR_BENCH=ON \
  -DCMAKE_EXE_LINKER_FLAGS='-static-libstdc++ -static-libgcc' -DCMAKE_BUILD_RPATH='$ORIGIN/lib' >/dev/null
# (CMAKE_BUILD_RPATH, not -Wl,-rpath in the linker flags: Ninja and the shell ate the '$'.)
ninja -C "$out" tailor
readelf -d "$out/bin/tailor" | grep -q 'RUNPATH.*\$ORIGIN/lib' || { echo "portable_bundle: no \$ORIGIN/lib RUNPATH" >&2; exit 1; }
mkdir -p "$out/bin/lib"
ldd "$out/bin/tailor" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*) ;;
    # A second run finds the copies already there (RUNPATH=$ORIGIN/lib): nothing to copy.
    *) [ "$(readlink -f "$lib")" = "$(readlink -f "$out/bin/lib/$(basename "$lib")")" ] || cp -L "$lib" "$out/bin/lib/" ;;
  esac
done
echo "portable tailor in $out/bin (libraries: $(ls "$out/bin/lib" | tr '\n' ' '))"
