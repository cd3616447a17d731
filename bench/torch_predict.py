#!/usr/bin/env python3
"""A whole PyTorch build's time and memory predicted from the units a (partial) build
measured, and the prediction checked on the part that was built (bench/torch_real.sh;
not part of CI).

Inputs: a tailor build report (a run that ended without a wheel leaves
`last-run.report.json` in its work folder): `run.job_timeline` (each finished unit's
start and end, from Ninja's log) and `run.memory.unit_peaks_mib` (each finished unit's
peak memory, its whole process tree, as the memory governor sampled it); and the build
tree's build.ninja, which lists every unit of the whole build with its rule.

Model: a unit's time is the mean of its group, its kind (from build.ninja's rules: nvcc,
c++, cc, link, other) and CMake target (torch_cpu, torch_cuda, ...), else its kind's mean;
the units not yet built take that. Memory: a job is expected
to peak at its kind's highest measured peak. On a machine with C cores and M GiB:
jobs = min(C, (M - reserve) / the heaviest kind's peak), wall = remaining CPU time / jobs.

Check (hold-out): the model is fitted on the units that finished in the first half of the
measured span and predicts, from the kinds of the units of the second half, their total
time and the second half's wall time at its observed parallelism; both are compared with
what was measured. Printed as text, and as JSON with --json.

Also checked the same way on every other unit (interleaved): the model's error on a sample.

usage: bench/torch_predict.py REPORT.json BUILD_NINJA [--cores N] [--memory-gib G]
         [--reserve-gib 4] [--json] [--ninja-log .ninja_log] [--extra-units cuda_units.json]
"""
import argparse
import json
import sys
from collections import defaultdict


def kinds_from_build_ninja(path):
    """output -> kind for every compile/link edge of the build (phony edges left out)."""
    kinds = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("build "):
                continue
            head, _, rest = line[6:].partition(": ")
            out = head.split(" ")[0].replace("$ ", " ").replace("$:", ":")
            rule = rest.split(" ", 1)[0].strip()
            if rule.startswith("CUDA_COMPILER"):
                kinds[out] = "nvcc"
            elif rule.startswith("CXX_COMPILER"):
                kinds[out] = "c++"
            elif rule.startswith("C_COMPILER"):
                kinds[out] = "cc"
            elif "LINKER" in rule:
                kinds[out] = "link"
            elif rule != "phony":
                kinds[out] = "other"
    return kinds


def timeline_from_ninja_log(path):
    """The entries of the log's last Ninja invocation (times restart near 0 at each)."""
    entries = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            p = line.rstrip("\n").split("\t")
            if len(p) >= 4:
                entries.append({"start_ms": int(p[0]), "end_ms": int(p[1]), "output": p[3]})
    last = 0
    for i in range(1, len(entries)):
        if entries[i]["end_ms"] + 1000 < entries[i - 1]["end_ms"]:
            last = i
    return entries[last:]


def library(output):
    """The CMake target a unit belongs to ("torch_cpu" from .../CMakeFiles/torch_cpu.dir/...)."""
    part = output.split("CMakeFiles/", 1)
    return part[1].split(".dir/", 1)[0] if len(part) == 2 and ".dir/" in part[1] else ""


