#!/usr/bin/env bash
# Real PyTorch under tailor, from a clean machine (not part of CI; see bench/RESULTS.md).
#
# Parts, each timed (wall seconds printed as "part NAME: Ns"):
#   root    a Debian trixie root (mmdebstrap, variant buildd, main contrib non-free, deb and
#           deb-src lines) with pytorch's build dependencies (apt-get build-dep pytorch) and
#           nvidia-cuda-toolkit 12.4 from non-free (CUDA 12.4 fits torch 2.6; a newer host CUDA
#           does not) plus g++-13 (nvcc 12.4's newest host compiler), OpenBLAS, CUTLASS, and
#           Ninja 1.13 from PyPI (the memory governor's jobserver needs it; trixie has 1.12).
#   source  Debian's pytorch 2.6.0+dfsg source fetched with apt's own tools and a private apt
#           state (deb-src line for trixie in a private sources file; the host's sources are
#           untouched), unpacked with its patches applied (dpkg-source -x): the upstream tree
#           without the vendored third_party/, built against system libraries.
#   tailor  the tailor under test (--tailor, default build/bin/tailor) copied into the root
#           with the libraries it links (not the C/C++ runtimes), RUNPATH=$ORIGIN/../lib.
#   build   inside the root: `tailor doctor` then `tailor build torch --source TREE` for one
#           GPU target (--arch, default 7.5) with the system-libraries variant, under the
#           memory governor, nice'd; the build log, report, CMakeCache.txt and ninja log are
#           kept in OUT.
#   configure (not by default) the build up to CMake's configure (--configure-only), for
#             the cuda part.
#   evidence  the plan's switches in CMakeCache.txt and the nvcc command lines Ninja runs.
#   cuda      (not by default) the largest ATen CUDA units built now, each measured as the
#             governor measures a job (bench/ninja_units.py); Ninja builds them last.
#   cuda-governed (not by default) the heaviest ATen CUDA units (--governed-units; their
#             objects removed first) built under tailor's own builder and memory governor
#             (`tailor __governed`): each unit's time and peak from tailor's report.
#   cpu-check (not by default) six torch_cpu units built twice under `tailor __governed`: one at
#             a time, then two at a time beside two busy loops: wall against CPU time.
#   inspect   every compiled CUDA object read by `tailor inspect` (its targets).
#   predict   the whole build's time and memory from the measured units, checked on the
#             part built (`tailor plan torch --measured ... --check`).
#
# usage: bench/torch_real.sh [--root DIR] [--out DIR]
#          [--parts root,source,tailor,build,evidence,inspect,predict]
#          [--arch 7.5] [--cpu-target x86-64-v3] [--mirror URL] [--timeout SECONDS] [--tailor PATH]
#          [--cuda-units 6] [--cuda-timeout 1800] [--governed-units "Indexing GridSampler ..."]
# Needs root privileges (mmdebstrap, chroot, mount) and Debian's mirror. Run it with nice
# on a shared machine; the build part takes hours on 2 cores.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
root=/work/scratch-torch/root
out=/work/scratch-torch/out
parts=root,source,tailor,build,evidence,inspect,predict
arch=7.5
cpu_target=x86-64-v3
mirror=http://deb.debian.org/debian
timeout_s=36000
cuda_units=6
build_extra=
cuda_timeout=1800
governed_units="Indexing GridSampler SoftMax Normalization int4mm RNN EmbeddingBag"
tailor="$here/build/bin/tailor"
while [ $# -gt 0 ]; do
  case $1 in
    --root) root=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --cpu-target) cpu_target=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --tailor) tailor=$2; shift 2 ;;
    --cuda-units) cuda_units=$2; shift 2 ;;
    --cuda-timeout) cuda_timeout=$2; shift 2 ;;
    --governed-units) governed_units=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "needs root (mmdebstrap, chroot, mount)" >&2; exit 2; }
