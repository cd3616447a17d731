#!/usr/bin/env python3
"""Turn one package's unit times from a governor profile (peaks.json of a real build) into
an entry of data/build/unit_times.toml, the order a build with nothing learned starts its
units in.

usage: bench/unit_times_seed.py PEAKS_JSON RECIPE [--profile NAME] --measured "TEXT"
Prints the TOML entry (seconds, one decimal) for the profile key of RECIPE; append it to
data/build/unit_times.toml by hand after reading it.
"""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("peaks")
ap.add_argument("recipe")
ap.add_argument("--profile", default="")
ap.add_argument("--measured", required=True)
a = ap.parse_args()
entries = json.load(open(a.peaks))["entries"]
# The key names the profile since 2026-11-28; an older profile file's key does not.
want = f"recipe={a.recipe}" + (f" profile={a.profile}" if a.profile else "")
found = [v for k, v in entries.items() if f" {want} " in f" {k} "]
if len(found) != 1:
    sys.exit(f"{a.peaks}: {len(found)} entries for {want}: {sorted(entries)}")
units = found[0].get("unit_ms", {})
if not units:
    sys.exit(f"{a.peaks}: no unit times for {want}")
print("[[package]]")
print(f'recipe = "{a.recipe}"')
if a.profile:
    print(f'profile = "{a.profile}"')
print(f"measured = {json.dumps(a.measured)}")
print("[package.seconds]")
for src, ms in sorted(units.items(), key=lambda kv: (-kv[1], kv[0])):
    print(f"{json.dumps(src)} = {ms / 1000:.1f}")
print()
