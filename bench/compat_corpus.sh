#!/usr/bin/env bash
# Old research CUDA extensions on today's stack (issue 53): real packages written against
# torch 1.x, CUDA 10/11 and GCC 7-9 that use APIs today's torch, CCCL or libstdc++ removed
# (THC, x.type() in AT_DISPATCH_*, AT_CHECK, ...), built by tailor with its compatibility
# layer and with --keep-package-source (the source as it is), and on a GPU machine each
# package's kernels run against a CPU kernel or a plain-torch reference
# (bench/compat_tests/NAME.py).
#
#   bash bench/compat_corpus.sh fetch SRC            git clone --recursive each at its commit
#                                                    (needs the network)
#   bash bench/compat_corpus.sh build SRC OUT [ARCH] both builds of each package, one row each
#                                                    in OUT/results.tsv, wheels in OUT/NAME/
#   bash bench/compat_corpus.sh gpu OUT [PYTHON]     each bridged wheel installed into a folder
#                                                    of its own, its kernel test run on the GPU
#   bash bench/compat_corpus.sh pipwheel SRC OUT [ARCH] [PYTHON]
#                                                    the packages' own `pip wheel
#                                                    --no-build-isolation --no-deps` (no tailor)
#                                                    on a copy of each, for ARCH
#                                                    (TORCH_CUDA_ARCH_LIST): one row each in
#                                                    OUT/pipwheel.tsv with the first error line
#   bash bench/compat_corpus.sh carry DEST SRC...    what the builds need of every package
#                                                    (its setup.py's folder, found in the first
#                                                    SRC that has it) copied to DEST: no .git,
#                                                    docs, demos, examples, tests, data, media or
#                                                    configs (mmdet3d copies them into its wheel);
#                                                    links copied as the files they name
#
# SRC holds one folder per package (NAME/, as `fetch` makes it). TAILOR is the binary
# (default build/bin/tailor); ONLY=name,name builds those alone; BRIDGED_ONLY=1 skips the
# --keep-package-source builds. A package whose bridged build
# changed nothing in its source is not built again with --keep-package-source (the same
# source: its row says so). The GPU machine has no network: build there from a SRC
# carried along, or carry OUT's wheels (built here for its GPU's ARCH, e.g. 9.0).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor=${TAILOR:-$here/build/bin/tailor}