mkdir -p "$out"
want() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
timed() { # NAME CMD...: runs CMD, prints and records its wall seconds
  local name=$1 t0 rc; shift
  t0=$(date +%s)
  "$@"; rc=$?
  echo "part $name: $(( $(date +%s) - t0 ))s (rc $rc)" | tee -a "$out/times.txt"
  return $rc
}
# in_root CMD: runs a shell command line in the root, with /proc, /dev, /sys mounted in a
# private mount namespace (gone when it ends).
in_root() {
  unshare -m --propagation private sh -c '
    r=$1; shift
    mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && mount -t sysfs sys "$r/sys" &&
    exec chroot "$r" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
      HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive sh -c "$1"' sh "$root" "$1"
}
components="main contrib non-free non-free-firmware"

part_root() {
  if [ ! -x "$root/usr/bin/apt-get" ]; then
    mmdebstrap --variant=buildd --components="$components" \
      --include=ca-certificates,git,dpkg-dev,devscripts \
      trixie "$root" "deb $mirror trixie $components" "deb-src $mirror trixie $components" ||
      return 1
  fi
  in_root 'apt-get update -q && apt-get build-dep -y -q pytorch &&
    apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit g++-13 python3-dev \
      python3-pip python3-setuptools python3-wheel python3-venv ninja-build cmake \
      libcutlass-dev libcub-dev libcupti-dev libnccl-dev libopenblas-dev patchelf \
      python3-typing-extensions python3-jinja2 python3-sympy python3-filelock \
      python3-networkx python3-fsspec' || return 1
  # Ninja 1.13 (a jobserver client: the memory governor serves it tokens); trixie has 1.12.
  # Fetched by the host's pip (its index settings), installed from the file in the root.
  mkdir -p "$root/tmp/wheels" &&
    python3 -m pip download -q 'ninja>=1.13' --only-binary=:all: --no-deps \
      --platform manylinux2014_x86_64 --python-version 3.13 -d "$root/tmp/wheels" &&
    in_root 'python3 -m pip install --break-system-packages -q /tmp/wheels/ninja-*.whl && ninja --version'
}

part_source() {
  # apt's own tools with a private state: the host's sources list is not touched.
  local st="$out/apt-src" dst="$root/src"
  mkdir -p "$st/lists/partial" "$st/cache/archives/partial" "$dst"
  echo "deb-src $mirror trixie main contrib" > "$st/sources.list"
  local opts=(-o Dir::Etc::SourceList="$st/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$st/lists" -o Dir::Cache="$st/cache"
    -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" update -q || return 1
  (cd "$dst" && apt-get "${opts[@]}" source --download-only pytorch) || return 1
  # dpkg-source -x applies the patches (debian/patches, quilt format 3.0)
  (cd "$dst" && rm -rf pytorch-2.6.0* && dpkg-source -x pytorch_*.dsc pytorch-src) || return 1
  ls "$dst/pytorch-src/debian/patches" | head -100 > "$out/patches.txt"
  echo "tree: $dst/pytorch-src ($(wc -l < "$out/patches.txt") patches applied)"
}

# The tailor under test, copied into the root with the libraries it links that are not the
# C and C++ runtimes (the root's newer ones serve), found through RUNPATH=$ORIGIN/../lib.
part_tailor() {
  [ -x "$tailor" ] || { echo "no tailor at $tailor (build it, or pass --tailor)" >&2; return 1; }
  local dst="$root/opt/tailor"
  rm -rf "$dst" && mkdir -p "$dst/bin" "$dst/lib" || return 1
  cp "$tailor" "$dst/bin/tailor" || return 1
  ldd "$tailor" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++*|libgcc_s*) ;;
      *) cp -L "$lib" "$dst/lib/" ;;
    esac
  done
  in_root 'patchelf --set-rpath "\$ORIGIN/../lib" /opt/tailor/bin/tailor && /opt/tailor/bin/tailor --version'
}

# The build's flags: one GPU target, a CPU target (AVX2 by default),  CUDA 12.4 (the root's), the root's Python as is, the
# system-libraries variant (as Debian builds it), cuDNN off (trixie's nvidia-cudnn downloads
# it from NVIDIA at install time), distributed and NCCL off (Debian's CUDA build needs gloo's
# CUDA flavour for them), no compiler cache (every unit really compiled).
build_flags() {
  echo "--source /src/pytorch-src --arch $arch --cpu-target $cpu_target --cuda 12.4" \
    "--python /usr/bin/python3" \
    "--without cudnn --without distributed --without nccl --system-libs"
}

