#!/usr/bin/env bash
# Hostile inputs for inspect, explain and matrix, made by tests/e2e/hostile_inputs.py in a
# temporary folder: amplifying ELF/fatbin files, huge declared payloads, FIFOs, devices,
# files of zeros, unreadable files, empty folders, names that are not UTF-8 or carry
# terminal escapes. Each must end in one error line, exit 1 or 2, bounded memory.
set -uo pipefail
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
exec python3 "$TAILOR_SOURCE_DIR/tests/e2e/hostile_inputs.py" "$TAILOR"