# name | git URL | commit | folder of the setup.py in the repository | kernel test
packages() {
  cat <<'LIST'
dcnv2|https://github.com/CharlesShang/DCNv2|c7f778f28b84c66d3af2bf16f19148a07051dac1|.|dcnv2
pointnet2-sshaoshuai|https://github.com/sshaoshuai/Pointnet2.PyTorch|fce17c2a2df2abf586c4471ad9e0d54f090c8fea|pointnet2|pointnet2_sshaoshuai
chamfer3d|https://github.com/ThibaultGROUEIX/ChamferDistancePytorch|364c03c4ec5febc1e21068ffac362eca4a8f61d9|chamfer3D|chamfer3d
flownet2-correlation|https://github.com/NVIDIA/flownet2-pytorch|bce69c881ad2b11bef1e6ce9fd0dfd45bd8a1756|networks/correlation_package|flownet2_correlation
flownet2-channelnorm|https://github.com/NVIDIA/flownet2-pytorch|bce69c881ad2b11bef1e6ce9fd0dfd45bd8a1756|networks/channelnorm_package|flownet2_channelnorm
flownet2-resample2d|https://github.com/NVIDIA/flownet2-pytorch|bce69c881ad2b11bef1e6ce9fd0dfd45bd8a1756|networks/resample2d_package|flownet2_resample2d
pointnet2-ops|https://github.com/erikwijmans/Pointnet2_PyTorch|b5ceb6d9ca0467ea34beb81023f96ee82228f626|pointnet2_ops_lib|pointnet2_ops_kernels
pytorchemd|https://github.com/daerduoCarey/PyTorchEMD|e5c0feb8c15741a858362f9c397d9ed4b8b1752b|.|pytorchemd
pointrcnn-iou3d|https://github.com/sshaoshuai/PointRCNN|1d0dee91262b970f460135252049112d80259ca0|lib/utils/iou3d|pointrcnn_iou3d
deformable-detr-msda|https://github.com/fundamentalvision/Deformable-DETR|11169a60c33333af00a4849f1808023eba96a931|models/ops|deformable_detr_msda
msn-emd|https://github.com/Colin97/MSN-Point-Cloud-Completion|dc6450f1e942c1617bf91084df86e8e5a29f5441|emd|msn_emd
roi-align|https://github.com/longcw/RoIAlign.pytorch|8df4f3738fc91a8b3f4c2ac790510b1553b55e0f|.|roi_align_kernels
neural-renderer|https://github.com/daniilidis-group/neural_renderer|b2a1e6ce16a54f94f26f86fe1dc3814637e15251|.|neural_renderer_rasterize
softras|https://github.com/ShichenLiu/SoftRas|b569bed5759cf2014f9b79c12ad10eef7b80ec34|.|softras
pointrcnn-roipool3d|https://github.com/sshaoshuai/PointRCNN|1d0dee91262b970f460135252049112d80259ca0|lib/utils/roipool3d|pointrcnn_roipool3d
msn-mds|https://github.com/Colin97/MSN-Point-Cloud-Completion|dc6450f1e942c1617bf91084df86e8e5a29f5441|MDS|msn_mds
msn-expansion-penalty|https://github.com/Colin97/MSN-Point-Cloud-Completion|dc6450f1e942c1617bf91084df86e8e5a29f5441|expansion_penalty|msn_expansion_penalty
maskrcnn-benchmark|https://github.com/facebookresearch/maskrcnn-benchmark|57eec25b75144d9fb1a6857f32553e1574177daf|.|maskrcnn_benchmark_ops
warp-rnnt|https://github.com/1ytic/warp-rnnt|66dfe053f236d86320c09cd5d1238828cc78b8fa|pytorch_binding|warp_rnnt_loss
mmdet3d|https://github.com/open-mmlab/mmdetection3d|940e429438b535a09466dc330849f33b230d183b|.|mmdet3d_spconv
LIST
}

repo_dir() { basename "$1"; }

cmd_fetch() {
  local srcroot=$1
  mkdir -p "$srcroot"
  packages | while IFS='|' read -r name url commit sub test; do
    local dir="$srcroot/$(repo_dir "$url")"
    [ -d "$dir" ] && continue
    git clone --recursive -q "$url" "$dir" && git -C "$dir" checkout -q "$commit" &&
      git -C "$dir" submodule update --init --recursive -q || echo "fetch $name: failed" >&2
  done
}

# One build of one package: "name mode exit seconds changes diagnosis" on stdout.
build_one() {
  local name=$1 dir=$2 out=$3 arch=$4 mode=$5
  local flags=()
  [ "$mode" = keep ] && flags=(--keep-package-source)
  mkdir -p "$out/$name-$mode"
  local t0=$(date +%s)
  "$tailor" build "$dir" --arch "$arch" "${flags[@]}" --out "$out/$name-$mode/dist" \
    --work-dir "$out/work/$name-$mode" --progress plain --cache none --json \
    >"$out/$name-$mode/build.json" 2>"$out/$name-$mode/stderr"
  local rc=$? t1=$(date +%s)
  python3 - "$out/$name-$mode/build.json" "$name" "$mode" "$rc" "$((t1 - t0))" <<'PY'
import json, re, sys
path, name, mode, rc, secs = sys.argv[1:]
changes, diag, targets, imp, kinds = 0, "-", "-", "-", "-"
try:
    j = json.load(open(path))  # the build's report, as --json prints it
    listed = list((j.get("run") or {}).get("compat_changes") or [])
    # The build driver's changes (a -std raised) are package choices naming their removal.
    for c in (j.get("run") or {}).get("package_choices") or []:
        m = re.search(r"; ([a-z0-9-]+), removed in ", c)
        if m:
            listed.append({"removal": m.group(1)})
    changes = len(listed)
    counts = {}
    for c in listed:
        counts[c["removal"]] = counts.get(c["removal"], 0) + 1
    kinds = ",".join("%s x%d" % kv for kv in sorted(counts.items())) or "-"
    checks = {c["name"]: c for c in j.get("checks") or []}
    targets = (checks.get("targets") or {}).get("detail", "-")
    imp = (checks.get("import") or {}).get("status", "-")
    if j.get("diagnoses"):
        diag = j["diagnoses"][0]["pattern"]
except Exception as e:  # a crash leaves no JSON: the row says so
    diag = "no-json:" + type(e).__name__
print("\t".join([name, mode, rc, secs, str(changes), diag, targets, imp, kinds]))
PY
}

