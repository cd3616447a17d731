#!/usr/bin/env bash
# Benchmark of the memory governor (P4): one memory-bound `tailor build` under a memory
# cap, three ways, same source, fresh work folders, no compiler cache:
#   A. --jobs $(nproc)                  what a user without tailor's count would run
#   B. --jobs <static safe count>       budget / the recipe's memory per job (tailor's formula)
#   C. --memory-budget BUDGET           the governor (jobserver tokens by measured memory),
#                                       its first build of the package (nothing learned)
#   D. --memory-budget BUDGET again     the governor's second build: it starts from the job
#                                       peaks C measured (the user cache's governor peaks)
# Every run has its own XDG_CACHE_HOME under the bench's scratch folder except that D
# shares C's, so C starts from the recipe and D from C's record.
# Prints wall time, peak RSS of the build's process tree, OOM kills, and the ratio of
# B's time to C's. The cap: a memory cgroup (v2, else v1) made for each run where
# /sys/fs/cgroup can be written AND a probe shows the limit is enforced; otherwise none
# can be set, every run is measured as it goes (the tree's RSS sampled every 0.2 s) and a
# run whose peak passed the budget counts as "would be OOM-killed".
#
# usage: bench/governor.sh [--tailor PATH] [--package SOURCE] [--arch 7.5] [--budget 3G]
#                          [--per-job-gib G] [--only A,B,C,D] [--limit SECONDS]
# --limit: a run still going after SECONDS gets Ctrl-C (SIGINT) and is reported as cut
# there: its time is a lower bound. Per run: --limit C=150,B=540.
# SOURCE: an sdist, a folder or NAME==VERSION (default: the bundled example). On a
# 16-core GPU machine, for example:
#   bench/governor.sh --package causal-conv1d==1.5.0.post8 --arch 9.0 --budget 24G
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
package=""
arch=7.5
budget=3G
per_job=""
only="A,B,C,D"
limit=0
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --package) package=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --per-job-gib) per_job=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    *) echo "usage: $0 [--tailor PATH] [--package SOURCE] [--arch A] [--budget SIZE] [--per-job-gib G] [--only A,B,C,D] [--limit S]" >&2; exit 2 ;;
  esac
done
[ -x "$tailor" ] || { echo "no tailor at $tailor (build it first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The recipe's memory per job: from `tailor build --print-env`'s jobs line.
if [ -z "$per_job" ]; then
  (cd "$here" && "$tailor" build ${package:+"$package"} --arch "$arch" --print-env --work-dir "$tmp/pe") >"$tmp/pe.txt" 2>&1
  per_job=$(sed -n 's/.* \([0-9.]*\) GiB per job.*/\1/p' "$tmp/pe.txt" | head -1)
  [ -n "$per_job" ] || per_job=3
fi

exec python3 - "$tailor" "$here" "$package" "$arch" "$budget" "$per_job" "$only" "$tmp" "$limit" <<'PY'
import json, math, os, re, signal, subprocess, sys, time

tailor, here, package, arch, budget_text, per_job_gib, only, tmp, limit_text = sys.argv[1:]
# --limit S (every run) or --limit C=150,B=540 (per run)
limits = {}
for part in limit_text.split(","):
    key, _, value = part.rpartition("=")
    limits[key or "*"] = float(value)
units = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20, "MIB": 2**20,
         "G": 2**30, "GB": 2**30, "GIB": 2**30, "T": 2**40, "TB": 2**40, "TIB": 2**40}
m = re.fullmatch(r"([0-9.]+)\s*([A-Za-z]*)", budget_text)
budget = int(float(m[1]) * units[m[2].upper()])
cores = os.cpu_count() or 1
safe = max(1, min(cores, math.floor(budget / (float(per_job_gib) * 2**30))))

