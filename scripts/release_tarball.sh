#!/usr/bin/env bash
# A release tarball for this machine's architecture: the portable tailor (libstdc++ static,
# the other non-glibc libraries beside it, see portable_bundle.sh), stripped, with its man
# page, shell completions, README and ARCHITECTURE, laid out as an install prefix:
#   dist/tailor-<version>-linux-<arch>.tar.gz and its .sha256
# Unpack anywhere and put <prefix>/bin on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
build=${BUILD_DIR:-build-release}
bash scripts/portable_bundle.sh "$build" >/dev/null
version=$("$build/bin/tailor" --version | awk '{print $2}')
arch=$(uname -m)
name=tailor-$version-linux-$arch
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin/lib" "$root/share/man/man1" "$root/share/bash-completion/completions" \
  "$root/share/zsh/site-functions" "$root/share/fish/vendor_completions.d" "$root/share/doc/tailor"
strip -o "$root/bin/tailor" "$build/bin/tailor"
cp -L "$build"/bin/lib/* "$root/bin/lib/" 2>/dev/null || true
T=$root/bin/tailor
"$T" help --man > "$root/share/man/man1/tailor.1"
"$T" completion bash > "$root/share/bash-completion/completions/tailor"
"$T" completion zsh > "$root/share/zsh/site-functions/_tailor"
"$T" completion fish > "$root/share/fish/vendor_completions.d/tailor.fish"
cp README.md ARCHITECTURE.md "$root/share/doc/tailor/"
# The packaged binary must run from the package: its libraries come from bin/lib.
"$T" --version >/dev/null
"$T" arch 9.0 >/dev/null
mkdir -p "$out"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@"${SOURCE_DATE_EPOCH:-0}" \
  -C "$stage" -czf "$out/$name.tar.gz" "$name"
(cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
echo "release: $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1)): $(tar -tzf "$out/$name.tar.gz" | grep -c -v '/$') files"