cmd_build() {
  local srcroot=$1 out=$2 arch=${3:-7.5}
  mkdir -p "$out"
  printf 'name\tmode\texit\tseconds\tcompat_changes\tfirst_diagnosis\ttargets\timport\tchanges\n' >"$out/results.tsv"
  packages | while IFS='|' read -r name url commit sub test; do
    [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]] && continue
    local dir="$srcroot/$(repo_dir "$url")/$sub"
    [ -f "$dir/setup.py" ] || { printf '%s\tmissing\t-\t-\t-\tno %s\n' "$name" "$dir" >>"$out/results.tsv"; continue; }
    local row
    row=$(build_one "$name" "$(cd "$dir" && pwd)" "$out" "$arch" bridged)
    echo "$row" | tee -a "$out/results.tsv"
    if [ "${BRIDGED_ONLY:-0}" = 1 ]; then
      continue
    elif [ "$(echo "$row" | cut -f5)" = 0 ]; then
      printf '%s\tkeep\t(same source: nothing bridged)\t-\t0\t-\n' "$name" | tee -a "$out/results.tsv"
    else
      build_one "$name" "$(cd "$dir" && pwd)" "$out" "$arch" keep | tee -a "$out/results.tsv"
    fi
  done
  column -t -s $'\t' "$out/results.tsv"
}