part_build() {
  # Debian's own preparation of the tree (debian/rules, override_dh_auto_configure):
  # googletest from the system, the flatbuffers header regenerated.
  in_root 'set -e; cd /src/pytorch-src
    [ -e third_party/googletest ] || cp -r /usr/src/googletest third_party/
    # once: a file written again would be a changed source to the next (resumed) build
    cd torch/csrc/jit/serialization
    [ mobile_bytecode_generated.h -nt mobile_bytecode.fbs ] ||
      flatc --cpp --gen-mutable --scoped-enums mobile_bytecode.fbs' ||
    return 1
  in_root "/opt/tailor/bin/tailor plan torch $(build_flags)" > "$out/plan.txt" 2>&1
  in_root "/opt/tailor/bin/tailor doctor torch $(build_flags)" > "$out/doctor.txt" 2>&1
  echo "doctor: $(tail -1 "$out/doctor.txt")"
  # The build, nice'd, bounded by --timeout (SIGINT then: tailor stops the tree and keeps
  # the run's report in the work folder, last-run.report.json).
  # SOURCE_DATE_EPOCH from debian/changelog, as dpkg-buildpackage sets it: the same on every
  # run, so a second run (--parts build again) resumes the first one's tree.
  in_root "mkdir -p /build && cd /src/pytorch-src &&
    export SOURCE_DATE_EPOCH=\$(dpkg-parsechangelog -STimestamp) && cd / &&
    exec timeout -s INT -k 120 $timeout_s nice -n 10 \
    /opt/tailor/bin/tailor build torch $(build_flags) --no-venv --cache none \
      --work-dir /build/work --out /build/out $build_extra" > "$out/build.out" 2>&1
  local rc=$?
  echo "build: exit $rc; $(tail -1 "$out/build.out")"
  cp "$root/build/work/last-run.report.json" "$out/" 2>/dev/null
  return 0
}

# The build tree: at the fixed work path while a build runs (the folder route moves the
# source there), in the source folder after it.
tree() {
  if [ -d "$root/tmp/.tailor-build/torch/build" ]; then echo "$root/tmp/.tailor-build/torch"
  else echo "$root/src/pytorch-src"; fi
}

# What reached CMake and nvcc: the plan's switches in CMakeCache.txt, the command Ninja
# runs for ATen CUDA kernels (ninja -t commands), and nvcc processes running now.
part_evidence() {
  local t; t=$(tree)
  grep -E '^(TORCH_CUDA_ARCH_LIST|CMAKE_CUDA_ARCHITECTURES|CMAKE_CUDA_COMPILER|CMAKE_CUDA_HOST_COMPILER|CMAKE_CUDA_FLAGS|CMAKE_CXX_FLAGS|CMAKE_C_FLAGS|USE_SYSTEM_[A-Z_]*|BUILD_CUSTOM_PROTOBUF|ONNX_NAMESPACE|USE_(CUDA|CUDNN|NCCL|DISTRIBUTED|FBGEMM|ITT|NNPACK|MKLDNN|FLASH_ATTENTION|MEM_EFF_ATTENTION)|BLAS)(:[A-Z]+)?=' \
    "$t/build/CMakeCache.txt" > "$out/cmakecache.txt"
  local kernels
  kernels=$(grep -o '^build caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda/[A-Za-z]*\.cu\.o' \
    "$t/build/build.ninja" | sed 's/^build //' | head -3)
  for k in $kernels; do
    in_root "cd ${t#"$root"}/build && ninja -t commands $k | tail -1"
  done > "$out/nvcc_commands.txt"
  ps -eo args | grep -E '^[^ ]*nvcc ' | grep -v grep | head -4 > "$out/nvcc_running.txt"
  echo "CMakeCache: $(wc -l < "$out/cmakecache.txt") lines; nvcc commands: $(grep -c gencode "$out/nvcc_commands.txt") with -gencode"
}

