# torch-linear-assignment 0.1.0 (import torch_linear_assignment): the compiled CUDA solver
# torch_linear_assignment._backend.batch_linear_assignment (src/torch_linear_assignment_cuda_kernel.cu,
# Crouse's shortest augmenting path, one thread per problem; built with TLA_BUILD_LEGACY_CUDA=1).
# In 0.1.0 the public batch_linear_assignment runs Triton on CUDA, so the compiled kernel is called
# through the package's own wrapper _batch_linear_assignment_cuda_legacy (it transposes W > T) and
# through _backend directly. Checked against
# (1) an exact optimum written here in plain torch (dynamic programming over subsets of tasks,
#     float64), by total cost, and that every matching is a valid assignment, and
# (2) scipy.optimize.linear_sum_assignment (the package's CPU path, batch_linear_assignment_cpu):
#     the matchings must be equal (random continuous costs have one optimum).
# Imported the normal way (its __init__ imports scipy, which the GPU machine has).
# Binding relied on (torch_linear_assignment_cuda.cpp PYBIND11_MODULE): batch_linear_assignment(cost)
# -> [col4row (B, W) int32, row4col (B, T) int32], cost (B, W, T) contiguous CUDA float/double, W <= T;
# has_cuda() -> True.
# `--cpu` runs the DP reference against scipy (when importable) and a brute-force check.
import itertools
import os
import sys
import traceback

# This file's name can equal the package's module name: never import it in place of the package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
import torch  # noqa: E402

NAME = "torch-linear-assignment"
CPU = "--cpu" in sys.argv


def dp_optimum(cost):
    # min over injective worker->task maps of the summed cost; cost (B, W, T) with W <= T
    B, W, T = cost.shape
    cost = cost.double()
    masks = torch.arange(1 << T)
    dp = torch.full((B, 1 << T), float("inf"), dtype=torch.float64)
    dp[:, 0] = 0
    for i in range(W):
        new = torch.full_like(dp, float("inf"))
        for j in range(T):
            free = ((masks >> j) & 1) == 0
            src = masks[free]
            cand = dp[:, src] + cost[:, i, j:j + 1]
            new[:, src | (1 << j)] = torch.minimum(new[:, src | (1 << j)], cand)
        dp = new
    return dp.min(1).values


def matching_cost(cost, match):  # match (B, W): task per worker, -1 unassigned
    assert ((match >= 0).sum(1) == min(cost.shape[1], cost.shape[2])).all(), "wrong number of assignments"
    for row in match:
        used = row[row >= 0]
        assert used.unique().numel() == used.numel(), "a task assigned twice"
    w = match.clamp(min=0)
    return (cost.double().gather(2, w[:, :, None])[:, :, 0] * (match >= 0)).sum(1)


def problems():
    torch.manual_seed(0)
    # (W, T): fewer workers, square, more workers than tasks (the wrapper transposes)
    return [torch.rand(24, w, t, dtype=torch.float64) for w, t in ((7, 10), (8, 8), (11, 8))]


def reference(costs):
    out = []
    for c in costs:
        opt = dp_optimum(c if c.shape[1] <= c.shape[2] else c.transpose(1, 2))
        out.append(opt)
    return out


def main():
    costs = problems()
    opts = reference(costs)
    # self-check of the DP against brute force on a few small problems
    small = torch.rand(3, 4, 6, dtype=torch.float64)
    brute = torch.tensor([min(sum(small[b, i, p[i]].item() for i in range(4))
                              for p in itertools.permutations(range(6), 4)) for b in range(3)],
                         dtype=torch.float64)
    assert (dp_optimum(small) - brute).abs().max().item() < 1e-12
    try:
        from scipy.optimize import linear_sum_assignment
    except ImportError:
        linear_sum_assignment = None
    scipy_match = []
    if linear_sum_assignment is not None:
        for c, opt in zip(costs, opts):
            m = torch.full(c.shape[:2], -1, dtype=torch.long)
            for b in range(c.shape[0]):
                r, k = linear_sum_assignment(c[b].numpy())
                m[b, torch.from_numpy(r)] = torch.from_numpy(k)
            assert (matching_cost(c, m) - opt).abs().max().item() < 1e-12
            scipy_match.append(m)
    if CPU:
        return True, "reference (cpu) ok (dp vs brute force%s)" % (
            ", dp vs scipy" if scipy_match else "; scipy not importable here")
    import torch_linear_assignment
    from torch_linear_assignment import _backend
    from torch_linear_assignment.assignment import _batch_linear_assignment_cuda_legacy
    assert _backend.has_cuda(), "_backend built without CUDA"
    assert scipy_match, "scipy is needed on the GPU machine (the package imports it)"
    e_cost, mism = 0.0, 0
    for c, opt, sm in zip(costs, opts, scipy_match):
        for dt in (torch.float32, torch.float64):
            m = _batch_linear_assignment_cuda_legacy(c.to("cuda", dt)).cpu()
            e_cost = max(e_cost, (matching_cost(c, m) - opt).abs().max().item())
            mism += int((m != sm).any(1).sum())
    # the binding directly: col4row / row4col are inverse maps
    c = costs[0].float().cuda()
    col4row, row4col = _backend.batch_linear_assignment(c)
    col4row, row4col = col4row.long().cpu(), row4col.long().cpu()
    inv_ok = bool((row4col.gather(1, col4row) == torch.arange(c.shape[1])).all())
    e_direct = (matching_cost(costs[0], col4row) - opts[0]).abs().max().item()
    ok = e_cost < 1e-5 and mism == 0 and inv_ok and e_direct < 1e-5
    return ok, "cost vs optimum %.2e (direct %.2e) matchings differing from scipy %d inverse maps %s (%s)" % (
        e_cost, e_direct, mism, inv_ok, torch_linear_assignment.__name__)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
