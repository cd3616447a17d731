#!/usr/bin/env python3
"""Writes the sample inputs of tests/e2e/html_pages.sh (see README.md here): a build report
of the bundled example's shape without a job timeline, a Ninja v7 log of 33 jobs on four
lanes, and the build.ninja that names each job's rule and source. Seeded: the same files
every run. Run from the repository root."""
import json, random
random.seed(7)
names = ["bias_gelu", "layer_norm", "softmax", "rotary", "attention_fwd", "attention_bwd", "gemm_epilogue",
         "reduce", "scan", "topk", "embedding", "dropout", "adam", "lamb", "quantize", "dequantize"]
log = ["# ninja log v7"]
t_free = [0, 0, 0, 0]
entries = []
for i, n in enumerate(names):
    for ext in ("cu", "cpp"):
        dur = random.randint(18000, 95000) if ext == "cu" else random.randint(4000, 16000)
        lane = min(range(4), key=lambda k: t_free[k])
        start = t_free[lane] + random.randint(5, 60)
        end = start + dur
        t_free[lane] = end
        out = f"temp.linux-x86_64-cpython-311/csrc/{n}{'.cuda' if ext == 'cu' else ''}.o"
        entries.append((start, end, out, ext))
link_start = max(t_free) + 30
entries.append((link_start, link_start + 3400, "lib.linux-x86_64-cpython-311/fused_ops/_C.so", "link"))
entries.sort(key=lambda e: e[1])
for s, e, out, _ in entries:
    log.append(f"{s}\t{e}\t{1764200000000000000 + e}\t{out}\t{random.getrandbits(64):016x}")
open("tests/e2e/data/sample.ninja_log", "w").write("\n".join(log) + "\n")
bn = ["ninja_required_version = 1.3", "rule compile", "  command = c++ -c $in -o $out", "rule cuda_compile",
      "  command = nvcc -c $in -o $out", "rule link", "  command = c++ -shared $in -o $out"]
for s, e, out, kind in entries:
    if kind == "link":
        bn.append(f"build {out}: link " + " ".join(o for _, _, o, k in entries if k != "link"))
    else:
        src = out.split("/csrc/")[1].replace(".cuda.o", ".cu").replace(".o", ".cpp")
        bn.append(f"build {out}: {'cuda_compile' if kind == 'cu' else 'compile'} csrc/{src}")
open("tests/e2e/data/build.ninja", "w").write("\n".join(bn) + "\n")
end = link_start + 3400
series = []
t = 0.0
rss = 300
while t * 1000 < end + 4000:
    running = sum(1 for s, e, _, _ in entries if s <= t * 1000 < e)
    rss = int(0.7 * rss + 0.3 * (250 + 820 * running + random.randint(-80, 80)))
    series.append([round(t, 2), 4, running, 0, 14800 - rss, rss])
    t += 2.0
report = {
  "tool": {"name": "tailor", "version": "0.1.0"},
  "ok": True,
  "inputs": {"package": "fused_ops", "source": "examples/fused_ops", "source_kind": "example",
             "targets": ["sm_75", "sm_80", "sm_90"], "targets_from": "--arch 7.5,8.0,9.0", "recipe": "generic",
             "python": "python3.11"},
  "environment": {"set": {"TORCH_CUDA_ARCH_LIST": "7.5;8.0;9.0"}, "unset": []},
  "toolchain": {"nvcc": "13.0.88", "gcc": "12.2.0", "ninja": "1.13.1", "sccache": "0.10.0"},
  "run": {"started_at": "2026-11-26T21:04:11Z", "duration_s": round(end / 1000 + 41.3, 1), "jobs": 4,
          "jobs_reason": "memory governor",
          "cache": {"tool": "sccache", "hits": 21, "misses": 11, "storage": "local ~/.cache/sccache", "errors": 0,
                    "categories": {"C/C++": {"hits": 12, "misses": 4}, "CUDA (nvcc)": {"hits": 9, "misses": 7},
                                   "PTX (cicc)": {"hits": 3, "misses": 13}, "cubin (ptxas)": {"hits": 4, "misses": 12}}},
          "reused_units": None,
          "memory": {"mode": "governor", "reason": "ninja 1.13.1 is a jobserver client; 14.8 GiB free",
                     "budget_mib": None, "reserve_mib": 1200, "prior_job_mib": 3072, "max_jobs": 4,
                     "peak_build_rss_mib": max(p[5] for p in series), "max_running": 4, "samples": len(series) * 8,
                     "job_peaks_mib": {"cc1plus": 610, "nvcc --threads 1": 1130, "ld": 240},
                     "process_peaks_mib": {"cicc": 880, "cc1plus": 610, "ptxas": 310},
                     "series_fields": ["t", "tokens", "running", "stopped", "available_mib", "build_rss_mib"],
                     "series": series, "brakes": [], "brake_count": 0, "continued_at_end": 0}},
  "wheel": {"name": "fused_ops-0.1.0+cu130-cp311-cp311-linux_x86_64.whl",
            "path": "dist/fused_ops-0.1.0+cu130-cp311-cp311-linux_x86_64.whl", "sha256": "0" * 64, "size": 4183224,
            "bytes_per_target": {"sm_75": 812344, "sm_80": 845120, "sm_90": 902216, "compute_90": 190552}},
  "checks": [{"name": "targets", "status": "passed", "detail": "exactly sm_75 sm_80 sm_90 + compute_90 (the recipe's PTX of the highest)"},
             {"name": "import", "status": "passed", "detail": "import fused_ops in a clean venv"},
             {"name": "cpu-tests", "status": "passed", "detail": "4 passed in 2.1s"},
             {"name": "gpu-smoke", "status": "skipped", "detail": "no GPU"}],
  "log": "dist/fused_ops-0.1.0+cu130-cp311-cp311-linux_x86_64.whl.build.log",
}
open("tests/e2e/data/sample.report.json", "w").write(json.dumps(report, indent=2) + "\n")