def cgroup_kind():
    """('v2', root) or ('v1', root) where a memory cgroup can be made and its limit holds."""
    for kind, root in (("v2", "/sys/fs/cgroup"), ("v1", "/sys/fs/cgroup/memory")):
        if kind == "v2" and not os.path.exists(f"{root}/cgroup.controllers"):
            continue
        if kind == "v1" and not os.path.exists(f"{root}/memory.limit_in_bytes"):
            continue
        d = f"{root}/tailor-bench-probe-{os.getpid()}"
        try:
            os.mkdir(d)
        except OSError:
            continue
        try:
            limit = f"{d}/memory.max" if kind == "v2" else f"{d}/memory.limit_in_bytes"
            open(limit, "w").write(str(64 * 2**20))
            r = subprocess.run(["sh", "-c", f"echo $$ > {d}/cgroup.procs; exec python3 -c 'b = bytes(256 * 2**20)'"],
                               capture_output=True)
            if r.returncode != 0:
                return kind, root
        except OSError:
            pass
        finally:
            try: os.rmdir(d)
            except OSError: pass
    return None, None

kind, root = cgroup_kind()
mode = f"cgroup {kind} limit {budget >> 20} MiB" if kind else f"no enforceable cgroup here: measured against {budget >> 20} MiB"
print(f"package: {package or 'the bundled example'}  arch {arch}  budget {budget >> 20} MiB  cores {cores}  "
      f"per job {per_job_gib} GiB -> static safe count {safe}")
print(f"cap: {mode}")

