#!/usr/bin/env bash
# End-to-end: a wheel that links torch pins the torch it was built against, and installs with
# it from a wheelhouse served over http. The test fixture extension (tests/e2e/data/tiny_ext,
# seconds) is built with the real nvcc and torch: its version carries +cu<CUDA>torch<X.Y>
# (file name, .dist-info, METADATA, RECORD agree), METADATA says torch==<the build's torch>,
# and `tailor inspect` warns about the same library in a wheel without the pin. `tailor
# publish` prints the install line; that line is run as printed, with pip and with uv, into
# fresh venvs with no torch, with its three indexes served on loopback: the wheelhouse, a
# stand-in for PyTorch's index (torch <X.Y.Z>+cu<CUDA> and a newer <X.Y+4>.0+cu<CUDA>) and one
# for the default index (a plain <X.Y.Z> and the newer release). The real torch wheel (530 MB)
# is not on this machine, so the build's torch on the stand-in index is a small wheel that
# puts this machine's torch on the path (a .pth): importing the extension then loads it
# against the torch it was built with. Every other torch there fails on import, naming itself.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # tiny_ext, ok, bad, expect_eq, expect_grep, json_get, make_wheel

tmp=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
export PIP_CONFIG_FILE=/dev/null PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 UV_NO_CACHE=1 UV_NO_CONFIG=1
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL UV_INDEX_URL UV_EXTRA_INDEX_URL UV_FIND_LINKS UV_INDEX UV_DEFAULT_INDEX
export XDG_CACHE_HOME="$tmp/cache"