# Every CUDA object compiled so far, read by `tailor inspect`: its device code's targets.
part_inspect() {
  local t; t=$(tree)
  (cd "$t/build" && find . -name '*.cu.o' | sort) > "$out/cuda_objects.txt"
  local n; n=$(wc -l < "$out/cuda_objects.txt")
  [ "$n" -gt 0 ] || { echo "inspect: no CUDA object yet"; return 0; }
  (cd "$t/build" && xargs -a "$out/cuda_objects.txt" "$tailor" inspect --json) > "$out/inspect.json"
  python3 - "$out/inspect.json" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
libs = d["libraries"]
sets = collections.Counter(tuple(l["targets"]) for l in libs)
print(f"inspect: {len(libs)} CUDA objects; targets: " +
      ", ".join(f"{' '.join(k) or '(no device code)'} x{v}" for k, v in sets.items()))
PY
}

# A few real CUDA units of the configured tree built now, each measured as the governor
# measures a job (bench/ninja_units.py): Ninja's critical-path order builds every torch_cpu
# unit before any torch_cuda one, which a short session on few cores never reaches. The
# largest ATen CUDA sources by size, --cuda-units of them. Run while no build runs: the tree
# goes to the fixed work path its build.ninja names, and back.
part_cuda() {
  local fixed=$root/tmp/.tailor-build/torch
  [ ! -e "$fixed/build" ] || { echo "cuda: a build is running (the tree is at $fixed)"; return 1; }
  mkdir -p "$root/opt/tailor/bench" && cp "$here/bench/ninja_units.py" "$root/opt/tailor/bench/"
  local units
  units=$(cd "$root/src/pytorch-src" && grep -o '^build caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda/[A-Za-z0-9_]*\.cu\.o' build/build.ninja |
    sed 's/^build //' | while read -r o; do
      src=${o#caffe2/CMakeFiles/torch_cuda.dir/__/}; src=${src%.o}
      [ -e "build/$o" ] || echo "$(stat -c %s "$src") $o"
    done | sort -rn | head -"$cuda_units" | awk '{print $2}' | tr '\n' ' ')
  echo "cuda units: $units"
  rmdir "$fixed" 2>/dev/null; mkdir -p "$(dirname "$fixed")" && mv "$root/src/pytorch-src" "$fixed" || return 1
  in_root "cd /tmp/.tailor-build/torch/build && timeout -s INT $cuda_timeout nice -n 10 \
    python3 /opt/tailor/bench/ninja_units.py -- ninja -j2 $units" > "$out/cuda_units.json" 2> "$out/cuda_units.err"
  mv "$fixed" "$root/src/pytorch-src"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); u=d["units"]; print("cuda: %d units in %s s: %s" % (len(u), d["wall_s"], ", ".join("%s %.0f s %d MiB" % (k.rsplit("/",1)[1], v["seconds"], v["peak_mib"]) for k,v in u.items())))' "$out/cuda_units.json"
}

# The heaviest ATen CUDA units under tailor's builder and memory governor (`tailor __governed`:
# the jobserver, each unit's peak, the report's timeline), at nice 10 with 2 jobs. Their
# objects are removed first so Ninja builds them now. Run while no build runs: the tree is
# built where its build.ninja says (the fixed work path), moved there and back if need be.
part_cuda_governed() {
  local fixed=$root/tmp/.tailor-build/torch moved= targets= u
  local dir=caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda
  if [ ! -e "$fixed/build" ]; then
    rmdir "$fixed" 2>/dev/null; mkdir -p "$(dirname "$fixed")" &&
      mv "$root/src/pytorch-src" "$fixed" && moved=1 || return 1
  fi
  for u in $governed_units; do
    rm -f "$fixed/build/$dir/$u.cu.o"; targets="$targets $dir/$u.cu.o"
  done
  in_root "cd / && timeout -s INT -k 120 $cuda_timeout nice -n 10 /opt/tailor/bin/tailor __governed \
    --build-dir /tmp/.tailor-build/torch/build --work-dir /build/governed --max-jobs 2 \
    --timeout $cuda_timeout --report /build/governed/cuda.report.json $targets" \
    > "$out/cuda_governed.out" 2>&1
  local rc=$?
  [ -z "$moved" ] || mv "$fixed" "$root/src/pytorch-src"
  cp "$root/build/governed/cuda.report.json" "$out/cuda_governed.report.json" 2>/dev/null
  grep '^unit ' "$out/cuda_governed.out"
  return $rc
}