def tree_rss(pid):
    kids, rss = {}, {}
    for e in os.listdir("/proc"):
        if not e.isdigit(): continue
        try:
            s = open(f"/proc/{e}/stat").read()
        except OSError:
            continue
        f = s[s.rfind(")") + 2:].split()
        kids.setdefault(int(f[1]), []).append(int(e))
        rss[int(e)] = int(f[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += kids.get(p, [])
    return total

def compile_span(work):
    """Seconds from the first compile's start to the last one's end, from the build's
    .ninja_log files (format v5+: start end mtime output hash, in ms), summed over the
    Ninja runs of the build (one per extension module)."""
    total = 0.0
    for dirpath, _, files in os.walk(work):
        if ".ninja_log" not in files:
            continue
        spans = []
        for line in open(os.path.join(dirpath, ".ninja_log"), errors="replace"):
            f = line.split("\t")
            if len(f) >= 4 and f[0].isdigit() and f[1].isdigit():
                spans.append((int(f[0]), int(f[1])))
        if spans:
            total += (max(e for _, e in spans) - min(s for s, _ in spans)) / 1000
    return total

def run(label, extra):
    limit = limits.get(label, limits.get("*", 0.0))
    work = f"{tmp}/work-{label}"
    env = dict(os.environ, XDG_CACHE_HOME=f"{tmp}/cache-{'C' if label == 'D' else label}")
    argv = [tailor, "build"] + ([package] if package else []) + ["--arch", arch, "--out", f"{tmp}/out-{label}",
            "--work-dir", work, "--cache", "none", "--no-tests", "--progress", "plain", "--json"] + extra
    cg = None
    pre = []
    if kind:
        cg = f"{root}/tailor-bench-{os.getpid()}-{label}"
        os.mkdir(cg)
        if kind == "v2":
            open(f"{cg}/memory.max", "w").write(str(budget))
            try: open(f"{cg}/memory.swap.max", "w").write("0")
            except OSError: pass
        else:
            open(f"{cg}/memory.limit_in_bytes", "w").write(str(budget))
        pre = ["sh", "-c", f'echo $$ > {cg}/cgroup.procs; exec "$@"', "sh"]
    t0 = time.monotonic()
    with open(f"{tmp}/{label}.json", "w") as out, open(f"{tmp}/{label}.err", "w") as err:
        p = subprocess.Popen(pre + argv, cwd=here, stdout=out, stderr=err, env=env)
        peak = 0
        cut = False
        while p.poll() is None:
            peak = max(peak, tree_rss(p.pid))
            if limit > 0 and not cut and time.monotonic() - t0 > limit:
                p.send_signal(signal.SIGINT)
                cut = True
            time.sleep(0.2)
    wall = min(time.monotonic() - t0, limit) if cut else time.monotonic() - t0
    ooms = 0
    if cg:
        try:
            if kind == "v2":
                ev = dict(l.split() for l in open(f"{cg}/memory.events"))
                ooms = int(ev.get("oom_kill", 0))
                try: peak = max(peak, int(open(f"{cg}/memory.peak").read()))
                except OSError: pass
            else:
                ev = dict(l.split() for l in open(f"{cg}/memory.oom_control"))
                ooms = int(ev.get("oom_kill", 0))
        except OSError:
            pass
        try: os.rmdir(cg)
        except OSError: pass
    log = ""
    try: log = open(f"{work}/{os.listdir(work)[0]}/build.log", errors="replace").read() if os.path.isdir(work) else ""
    except (OSError, IndexError): pass
    killed = len(re.findall(r"Killed signal terminated program|Killed|signal 9", log))
    over = peak > budget
    keep = os.environ.get("BENCH_KEEP")  # a folder for each run's .ninja_log and report
    if keep:
        os.makedirs(keep, exist_ok=True)
        for dirpath, _, files in os.walk(work):
            if ".ninja_log" in files:
                subprocess.run(["cp", os.path.join(dirpath, ".ninja_log"), f"{keep}/{label}.ninja_log"])
        subprocess.run(["cp", f"{tmp}/{label}.json", f"{tmp}/{label}.err", keep])
        peaks = f"{env['XDG_CACHE_HOME']}/tailor/governor/peaks.json"
        if os.path.exists(peaks):
            subprocess.run(["cp", peaks, f"{keep}/{label}.peaks.json"])
    gov = {}
    try: gov = json.load(open(f"{tmp}/{label}.json"))["run"].get("memory", {})
    except (OSError, ValueError, KeyError): pass
    return {"label": label, "rc": p.returncode, "wall": wall, "cut": cut, "limit": limit, "compile": compile_span(work), "peak": peak, "ooms": ooms if kind else None,
            "killed_in_log": killed, "over": over, "gov": gov}

runs = {"A": ("A nproc", ["--jobs", str(cores)]), "B": ("B static", ["--jobs", str(safe)]),
        "C": ("C governor", ["--memory-budget", budget_text]),
        "D": ("D governor2", ["--memory-budget", budget_text])}
results = {}
for key in only.split(","):
    label, extra = runs[key]
    r = run(key, extra)
    results[key] = r
    oom = (f"{r['ooms']} OOM kills" if r["ooms"] is not None else
           ("would be OOM-killed (peak > budget)" if r["over"] else "within the budget"))
    g = r["gov"]
    gtxt = (f"; governor: up to {g.get('max_running')} jobs, {g.get('brake_count')} brake events, "
            f"job peaks {g.get('job_peaks_mib')} MiB, started from {g.get('known_peaks_mib') or 'the recipe'}"
            if g.get("mode") == "governor" else "")
    print(f"{label:11s} {' '.join(extra):28s} exit {r['rc']:3d}  wall {'>' if r['cut'] else ' '}{r['wall']:7.1f} s  compile {r['compile']:7.1f} s  peak RSS {r['peak'] >> 20:6d} MiB  "
          f"{oom}; compiler kills in log {r['killed_in_log']}{gtxt}", flush=True)
for key, what in (("C", "governor, first build"), ("D", "governor, second build")):
    if "B" in results and key in results and results[key]["wall"] > 0:
        b, c = results["B"], results[key]
        ctext = f"; compile phase {b['compile'] / c['compile']:.2f}" if b["compile"] > 0 and c["compile"] > 0 else ""
        if b["cut"]:
            print(f"ratio static/{what}: wall at least {b['wall'] / c['wall']:.2f} (static cut at {b['limit']:.0f} s)")
        else:
            print(f"ratio static/{what}: wall {b['wall'] / c['wall']:.2f}{ctext}"
                  + ("" if b["rc"] == 0 and c["rc"] == 0 else "  (a run failed: the ratio compares unequal work)"))
PY