cmd_gpu() {
  local out=$1 python=${2:-python3}
  printf 'name\tresult\n' >"$out/gpu.tsv"
  packages | while IFS='|' read -r name url commit sub test; do
    local wheel note=""
    wheel=$(ls "$out/$name-bridged/dist/"*.whl 2>/dev/null | head -1)
    # A wheel that built but was not published (mmdet3d: its import needs mmcv, which it
    # does not declare): its kernels are still tested, and the row says so.
    if [ -z "$wheel" ]; then
      wheel=$(ls "$out/work/$name-bridged/"*/wheelhouse/*.whl 2>/dev/null | head -1)
      # why: the build's report says the import check failed, or there is no report (cut)
      if grep -q '"name": *"import"' "$out/$name-bridged/build.json" 2>/dev/null; then
        note=" (wheel not published: tailor's import check failed)"
      else
        note=" (wheel not published: the build did not finish)"
      fi
    fi
    if [ -z "$wheel" ]; then printf '%s\tno wheel\n' "$name" | tee -a "$out/gpu.tsv"; continue; fi
    local site="$out/$name-bridged/site"
    rm -rf "$site" && "$python" -m pip install -q --no-deps --target "$site" "$wheel" >/dev/null 2>&1 ||
      { printf '%s\tinstall failed\n' "$name" | tee -a "$out/gpu.tsv"; continue; }
    local res
    res=$(cd "$site" && PYTHONPATH="$site" timeout 300 "$python" "$here/bench/compat_tests/$test.py" 2>&1 | tail -1)
    printf '%s\t%s%s\n' "$name" "$res" "$note" | tee -a "$out/gpu.tsv"
  done
}

# The first line of a log that says what failed: a compiler's error or a Python exception,
# not pip's and setuptools' wrappers around them.
first_error() {
  grep -E '(: (fatal )?error|\([0-9]+\): error|^ *[A-Za-z.]*(Error|Exception): )' "$1" |
    grep -v -E 'subprocess-exited-with-error|CalledProcessError|Error compiling objects' |
    head -1 | sed 's/^ *//' | cut -c1-200
}

# The package's own build as its README says, with the machine's torch: pip wheel on a copy
# (pip builds in the source folder), no tailor, no bridge. PIP_ONLY=name,name (default: the
# packages that use a removed API) picks them.
cmd_pipwheel() {
  local srcroot=$1 out=$2 arch=${3:-7.5} python=${4:-python3}
  local only=${PIP_ONLY:-dcnv2,flownet2-correlation,pytorchemd,pointrcnn-iou3d,deformable-detr-msda,maskrcnn-benchmark,mmdet3d}
  mkdir -p "$out"
  printf 'name\texit\tseconds\tfirst_error\n' >"$out/pipwheel.tsv"
  packages | while IFS='|' read -r name url commit sub test; do
    [[ ",$only," != *",$name,"* ]] && continue
    local dir="$srcroot/$(repo_dir "$url")/$sub" copy="$out/pip-$name/src" log="$out/pip-$name/log"
    rm -rf "$out/pip-$name" && mkdir -p "$copy" && cp -r "$dir/." "$copy/"
    local t0=$(date +%s)
    # FORCE_CUDA=1: as on a machine with a GPU, for a setup.py that asks torch.cuda (mmdet3d)
    (cd "$copy" && TORCH_CUDA_ARCH_LIST="$arch" FORCE_CUDA=1 MAX_JOBS=${MAX_JOBS:-2} timeout 3600 "$python" -m pip wheel \
      --no-build-isolation --no-deps . -w "$out/pip-$name/dist") >"$log" 2>&1
    local rc=$? t1=$(date +%s) first
    first=$(first_error "$log")
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((t1 - t0))" "${first:--}" | tee -a "$out/pipwheel.tsv"
  done
}

# A trimmed copy of every package's build folder (REPO/SUBDIR under DEST) for a machine
# without the network. A folder at the repository's root keeps its package code and drops
# what no build reads.
cmd_carry() {
  local dest=$1
  shift
  mkdir -p "$dest"
  packages | while IFS='|' read -r name url commit sub test; do
    local repo=$(repo_dir "$url") root="" r
    for r in "$@"; do [ -f "$r/$repo/$sub/setup.py" ] && { root=$r; break; }; done
    [ -n "$root" ] || { echo "carry $name: no $repo/$sub/setup.py in $*" >&2; continue; }
    mkdir -p "$dest/$repo/$sub"
    tar -C "$root/$repo/$sub" -chf - --exclude=.git --exclude=./docs --exclude=./demo \
      --exclude=./examples --exclude=./tests --exclude=./data --exclude=./datasets \
      --exclude=./images --exclude=./imgs --exclude=./assets --exclude=./resources \
      --exclude=./configs --exclude=./docs_zh-CN --exclude=./.dev_scripts --exclude=./.github \
      --exclude='*.png' --exclude='*.jpg' \
      --exclude='*.gif' --exclude='*.obj' --exclude='*.pth' --exclude='*.mp4' --exclude='*.pdf' \
      --exclude=./build --exclude='*.egg-info' . | tar -C "$dest/$repo/$sub" -xf -
  done
  du -sh "$dest"
}

case "${1:-}" in
  fetch) shift; cmd_fetch "$@" ;;
  carry) shift; cmd_carry "$@" ;;
  pipwheel) shift; cmd_pipwheel "$@" ;;
  build) shift; cmd_build "$@" ;;
  gpu) shift; cmd_gpu "$@" ;;
  *) sed -n '2,30p' "$0"; exit 2 ;;
esac
