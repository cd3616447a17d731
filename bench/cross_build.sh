#!/usr/bin/env bash
# tailor's cross build against a native build under qemu-user emulation, on one x86_64
# machine in one script: the bundled example and real sdists built for aarch64 and one GPU
# target (--arch, default 9.0).
#
# Cross side: `tailor build SRC --platform aarch64 --arch A --cache none --no-tests`
# (no ccache, no wheel cache: compile against compile), from a fresh work folder.
# Emulated side (what cibuildwheel does with docker + qemu): an arm64 root made of Debian's
# arm64 packages (gcc-12/g++-12, binutils, libc6-dev, libstdc++-12-dev, python3.11 and its
# -dev/-venv, fetched with a private apt state and unpacked, no maintainer scripts), pip,
# setuptools and ninja's aarch64 wheel from PyPI, the index's aarch64 nvcc 13.0
# (nvidia-cuda-nvcc, -crt, -runtime, -cccl, nvidia-nvvm: one CUDA_HOME with bin/nvcc,
# nvvm/bin/cicc, include, lib64) and the aarch64 torch tailor's cross build prepared
# (~/.cache/tailor/cross/aarch64-py*-torch*: build-site and run-site, bound read-only).
# binfmt_misc runs every aarch64 executable under qemu-aarch64-static (registered here with
# the F flag when absent), so in a chroot of that root the package's own build runs as it
# would on an aarch64 machine: python3.11 -m pip wheel --no-build-isolation --no-deps with
# TORCH_CUDA_ARCH_LIST=A and MAX_JOBS=--jobs. The chroot's mounts live in a private mount
# namespace (unshare -m) and vanish with it. Everything downloaded is kept under --emu-cache
# (default ~/.cache/tailor-bench/emulated), so a second run downloads nothing.
#
# Packages: the bundled example, chamferdist 1.0.3 and spatial-correlation-sampler 0.5.0
# (fast-transformers 0.4.0 is listed, not run by default: its own build asks nvcc for
# -arch=compute_50, which nvcc 13 refuses on any machine, emulated or not).
# Per package it prints wall and CPU seconds (user + sys of every process, qemu's included)
# of both sides and their ratio, the per-unit compile times from both builds' ninja logs,
# then compares the device code of the two wheels (`tailor inspect WHEEL --json`): per
# library its machine, its targets, and per target the fatbin entries and their
# uncompressed bytes must be equal (ok / DIFF). Wheels and times are kept in
# --keep (default ~/.cache/tailor-bench/cross-results/PKG/{cross,emulated}), so the two
# sides can be run by separate commands (--side) and reported together.
#
# usage: bench/cross_build.sh [--tailor PATH] [--sources DIR] [--arch SPEC] [--jobs N]
#          [--only example,chamferdist,spatial-correlation-sampler,fast-transformers]
#          [--side both|cross|emulated|report] [--emu-cache DIR] [--keep DIR]
#          [--torch-target DIR] [--timeout SECONDS]
# Needs root (chroot, mount, binfmt_misc), qemu-user-static, g++-aarch64-linux-gnu, a
# prepared cross target (one `tailor build --platform aarch64` before) and the network on
# the first run. Run it with nice on a shared machine: emulated builds take long.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
sources="$here/.carry/sdists"
arch=9.0
jobs=2
only="example,chamferdist,spatial-correlation-sampler"
side=both
emu="$HOME/.cache/tailor-bench/emulated"
keep="$HOME/.cache/tailor-bench/cross-results"
target=""
timeout_s=14400
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --sources) sources=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --side) side=$2; shift 2 ;;
    --emu-cache) emu=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --torch-target) target=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
case $side in both|cross|emulated|report) ;; *) echo "--side: both, cross, emulated or report" >&2; exit 2 ;; esac
[ -x "$tailor" ] || [ "$side" = emulated ] ||
  { echo "no tailor at $tailor (build it, or pass --tailor)" >&2; exit 2; }
