#!/usr/bin/env bash
# `tailor matrix --emit nix|flox` checked by a real Nix (Debian's nix-bin): every emitted file
# parses (nix-instantiate --parse), and every variant, evaluated against a stub nixpkgs
# (tests/e2e/data/nix_stub, which records what it is passed), overrides torch with exactly
# what `tailor matrix plan --json` plans for it: CUDA on/off, gpuTargets and the package set's
# cudaCapabilities (PTX included), the plan's cudaPackages_X_Y (torch's, magma's and, in the
# flake, the package set's), CPU flags, USE_* switches, BLAS; extension packages get the
# variant's torch (in the flake, as the one torch of the variant's package set); the Flox
# manifest allows unfree packages for CUDA; --emit prints the next command. Also: a torch version nixpkgs lacks is an evaluation error naming both, an
# error in tailor.toml is one line naming the key, exit 2 and no file written.
set -euo pipefail
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
if ! command -v nix-instantiate > /dev/null; then
  echo "SKIP: nix-instantiate is missing (scripts/setup.sh installs nix-bin)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
stub="$TAILOR_SOURCE_DIR/tests/e2e/data/nix_stub"
# No daemon and no store writes: evaluation only, with Nix's state under the temporary folder
# (works as root and as another user).
export NIX_STATE_DIR="$tmp/nix/state" NIX_LOG_DIR="$tmp/nix/log" NIX_CONF_DIR="$tmp/nix/conf" NIX_STORE_DIR="$tmp/nix/store"
export NIX_REMOTE=
mkdir -p "$NIX_CONF_DIR"
nixi() { nix-instantiate --readonly-mode "$@"; }

cat > "$tmp/ptx.toml" << 'TOML'
[defaults]
torch = "2.9.1"
cuda = "12.8"
python = "3.12"
platform = "x86_64"
blas = "mkl"

[variant.pytorch-sm86-sm90ptx]
arch = ["8.6", "9.0+PTX"]
cpu_target = "avx2"
TOML