read -r torch_version torch_cuda torch_site < <(python3 -c '
import os, torch
print(torch.__version__, torch.version.cuda or "", os.path.dirname(os.path.dirname(torch.__file__)))')
public=${torch_version%%+*}
release=$(echo "$public" | cut -d. -f1,2)
if [ -n "$torch_cuda" ]; then cu="cu${torch_cuda//./}"; else cu=cpu; fi
label="${cu}torch$release"
newer="$(( $(echo "$public" | cut -d. -f1) )).$(( $(echo "$public" | cut -d. -f2) + 4 )).0"

"$TAILOR" build "$tiny_ext" --arch 7.5 --out "$tmp/dist" --work-dir "$tmp/work" --progress plain \
  --no-tests --json >"$tmp/build.json" 2>"$tmp/build.err" || { tail -30 "$tmp/build.err"; fail "the fixture did not build"; }
whl=$(cd "$tmp/dist" && ls ./*.whl)
whl=${whl#./}
case "$whl" in
  "tiny_ext-0.1.0+$label-"*) ok "the wheel's name carries +$label ($whl)" ;;
  *) bad "the wheel's name: $whl, want tiny_ext-0.1.0+$label-..." ;;
esac
expect_eq "only the relabelled wheel is left" "$(ls "$tmp/dist"/*.whl | wc -l)" 1
expect_eq "the report names it" "$(json_get "$tmp/build.json" 'j["wheel"]["name"]')" "$whl"
python3 - "$tmp/dist/$whl" "0.1.0+$label" "$public" <<'PY' >"$tmp/meta.out" 2>&1 && ok "METADATA: Version and torch==$public; RECORD lists the relabelled folder" || { bad "METADATA/RECORD"; cat "$tmp/meta.out"; }
import sys, zipfile
whl, version, public = sys.argv[1:]
z = zipfile.ZipFile(whl)
di = f"tiny_ext-{version}.dist-info"
names = z.namelist()
assert all(not n.startswith("tiny_ext-0.1.0.dist-info/") for n in names), names
meta = z.read(f"{di}/METADATA").decode()
headers = meta.split("\n\n")[0].splitlines()
assert f"Version: {version}" in headers, headers
torch = [h for h in headers if h.startswith("Requires-Dist: torch")]
assert torch == [f"Requires-Dist: torch=={public}"], torch
import json
assert json.loads(z.read(f"{di}/tailor-provenance.json"))["requires_torch"] == f"torch=={public}"
record = z.read(f"{di}/RECORD").decode().splitlines()
assert {r.split(",")[0] for r in record} == set(names), (record, names)
PY
"$TAILOR" inspect "$tmp/dist/$whl" >"$tmp/inspect.out" 2>"$tmp/inspect.err"
expect_eq "inspect of the pinned wheel: exit 0" "$?" 0
if grep -q "does not pin" "$tmp/inspect.err"; then bad "inspect warns about the pinned wheel"; else ok "no pin warning for the pinned wheel"; fi
expect_eq "the build's torch-pin check" "$(json_get "$tmp/build.json" '[c["status"] for c in j["checks"] if c["name"] == "torch-pin"]')" "['passed']"

# The same library in a wheel without the pin: inspect warns (exit 0).
(cd "$tmp" && python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); n = [m for m in z.namelist() if m.endswith(".so")][0]; open("lib.so", "wb").write(z.read(n)); print(n)' "$tmp/dist/$whl") >"$tmp/so-name"
make_wheel "$tmp/tiny_ext-0.1.0-cp3-none-linux_x86_64.whl" "$tmp/lib.so:$(cat "$tmp/so-name")" >/dev/null
"$TAILOR" inspect "$tmp/tiny_ext-0.1.0-cp3-none-linux_x86_64.whl" >/dev/null 2>"$tmp/unpinned.err"
expect_eq "inspect of an unpinned torch-linked wheel: exit 0" "$?" 0
expect_grep "it warns" "tailor inspect: warning: .*links torch (lib.*) but the wheel does not pin the torch it was built against (METADATA: no torch requirement)" "$tmp/unpinned.err"

# Publish: the install line.
"$TAILOR" publish "$tmp/dist/$whl" --to "$tmp/house" --json >"$tmp/publish.json" 2>"$tmp/publish.err"
expect_eq "publish exit" "$?" 0
line=$(json_get "$tmp/publish.json" 'j["wheels"][0]["install"]')
pytorch_index="https://download.pytorch.org/whl/$cu"
expect_eq "publish prints the install line" "$line" \
  "pip install --index-url https://pypi.org/simple --extra-index-url file://$tmp/house/sm75/simple --extra-index-url $pytorch_index tiny-ext==0.1.0+$label"
"$TAILOR" publish "$tmp/dist/$whl" --to "$tmp/house" >"$tmp/publish.txt" 2>&1
expect_grep "the text output too" "^  install: pip install .*tiny-ext==0.1.0+$label$" "$tmp/publish.txt"

# The indexes, served on loopback: the wheelhouse, PyTorch's stand-in, the default's stand-in.
fake_torch() {  # DIR VERSION MESSAGE|--real
  local d="$tmp/fake-$2" name="torch-$2-py3-none-any.whl"
  mkdir -p "$d/torch" "$1"
  if [ "$3" = --real ]; then
    echo "$torch_site" >"$d/tailor_build_torch.pth"
    make_wheel "$1/$name" "$d/tailor_build_torch.pth:tailor_build_torch.pth" >/dev/null
  else
    echo "raise ImportError('$3')" >"$d/torch/__init__.py"
    make_wheel "$1/$name" "$d/torch/__init__.py:torch/__init__.py" >/dev/null
  fi
}
fake_torch "$tmp/www/pytorch/simple/torch" "$public+$cu" --real
fake_torch "$tmp/www/pytorch/simple/torch" "$newer+$cu" "a newer torch from the PyTorch index: $newer+$cu"
fake_torch "$tmp/www/pypi/simple/torch" "$public" "the default index's torch $public"
fake_torch "$tmp/www/pypi/simple/torch" "$newer" "a newer torch from the default index: $newer"
for i in pytorch pypi; do
  (cd "$tmp/www/$i/simple/torch" && for f in *.whl; do printf '<a href="%s">%s</a>\n' "$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$f")" "$f"; done) >"$tmp/www/$i/simple/torch/index.html"
done
cp -r "$tmp/house" "$tmp/www/house"
port=$(free_port)
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$tmp/www" >"$tmp/http.log" 2>&1 &
server=$!
wait_port "$port" 50 || sleep 1
web="http://127.0.0.1:$port"
served=$(echo "$line" | sed -e "s|https://pypi.org/simple|$web/pypi/simple|" -e "s|file://$tmp/house|$web/house|" \
  -e "s|$pytorch_index|$web/pytorch/simple|")
check_venv() {  # NAME VENV LOG
  expect_eq "$1: the build's torch is installed" \
    "$("$2/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>&1)" "$public+$cu"
  "$2/bin/python" -c 'import torch, tiny_ext, tiny_ext._C; print(torch.__version__)' >"$3.import" 2>&1 \
    && ok "$1: the extension imports with it (torch $(tail -1 "$3.import"))" \
    || { bad "$1: the extension does not import"; tail -5 "$3.import"; }
}
python3 -m venv "$tmp/pip-venv"
"$tmp/pip-venv/bin/python" -c 'import torch' 2>/dev/null && bad "the fresh venv has a torch"
# shellcheck disable=SC2086  # the printed line, split as a shell would
"$tmp/pip-venv/bin/python" -m $served >"$tmp/pip.log" 2>&1
rc=$?
expect_eq "pip: the printed line (indexes served on loopback): exit 0" "$rc" 0
[ "$rc" = 0 ] || tail -20 "$tmp/pip.log"
check_venv pip "$tmp/pip-venv" "$tmp/pip.log"
uv=${UV:-$(command -v uv || true)}
if [ -n "$uv" ]; then
  "$uv" venv -q --python "$(command -v python3)" "$tmp/uv-venv"
  # shellcheck disable=SC2086
  VIRTUAL_ENV=$tmp/uv-venv "$uv" $served >"$tmp/uv.log" 2>&1
  rc=$?
  expect_eq "uv pip: the printed line: exit 0" "$rc" 0
  [ "$rc" = 0 ] || tail -20 "$tmp/uv.log"
  check_venv uv "$tmp/uv-venv" "$tmp/uv.log"
else
  echo "note: no uv on PATH and no \$UV: the uv checks did not run"
fi
exit "$fail"