tailor=$(cd "$(dirname "$tailor")" 2>/dev/null && pwd)/$(basename "$tailor")
[ -n "$target" ] || target=$(ls -d "$HOME"/.cache/tailor/cross/aarch64-py3.11-torch* 2>/dev/null | head -1)
apt_state="$HOME/.cache/tailor/cross/apt-arm64"
qemu=/usr/bin/qemu-aarch64-static

# name -> source (a folder, or an sdist in --sources)
source_for() {
  case $1 in
    example) echo "$here/examples/fused_ops" ;;
    chamferdist) echo "$sources/chamferdist-1.0.3.tar.gz" ;;
    fast-transformers) echo "$sources/pytorch-fast-transformers-0.4.0.tar.gz" ;;
    spatial-correlation-sampler) echo "$sources/spatial_correlation_sampler-0.5.0.tar.gz" ;;
    *) return 1 ;;
  esac
}

# ---- the emulated side's root, made once ------------------------------------------------
debian_packages="gcc g++ gcc-12 g++-12 binutils libc6-dev libstdc++-12-dev libc-bin
  python3.11 python3.11-dev python3.11-venv dash bash coreutils sed grep findutils diffutils"
pypi_aarch64="nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88
  nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 ninja==1.13.2"
pypi_any="pip==26.3 setuptools==81.0.0"

apt_opts() {
  echo "-o Dir::State::Lists=$apt_state/lists -o Dir::State::status=$apt_state/status" \
       "-o Dir::Cache=$apt_state/cache -o APT::Architecture=arm64" \
       "-o APT::Architectures::=arm64 -o Debug::NoLocking=1 -o APT::Sandbox::User=root -q"
}

register_binfmt() {
  local f=/proc/sys/fs/binfmt_misc
  [ -e $f/register ] || mount -t binfmt_misc binfmt_misc $f || return 1
  if [ -e $f/qemu-aarch64 ]; then
    grep -q '^flags:.*F' $f/qemu-aarch64 ||
      { echo "binfmt_misc: qemu-aarch64 is registered without the F flag" >&2; return 1; }
    echo "binfmt_misc: qemu-aarch64 already registered ($(sed -n 's/^interpreter //p' $f/qemu-aarch64), F)"
    return 0
  fi
  # qemu's standard aarch64 magic and mask (scripts/qemu-binfmt-conf.sh), F: the interpreter
  # is opened now, so it runs inside a chroot without a copy there.
  printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$qemu"':F' >$f/register || return 1
  echo "binfmt_misc: registered qemu-aarch64 -> $qemu (F flag)"
}