def fit(units, key="kind"):
    """key -> (mean seconds, max peak MiB, count) over measured units."""
    acc = defaultdict(lambda: [0.0, 0, 0])
    for u in units:
        a = acc[u[key]]
        a[0] += u["seconds"]
        a[1] = max(a[1], u.get("peak_mib") or 0)
        a[2] += 1
    return {k: (v[0] / v[2], v[1], v[2]) for k, v in acc.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("build_ninja")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--memory-gib", type=float, default=23.0)
    ap.add_argument("--reserve-gib", type=float, default=4.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--extra-units", action="append", default=[],
                    help="bench/ninja_units.py's JSON: more measured units (the cuda part's)")
    ap.add_argument("--ninja-log", help="read the timeline from this .ninja_log's last "
                    "invocation instead (a build still running: no peaks)")
    a = ap.parse_args()
    if a.ninja_log:
        timeline, peaks = timeline_from_ninja_log(a.ninja_log), {}
    else:
        report = json.load(open(a.report))
        run = report.get("run", {})
        timeline = run.get("job_timeline", [])
        peaks = (run.get("memory") or {}).get("unit_peaks_mib", {})
    kinds = kinds_from_build_ninja(a.build_ninja)
    if not timeline:
        sys.exit("torch_predict: the report has no job timeline (run.job_timeline)")

    units = []
    for j in timeline:
        kind = kinds.get(j["output"])
        if kind is None:
            continue  # not an edge of this build.ninja (another Ninja of the run)
        units.append({"output": j["output"], "kind": kind,
                      "group": kind + ":" + library(j["output"]), "start": j["start_ms"] / 1000,
                      "end": j["end_ms"] / 1000, "seconds": (j["end_ms"] - j["start_ms"]) / 1000,
                      "peak_mib": peaks.get(j["output"])})
    t_last = max((u["end"] for u in units), default=0)
    for path in a.extra_units:
        for out, v in json.load(open(path))["units"].items():
            kind = kinds.get(out)
            if kind is None or any(u["output"] == out for u in units):
                continue
            # Placed after the report's units (they were built after them).
            units.append({"output": out, "kind": kind, "group": kind + ":" + library(out),
                          "start": t_last, "end": t_last + v["seconds"], "seconds": v["seconds"],
                          "peak_mib": v["peak_mib"]})
            t_last += v["seconds"]
    units.sort(key=lambda u: u["end"])

    def estimator(sample):
        """A unit's expected seconds: its group's (kind and CMake target) mean over
        `sample`, else its kind's, else every unit's."""
        by_group, by_kind = fit(sample, "group"), fit(sample, "kind")
        every = sum(u["seconds"] for u in sample) / max(1, len(sample))
        return lambda kind, group: (by_group.get(group) or by_kind.get(kind) or (every,))[0]
    total_by_kind = defaultdict(int)
    for k in kinds.values():
        total_by_kind[k] += 1
    model = fit(units)
    done = {u["output"] for u in units}
    measured_s = sum(u["seconds"] for u in units)
    remaining = defaultdict(int)
    for out, k in kinds.items():
        if out not in done:
            remaining[(k, k + ":" + library(out))] += 1
    overall = measured_s / len(units)
    est = estimator(units)
    remaining_s = sum(n * est(k, g) for (k, g), n in remaining.items())
    heaviest = max((m[1] for m in model.values()), default=0)
    jobs = max(1, min(a.cores, int((a.memory_gib - a.reserve_gib) * 1024 // max(heaviest, 1))))
    whole_s = measured_s + remaining_s

    # Hold-out: fit on the first half of the measured span, predict the second.
    t0, t1 = units[0]["start"], units[-1]["end"]
    mid = t0 + (t1 - t0) / 2
    first = [u for u in units if u["end"] <= mid]
    second = [u for u in units if u["end"] > mid]
    early = fit(first)
    est_first = estimator(first)
    pred_second = sum(est_first(u["kind"], u["group"]) for u in second)
    actual_second = sum(u["seconds"] for u in second)
    span_second = t1 - max(mid, min(u["start"] for u in second)) if second else 0
    parallel_second = actual_second / span_second if span_second > 0 else 1
    pred_wall_second = pred_second / parallel_second if parallel_second > 0 else 0
    # Interleaved: every other unit (by end time) fits, the others are predicted.
    est_even = estimator(units[0::2])
    test = units[1::2]
    pred_odd = sum(est_even(u["kind"], u["group"]) for u in test)
    actual_odd = sum(u["seconds"] for u in test)
    peak_first = max((m[1] for m in early.values()), default=0)
    peak_second = max((u["peak_mib"] or 0 for u in second), default=0)

    out = {
        "units_total": len(kinds), "units_measured": len(units),
        "units_with_peak": sum(1 for u in units if u["peak_mib"]),
        "by_kind": {k: {"total": total_by_kind[k], "measured": model.get(k, (0, 0, 0))[2],
                        "mean_s": round(model[k][0], 2) if k in model else None,
                        "peak_mib": model[k][1] if k in model else None}
                    for k in sorted(total_by_kind)},
        "measured_cpu_s": round(measured_s), "remaining_cpu_s": round(remaining_s),
        "whole_cpu_s": round(whole_s),
        "machine": {"cores": a.cores, "memory_gib": a.memory_gib, "reserve_gib": a.reserve_gib,
                    "jobs": jobs, "peak_per_job_mib": heaviest,
                    "memory_needed_gib": round(a.reserve_gib + jobs * heaviest / 1024, 1),
                    "whole_wall_h": round(whole_s / jobs / 3600, 2),
                    "remaining_wall_h": round(remaining_s / jobs / 3600, 2)},
        "holdout": {"fit_units": len(first), "test_units": len(second),
                    "predicted_cpu_s": round(pred_second), "measured_cpu_s": round(actual_second),
                    "cpu_error": round(pred_second / actual_second - 1, 3) if actual_second else None,
                    "predicted_wall_s": round(pred_wall_second), "measured_wall_s": round(span_second),
                    "peak_predicted_mib": peak_first, "peak_measured_mib": peak_second,
                    "interleaved_predicted_cpu_s": round(pred_odd),
                    "interleaved_measured_cpu_s": round(actual_odd),
                    "interleaved_error": round(pred_odd / actual_odd - 1, 3) if actual_odd else None},
    }
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print(f"units: {len(units)} of {len(kinds)} measured ({out['units_with_peak']} with a peak)")
    for k, v in out["by_kind"].items():
        print(f"  {k:6} {v['measured']:5}/{v['total']:<5} mean {v['mean_s']} s  peak {v['peak_mib']} MiB")
    m = out["machine"]
    print(f"whole build: {whole_s / 3600:.2f} CPU-hours ({measured_s / 3600:.2f} measured, "
          f"{remaining_s / 3600:.2f} predicted)")
    print(f"on {a.cores} cores / {a.memory_gib:g} GiB: {jobs} jobs of up to {heaviest} MiB "
          f"(needs {m['memory_needed_gib']} GiB), whole {m['whole_wall_h']} h, "
          f"remaining {m['remaining_wall_h']} h")
    h = out["holdout"]
    print(f"hold-out: fitted on {h['fit_units']} units, predicted {h['test_units']}: "
          f"CPU {h['predicted_cpu_s']} s vs {h['measured_cpu_s']} s measured "
          f"({h['cpu_error']:+.1%}); wall {h['predicted_wall_s']} s vs {h['measured_wall_s']} s; "
          f"peak {h['peak_predicted_mib']} MiB predicted, {h['peak_measured_mib']} MiB measured")
    print(f"hold-out, every other unit: CPU {h['interleaved_predicted_cpu_s']} s predicted vs "
          f"{h['interleaved_measured_cpu_s']} s measured ({h['interleaved_error']:+.1%})")


if __name__ == "__main__":
    main()
