#!/usr/bin/env bash
# The C++ sources are as clang-format (.clang-format: Google style, 100 columns) writes them.
# Run by scripts/test.sh before any compile, so CI fails on a file that is not; fix with
#   bash scripts/check_format.sh --fix
# Checks what git tracks under src/, tests/, tools/, fuzz/ and bench/ (.cpp and .h).
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=${CLANG_FORMAT:-clang-format}
command -v "$fmt" > /dev/null || { echo "check_format: $fmt not found (apt-get install clang-format)"; exit 1; }
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.h' 'tests/*.cpp' 'tests/*.h' 'tools/*.cpp' \
  'fuzz/*.cpp' 'bench/*.cpp' 'bench/*.h')
if [ "${1:-}" = --fix ]; then
  "$fmt" -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
if ! "$fmt" --dry-run --Werror "${files[@]}" 2> /tmp/check_format.$$; then
  bad=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: error: code should be clang-formatted' /tmp/check_format.$$ |
    cut -d: -f1,2 | sort -u -t: -k1,1)
  printf '%s\n' "$bad" | head -20 | sed 's/^/  not formatted: /'
  echo "check_format: $(printf '%s\n' "$bad" | grep -c .) file(s) differ from clang-format" \
    "($("$fmt" --version | grep -o '[0-9][0-9.]*' | head -1)); fix with: bash scripts/check_format.sh --fix"
  rm -f /tmp/check_format.$$
  exit 1
fi
rm -f /tmp/check_format.$$
echo "check_format: ${#files[@]} files as clang-format writes them"