# Six torch_cpu units of the configured tree under tailor's governor twice, alone (-j1) and
# beside two busy loops (-j2, the loops at the same nice): each unit's wall time follows the
# machine's load, its CPU time (the governor's unit_cpu_ms) much less. Run while no build runs.
part_cpu_check() {
  local fixed=$root/tmp/.tailor-build/torch moved= targets= u name jobs loops=
  local dir=caffe2/CMakeFiles/torch_cpu.dir/__/aten/src/ATen
  local units="CachedTensorUtils ConjugateFallback DLConvertor FunctionalInverses FunctionalTensorWrapper FunctionalizeFallbackKernel"
  if [ ! -e "$fixed/build" ]; then
    rmdir "$fixed" 2>/dev/null; mkdir -p "$(dirname "$fixed")" &&
      mv "$root/src/pytorch-src" "$fixed" && moved=1 || return 1
  fi
  for u in $units; do targets="$targets $dir/$u.cpp.o"; done
  for name in alone busy; do
    jobs=1
    if [ $name = busy ]; then
      jobs=2
      nice -n 10 sh -c 'while :; do :; done' & loops="$!"
      nice -n 10 sh -c 'while :; do :; done' & loops="$loops $!"
    fi
    for u in $units; do rm -f "$fixed/build/$dir/$u.cpp.o"; done
    in_root "cd / && nice -n 10 /opt/tailor/bin/tailor __governed \
      --build-dir /tmp/.tailor-build/torch/build --work-dir /build/cpu-$name --max-jobs $jobs \
      --timeout 1200 $targets" > "$out/cpu_$name.out" 2>&1
    [ -z "$loops" ] || kill $loops
    cp "$root/build/cpu-$name/governed.report.json" "$out/cpu_$name.report.json"
  done
  [ -z "$moved" ] || mv "$fixed" "$root/src/pytorch-src"
  python3 - "$out" <<'PY'
import json, sys
for name in ("alone", "busy"):
    run = json.load(open(f"{sys.argv[1]}/cpu_{name}.report.json"))["run"]
    cpu = run["memory"].get("unit_cpu_ms", {})
    wall = sum(j["end_ms"] - j["start_ms"] for j in run["job_timeline"]) / 1000
    print(f"cpu-check {name}: wall {wall:.1f} s, CPU {sum(cpu.values()) / 1000:.1f} s")
PY
}

# The whole build predicted from the measured units by `tailor plan torch --measured`, checked
# on the part built (--check: every other unit from the rest; the second half from the
# first): the build's report (or the tree's .ninja_log when the run left none) and the
# governed CUDA units' reports, for this machine and two larger ones.
part_predict() {
  local t rep=$out/last-run.report.json measured=() r; t=$(tree)
  [ -s "$rep" ] && measured+=(--measured "$rep")
  for r in "$out"/cuda_governed*.report.json; do [ -s "$r" ] && measured+=(--measured "$r"); done
  [ ${#measured[@]} -gt 0 ] || { echo "predict: no report (the build has not stopped yet)"; return 0; }
  "$tailor" plan torch "${measured[@]}" --build-ninja "$t/build/build.ninja" --check \
    --cores "$(nproc)" --memory "$(awk '/^MemTotal/ {print $2 / 1048576}' /proc/meminfo)" |
    tee "$out/predict.txt"
  for m in "16 128" "64 256"; do
    set -- $m
    "$tailor" plan torch "${measured[@]}" --build-ninja "$t/build/build.ninja" --cores "$1" \
      --memory "$2" | head -1 | tee -a "$out/predict.txt"
  done
}

want root && { timed root part_root || exit 1; }
want source && { timed source part_source || exit 1; }
want tailor && { timed tailor part_tailor || exit 1; }
want configure && { build_extra=--configure-only timed configure part_build || exit 1; }
want build && { build_extra= timed build part_build || exit 1; }
want evidence && { timed evidence part_evidence || exit 1; }
want cuda && { timed cuda part_cuda || exit 1; }
want cuda-governed && { timed cuda-governed part_cuda_governed || exit 1; }
want cpu-check && { timed cpu-check part_cpu_check || exit 1; }
want inspect && { timed inspect part_inspect || exit 1; }
want predict && { timed predict part_predict || exit 1; }
exit 0