check_config() {  # CONFIG LABEL
  local cfg=$1 label=$2 out="$tmp/$2"
  "$TAILOR" matrix --config "$cfg" plan --json > "$tmp/$label.plan.json" || [ -s "$tmp/$label.plan.json" ] ||
    fail "$label: matrix plan --json"
  "$TAILOR" matrix --config "$cfg" --emit nix --emit-dir "$out/nix" > "$tmp/$label.nix.list" || fail "$label: --emit nix"
  "$TAILOR" matrix --config "$cfg" --emit flox --emit-dir "$out/flox" > "$tmp/$label.flox.list" || fail "$label: --emit flox"
  [ -f "$out/nix/flake.nix" ] && [ -f "$out/nix/default.nix" ] || fail "$label: flake.nix/default.nix missing"
  [ -f "$out/flox/.flox/env/manifest.toml" ] || fail "$label: .flox/env/manifest.toml missing"
  python3 -c 'import sys,tomllib; tomllib.load(open(sys.argv[1],"rb"))' "$out/flox/.flox/env/manifest.toml" ||
    fail "$label: manifest.toml is not TOML"
  # CUDA is unfree in nixpkgs: a manifest with a CUDA variant allows it, a CPU-only one need not.
  python3 - "$out/flox/.flox/env/manifest.toml" "$tmp/$label.plan.json" << 'PY' || fail "$label: manifest's unfree permission"
import json, sys, tomllib
manifest, plans = tomllib.load(open(sys.argv[1], "rb")), json.load(open(sys.argv[2]))
cuda = any(p["cuda"] is not None for p in plans["variants"])
assert manifest["options"].get("allow", {}).get("unfree", False) == cuda, (manifest["options"], cuda)
PY
  # nixpkgs is pinned to the revision data/nix/nixpkgs.toml says carries the planned torch:
  # the flake's input, its flake.lock and default.nix name that one revision.
  python3 - "$TAILOR_SOURCE_DIR/data/nix/nixpkgs.toml" "$tmp/$label.plan.json" "$out/nix" << 'PY' || fail "$label: nixpkgs pin"
import json, re, sys, tomllib
facts, plans, out = tomllib.load(open(sys.argv[1], "rb")), json.load(open(sys.argv[2])), sys.argv[3]
torch = plans["variants"][0]["torch"]
rev = next(r["rev"] for r in facts["revision"] if r["torch"] == torch)
flake = open(out + "/flake.nix").read()
url = re.search(r'inputs\.nixpkgs\.url = "([^"]*)";', flake).group(1)
assert url == "github:NixOS/nixpkgs/" + rev, url
lock = json.load(open(out + "/flake.lock"))
node = lock["nodes"][lock["nodes"][lock["root"]]["inputs"]["nixpkgs"]]
assert node["locked"] == {"type": "github", "owner": "NixOS", "repo": "nixpkgs", "rev": rev}, node
assert node["original"] == node["locked"], node
assert lock["version"] == 7, lock["version"]
assert "archive/%s.tar.gz" % rev in open(out + "/default.nix").read()
print("pinned: nixpkgs", rev[:12], "for torch", torch)
PY
  # --emit says what to run next.
  "$TAILOR" matrix --config "$cfg" --emit nix --emit-dir "$out/nix" 2>&1 >/dev/null | grep -q "^next: nix build $out/nix#" ||
    fail "$label: --emit nix prints no next command"
  "$TAILOR" matrix --config "$cfg" --emit flox --emit-dir "$out/flox" 2>&1 >/dev/null | grep -q "^next: cd $out/flox && flox build python" ||
    fail "$label: --emit flox prints no next command"
  local n=0 f
  while IFS= read -r -d '' f; do
    nixi --parse "$f" > /dev/null || fail "$label: $f does not parse"
    n=$((n + 1))
  done < <(find "$out" -name '*.nix' -print0)
  echo "$label: $n emitted .nix files parse"
  local v
  for v in $(python3 -c 'import json,sys; [print(r["variant"]) for r in json.load(open(sys.argv[1]))["variants"]]' "$tmp/$label.plan.json"); do
    local py="python$(python3 -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["variants"] if r["variant"]==sys.argv[2]][0]; print(r["python"].replace(".","")[:1]+r["python"].split(".")[1])' "$tmp/$label.plan.json" "$v")Packages"
    STUB_TORCH_VERSION=2.9.1 nixi --eval --strict --json -E "
      let o = (import $out/nix/flake.nix).outputs { self = { }; nixpkgs = $stub; };
      in builtins.mapAttrs (n: v: builtins.removeAttrs v [ \"override\" ]) o.packages.\"x86_64-linux\"" > "$tmp/$label.flake.json" ||
      fail "$label: flake eval"
    STUB_TORCH_VERSION=2.9.1 nixi --eval --strict --json -E "
      let pkgs = import $stub { };
      in { torch = pkgs.callPackage $out/flox/.flox/pkgs/$py/$v.nix { };
           scatter = pkgs.callPackage $out/flox/.flox/pkgs/$py/$v-torch-scatter.nix { }; }" > "$tmp/$label.$v.flox.json" ||
      fail "$label: flox eval of $py.$v"
    python3 - "$tmp/$label.plan.json" "$tmp/$label.flake.json" "$tmp/$label.$v.flox.json" "$v" << 'PY' || fail "$label: $v differs from its plan"
import json, sys
plans, flake, flox, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), sys.argv[4]
plan = [p for p in plans["variants"] if p["variant"] == name][0]
env, feat = plan["env"], plan["features"]
host_only = {"CUDA_HOME", "CUDACXX", "CMAKE_CUDA_COMPILER", "CUDAHOSTCXX", "MAX_JOBS", "PYTORCH_BUILD_VERSION",
             "PYTORCH_BUILD_NUMBER", "TORCH_CUDA_ARCH_LIST"}
def check(rec, where, with_config):
    a, attrs = rec["overrideArgs"], rec["attrs"]
    cuda = plan["cuda"] is not None
    assert a["cudaSupport"] == cuda, (where, "cudaSupport", a)
    if cuda:
        targets = env["TORCH_CUDA_ARCH_LIST"].split(";")
        assert a["gpuTargets"] == targets, (where, a["gpuTargets"], targets)
        cuda_set = "cudaPackages_" + plan["cuda"].replace(".", "_")
        assert a["cudaPackages"] == cuda_set, (where, a.get("cudaPackages"), plan["cuda"])
        assert a["effectiveMagma"] == {"magmaCudaPackages": cuda_set}, (where, a.get("effectiveMagma"))
        if with_config:  # the flake's package set: every package takes the plan's CUDA
            assert rec["nixpkgsCuda"] == cuda_set, (where, rec["nixpkgsCuda"], cuda_set)
        if with_config:
            c = rec["nixpkgsConfig"]
            assert c["cudaCapabilities"] == [t.replace("+PTX", "") for t in targets], (where, c)
            assert c["cudaForwardCompat"] == any(t.endswith("+PTX") for t in targets), (where, c)
    else:
        assert "gpuTargets" not in a and "cudaPackages" not in a and "effectiveMagma" not in a, (where, a)
        assert rec["nixpkgsCuda"] is None, (where, rec["nixpkgsCuda"])
    assert a["mklDnnSupport"] == feat["mkldnn"] and a["useSystemNccl"] == feat["nccl"], (where, a, feat)
    assert a["blas"] == {"OpenBLAS": "openblas", "MKL": "mkl"}[plan["blas"]], (where, a["blas"], plan["blas"])
    assert attrs["passthru"]["tailorCpuFlags"] == plan["cpu_flags"], (where, attrs["passthru"], plan["cpu_flags"])
    for flag in plan["cpu_flags"]:
        assert flag in attrs["CFLAGS"].split() and flag in attrs["CXXFLAGS"].split(), (where, flag)
    want = {k: v for k, v in env.items() if k not in host_only}
    got = {k: v for k, v in attrs.items() if k != "passthru"}
    assert got == want, (where, set(got.items()) ^ set(want.items()))
    assert rec["version"] == plan["torch"], (where, rec["version"])
check(flake[name], "flake", True)
check(flox["torch"], "flox", False)
assert flox["scatter"]["extension"] == "torch-scatter" and flox["scatter"]["torch"] == flox["torch"], "extension torch"
assert flake[name + "-torchvision"]["torch"] == flake[name], "flake extension torch"
# One torch in the variant's package set: every extension of the flake is built against it.
exts = [k for k in flake if k.startswith(name + "-")]
assert exts and all(flake[k]["torch"] == flake[name] for k in exts), [k for k in exts if flake[k]["torch"] != flake[name]]
assert all(flake[k]["torchFrom"] == "the package set" for k in exts), [(k, flake[k]["torchFrom"]) for k in exts]
print(f"{name}: flake and flox match the plan (cuda={plan['cuda']}, cpu={plan['cpu_flags']}, blas={plan['blas']})")
PY
  done
}

check_config "$TAILOR_SOURCE_DIR/examples/tailor.toml" seed
for f in pytorch-sm90-avx512 pytorch-sm86-avx2 pytorch-cpu-avx2; do
  [ -f "$tmp/seed/flox/.flox/pkgs/python313Packages/$f.nix" ] || fail "flox: python313Packages.$f missing"
done
check_config "$tmp/ptx.toml" ptx
grep -q 'cudaForwardCompat = true' "$tmp/ptx/nix/nix/packages.nix" || fail "PTX: cudaForwardCompat"

# Real Nix reads the emitted flake.lock as complete: --no-update-lock-file fails when the lock
# does not match flake.nix's inputs (offline: nothing is fetched).
if command -v nix > /dev/null && command -v git > /dev/null; then
  (cd "$tmp/seed/nix" && git init -q && git add -A) || fail "git add of the flake"
  if nix --extra-experimental-features 'nix-command flakes' flake metadata --offline --no-update-lock-file \
      "$tmp/seed/nix" > "$tmp/meta.out" 2>&1; then
    grep -q 'nixpkgs.*github:NixOS/nixpkgs/[0-9a-f]\{40\}' "$tmp/meta.out" && echo "ok   nix reads flake.lock as it is" ||
      fail "nix flake metadata names no pinned nixpkgs: $(cat "$tmp/meta.out")"
  else
    fail "nix flake metadata --no-update-lock-file: $(tail -3 "$tmp/meta.out")"
  fi
else
  echo "skip nix flake metadata: no nix on PATH"
fi

# A torch no known nixpkgs revision carries: --emit says so, and how to pin one that does.
printf '[defaults]\npython = "3.13"\nplatform = "x86_64"\ncuda = "13.0"\n[variant.old-cpu]\ntorch = "2.11.0"\narch = ["9.0"]\n[variant.cu13]\ntorch = "2.9.1"\narch = ["9.0"]\n' > "$tmp/old.toml"
"$TAILOR" matrix --config "$tmp/old.toml" --emit nix --emit-dir "$tmp/old" > /dev/null 2> "$tmp/old.err" || fail "--emit nix of torch 2.11.0"
grep -q '^note: old-cpu: torch 2.11.0 is not in the pinned nixpkgs .*--override-input nixpkgs github:NixOS/nixpkgs/<rev>' "$tmp/old.err" ||
  fail "no note for a torch nixpkgs lacks: $(cat "$tmp/old.err")"
# A CUDA major the pinned revision's torch is marked broken for.
grep -q '^note: cu13: CUDA 13.0: the pinned nixpkgs. torch 2.9.1 builds with CUDA 11.x, 12.x only' "$tmp/old.err" ||
  fail "no note for a CUDA the pinned torch refuses: $(cat "$tmp/old.err")"
echo "ok   a torch no known nixpkgs carries is named: $(head -1 "$tmp/old.err" | cut -c1-100)..."

# A torch version this nixpkgs does not have: an evaluation error naming both versions.
if STUB_TORCH_VERSION=2.7.1 nixi --eval --strict -E "(import $stub { }).callPackage $tmp/seed/flox/.flox/pkgs/python313Packages/pytorch-cpu-avx2.nix { }" 2> "$tmp/mismatch.err"; then
  fail "a torch version mismatch evaluated"
fi
grep -q 'asks for torch 2.9.1; this nixpkgs has 2.7.1' "$tmp/mismatch.err" || fail "mismatch message: $(cat "$tmp/mismatch.err")"

# Errors in tailor.toml: one line naming the key, exit 2, nothing written. Hostile values
# (quotes, ${...}, backslashes, newlines) never reach a file.
i=0
for body in '[defaults]\nbogus = 1' '[matrix]\ngpu = ["9.0\\"; ${builtins.abort \\"x\\"}"]\ncpu = ["avx2"]' \
  '[variant."x\\"${y}"]\ntorch = "2.9.1"' '[defaults]\ntorch = "2.9.1\\n${z}"' '[defaults]\ncpu_target = "avx2\\\\"'; do
  i=$((i + 1))
  printf "$body\n" > "$tmp/bad$i.toml"
  for emit in nix flox; do
    set +e
    "$TAILOR" matrix --config "$tmp/bad$i.toml" --emit "$emit" --emit-dir "$tmp/bad$i-$emit" > /dev/null 2> "$tmp/bad.err"
    rc=$?
    set -e
    [ "$rc" = 2 ] || fail "bad$i ($emit): exit $rc, not 2: $(cat "$tmp/bad$i.toml")"
    [ "$(wc -l < "$tmp/bad.err")" = 1 ] || fail "bad$i ($emit): not one line: $(cat "$tmp/bad.err")"
    [ ! -e "$tmp/bad$i-$emit" ] || fail "bad$i ($emit): files written"
  done
done
grep -q 'bogus' <(printf '[defaults]\nbogus = 1\n' > "$tmp/b.toml"; "$TAILOR" matrix --config "$tmp/b.toml" --emit nix --emit-dir "$tmp/b" 2>&1 || true) ||
  fail "the error does not name the key"
echo "PASS: matrix --emit nix/flox"