make_root() {
  local root=$emu/root
  [ -e "$root/.complete" ] && return 0
  echo "emulated root: making $root"
  mkdir -p "$emu/debs" "$emu/wheels"
  if [ ! -e "$emu/debs/.complete" ]; then
    [ -d "$apt_state/lists" ] && ls "$apt_state"/lists/*Packages* >/dev/null 2>&1 ||
      { mkdir -p "$apt_state/lists/partial" "$apt_state/cache/archives/partial"
        touch "$apt_state/status"; apt-get $(apt_opts) update || return 1; }
    local names
    names=$(apt-get $(apt_opts) -s --no-install-recommends install $debian_packages |
            awk '/^Inst /{print $2}')
    [ -n "$names" ] || { echo "apt-get could not resolve $debian_packages" >&2; return 1; }
    echo "emulated root: $(echo $names | wc -w) Debian arm64 packages"
    (cd "$emu/debs" && apt-get $(apt_opts) -qq download $names) || return 1
    touch "$emu/debs/.complete"
  fi
  if [ ! -e "$emu/wheels/.complete" ]; then
    (cd "$emu/wheels" &&
     python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
       --implementation cp --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64 \
       $pypi_aarch64 &&
     python3 -m pip download -q --no-deps --only-binary=:all: $pypi_any) || return 1
    touch "$emu/wheels/.complete"
  fi
  rm -rf "$root.tmp" && mkdir -p "$root.tmp"
  for d in "$emu"/debs/*.deb; do dpkg-deb -x "$d" "$root.tmp" || return 1; done
  (cd "$root.tmp" &&
   { [ -e bin/sh ] || ln -s dash bin/sh; } &&
   ln -sf g++ usr/bin/c++ && ln -sf gcc usr/bin/cc &&
   mkdir -p proc dev sys tmp root work opt/build-site opt/run-site etc &&
   chmod 1777 tmp &&
   printf 'root:x:0:0:root:/root:/bin/sh\n' >etc/passwd && printf 'root:x:0:\n' >etc/group) ||
    return 1
  # (bin/sh, c++ and cc are made by the maintainer scripts of dash, g++ and gcc, not run here.)
  # CUDA_HOME: the index's aarch64 nvcc 13.0 wheels in one tree, the CUDA libraries'
  # headers torch includes (cuBLAS, cuSPARSE, cuSOLVER, ...) from the target's run-site.
  local w=$emu/cuda.tmp
  rm -rf "$w" && mkdir -p "$w"
  for f in "$emu"/wheels/nvidia_*.whl; do python3 -m zipfile -e "$f" "$w" || return 1; done
  mv "$w/nvidia/cu13" "$root.tmp/opt/cuda" && rm -rf "$w"
  cp -rn "$target"/run-site/nvidia/cu13/include/. "$root.tmp/opt/cuda/include/"
  (cd "$root.tmp/opt/cuda" && chmod +x bin/* nvvm/bin/* &&
   ln -s lib lib64 && ln -s libcudart.so.13 lib/libcudart.so &&
   mkdir targets && ln -s .. targets/sbsa-linux && ln -s .. targets/aarch64-linux) || return 1
  mkdir -p "$root.tmp/wheels" && cp "$emu"/wheels/*.whl "$root.tmp/wheels/"
  rm -rf "$root" && mv "$root.tmp" "$root"
  in_root /sbin/ldconfig || return 1
  in_root sh -c 'python3.11 $(ls /wheels/pip-*.whl)/pip install -q --no-index --no-deps --break-system-packages --root-user-action=ignore \
    /wheels/pip-*.whl /wheels/setuptools-*.whl /wheels/ninja-*.whl' || return 1
  in_root sh -c 'uname -m; python3.11 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)";
    /opt/cuda/bin/nvcc --version | tail -1; g++ --version | head -1; ninja --version' || return 1
  touch "$root/.complete"
}

# Run a command in the arm64 root: a private mount namespace with /proc, /dev and the target
# torch bound in, a clean environment.
in_root() {
  local root=$emu/root
  unshare -m --propagation private bash -c '
    r=$1; t=$2; shift 2
    mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && mount --rbind /sys "$r/sys" &&
    mount --bind "$t/build-site" "$r/opt/build-site" && mount -o remount,bind,ro "$r/opt/build-site" &&
    mount --bind "$t/run-site" "$r/opt/run-site" && mount -o remount,bind,ro "$r/opt/run-site" &&
    exec chroot "$r" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin:/opt/cuda/bin \
      FORCE_CUDA=1 HOME=/root USER=root LANG=C.UTF-8 TMPDIR=/tmp CUDA_HOME=/opt/cuda \
      PYTHONPATH=/opt/build-site:/opt/run-site PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
      PYTHONDONTWRITEBYTECODE=1 TORCH_CUDA_ARCH_LIST="$ARCH" MAX_JOBS="$JOBS" "$@"' \
    in_root "$root" "$target" "$@"
}
export ARCH=$arch JOBS=$jobs

# Wall and CPU seconds (user + sys of every process of the build, qemu's included) of one
# command: "rc wall cpu" into $1, the command's output into $2.
timed() {
  local res=$1 log=$2 rc t
  shift 2
  TIMEFORMAT='%R %U %S'
  { time "$@" >"$log" 2>&1; } 2>"$res.time"
  rc=$?
  t=$(tail -1 "$res.time")
  echo "$rc $(echo "$t" | awk '{printf "%.1f %.1f", $1, $2 + $3}')" >"$res"
  rm -f "$res.time"
}

# The compile units of a build: "unit seconds" per line from the ninja logs under $1 (the unit
# named by the last two parts of its object's path, as both builds lay objects out alike).
units() {
  find "$1" -name .ninja_log 2>/dev/null | while read -r f; do
    awk -F'\t' 'NR > 1 && $4 ~ /\.o$/ {n = split($4, p, "/"); u = (n > 1 ? p[n-1] "/" : "") p[n]
                 printf "%s %.1f\n", u, ($2 - $1) / 1000}' "$f"
  done | LC_ALL=C sort
}

run_cross() {  # name src
  local d=$keep/$1/cross w
  rm -rf "$d" && mkdir -p "$d/out"
  w=$(mktemp -d /tmp/xbench-work.XXXXXX)
  timed "$d/result" "$d/log" timeout "$timeout_s" "$tailor" build "$2" --platform aarch64 \
    --arch "$arch" --cache none --no-tests --work-dir "$w" --out "$d/out"
  units "$w" >"$d/units"
  rm -rf "$w"
  local rc wall cpu
  read -r rc wall cpu <"$d/result"
  echo "  cross:    rc=$rc ${wall} s, cpu ${cpu} s, $(wc -l <"$d/units") units" \
       "($(ls "$d"/out/*.whl 2>/dev/null | xargs -r -n1 basename))"
  [ $rc = 0 ] || tail -5 "$d/log" | sed 's/^/    /'
}

run_emulated() {  # name src
  local d=$keep/$1/emulated work=$emu/root/work/$1
  rm -rf "$d" "$work" && mkdir -p "$d/out" "$work"
  local what
  # The source as a folder (an sdist unpacked, as pip would), so its build folder and ninja
  # logs stay for the per-unit times.
  if [ -d "$2" ]; then cp -r "$2" "$work/src" && what=/work/$1/src
  else tar -xzf "$2" -C "$work" && what=/work/$1/$(tar -tzf "$2" | head -1 | cut -d/ -f1); fi
  timed "$d/result" "$d/log" timeout "$timeout_s" bash -c 'in_root "$@"' _ \
    python3.11 -m pip wheel -v --no-build-isolation --no-deps -w "/work/$1/out" "$what"
  cp "$work"/out/*.whl "$d/out/" 2>/dev/null
  units "$work" >"$d/units"
  rm -rf "$work"
  local rc wall cpu
  read -r rc wall cpu <"$d/result"
  echo "  emulated: rc=$rc ${wall} s, cpu ${cpu} s, $(wc -l <"$d/units") units" \
       "($(ls "$d"/out/*.whl 2>/dev/null | xargs -r -n1 basename))"
  [ $rc = 0 ] || tail -5 "$d/log" | sed 's/^/    /'
}
export -f in_root
export emu target

# Device code of a wheel, from `tailor inspect --json`: per library with device code its
# machine, then "target entries bytes" per target (bytes uncompressed), sorted.
device_code() {
  "$tailor" inspect "$1" --json | python3 -c '
import json, sys
rows = []
def walk(o):
    if isinstance(o, dict):
        if "machine" in o and "target_stats" in o and o.get("has_device_code"):
            rows.append((o["path"], o["machine"],
                         sorted((t["name"], t["entries"], t["uncompressed_bytes"])
                                for t in o["target_stats"])))
            return
        for v in o.values(): walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(json.load(sys.stdin))
for path, machine, stats in sorted(rows):
    print(path, machine, " ".join("%s:%d:%d" % t for t in stats))
if not rows: print("no device code")
'
}

report() {
  echo
  echo "package | cross s (cpu s) | emulated s (cpu s) | ratio wall (cpu) |" \
       "cross build phase s (no import test) | ratio to it | device code"
  local name c e
  for name in ${only//,/ }; do
    c=$keep/$name/cross; e=$keep/$name/emulated
    local cr=- er=- ratio=- dev=- a b phase=- pratio=-
    a=$(cat "$c/result" 2>/dev/null); b=$(cat "$e/result" 2>/dev/null)
    cr=$(echo "$a" | awk '$1 == "" {print "-"; exit} {s = $2 " (" ($3 == "" ? "-" : $3) ")"; print ($1 == 0 ? s : "failed, " s)}')
    er=$(echo "$b" | awk '$1 == "" {print "-"; exit} {s = $2 " (" ($3 == "" ? "-" : $3) ")"; print ($1 == 0 ? s : "failed, " s)}')
    case "$cr$er" in *failed*|-*|*-) ;;
      *) ratio=$(echo "$a $b" | awk '{r = sprintf("%.1fx", $5 / $2); if ($3 != "" && $6 != "") r = r sprintf(" (%.1fx)", $6 / $3); print r}') ;;
    esac
    # tailor's build phase: its time without the inputs, the checks and the import test
    # under qemu, which the emulated side does not run.
    phase=$(sed -n 's/^phases .* build \([0-9.]*\) .*/\1/p' "$c/log" 2>/dev/null | head -1)
    [ -n "$phase" ] && [ "$er" != - ] && case "$er" in failed*) ;; *)
      pratio=$(echo "$b $phase" | awk '{printf "%.1fx", $2 / $4}') ;; esac
    [ -n "$phase" ] || phase=-
    local cw ew
    cw=$(ls "$c"/out/*.whl 2>/dev/null | head -1); ew=$(ls "$e"/out/*.whl 2>/dev/null | head -1)
    if [ -n "$cw" ] && [ -n "$ew" ]; then
      device_code "$cw" >"$c/device.txt"; device_code "$ew" >"$e/device.txt"
      if cmp -s "$c/device.txt" "$e/device.txt"; then
        dev="ok ($(awk '{$1=""; print substr($0, 2)}' "$c/device.txt" | tr '\n' ';' | sed 's/;$//'))"
      else
        dev=DIFF; diff "$c/device.txt" "$e/device.txt" | sed 's/^/    /' >&2
      fi
    fi
    echo "$name | $cr | $er | $ratio | $phase | $pratio | $dev"
  done
  echo
  echo "compile units (ninja logs), built both ways: package | units | cross s | emulated s | ratio | largest unit"
  for name in ${only//,/ }; do
    c=$keep/$name/cross/units; e=$keep/$name/emulated/units
    [ -s "$c" ] && [ -s "$e" ] || continue
    LC_ALL=C join "$c" "$e" | awk -v n="$name" '{k++; a += $2; b += $3; if ($3 > m) {m = $3; u = $1; ua = $2}}
      END {if (k) printf "%s | %d | %.1f | %.1f | %.1fx | %s %.1f s vs %.1f s (%.1fx)\n",
           n, k, a, b, b / a, u, ua, m, m / ua}'
  done
}

echo "cross_build: $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); arch $arch; jobs $jobs"
echo "tailor: $tailor; target torch: $target"
if [ "$side" = both ] || [ "$side" = emulated ]; then
  [ "$(id -u)" = 0 ] || { echo "the emulated side needs root (chroot, mount, binfmt_misc)" >&2; exit 2; }
  [ -x "$qemu" ] || { echo "no $qemu: sudo apt-get install qemu-user-static" >&2; exit 2; }
  [ -n "$target" ] && [ -d "$target/build-site" ] ||
    { echo "no prepared cross target: run one tailor build --platform aarch64 first" >&2; exit 2; }
  register_binfmt || { echo "cannot register qemu-aarch64 in binfmt_misc" >&2; exit 2; }
  make_root || { echo "cannot make the emulated root in $emu/root" >&2; exit 1; }
fi
for name in ${only//,/ }; do
  src=$(source_for "$name") || { echo "unknown package $name" >&2; exit 2; }
  [ "$side" = report ] && continue
  [ -e "$src" ] || { echo "no source $src" >&2; exit 2; }
  echo "$name ($src), load $(cut -d' ' -f1-3 /proc/loadavg)"
  { [ "$side" = both ] || [ "$side" = cross ]; } && run_cross "$name" "$src"
  { [ "$side" = both ] || [ "$side" = emulated ]; } && run_emulated "$name" "$src"
done
report
