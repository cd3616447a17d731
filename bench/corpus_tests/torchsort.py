# torchsort 0.1.10: soft_rank / soft_sort (l2 and kl regularisation) on CUDA, i.e. the
# torchsort.isotonic_cuda kernels isotonic_l2 / isotonic_kl and their *_backward, against
# (1) a plain-torch float64 reference written here (pool-adjacent-violators isotonic regression
#     with the same sort/dual formulas as torchsort/ops.py, gradient by autograd through it), and
# (2) the package's own CPU kernels (torchsort.isotonic_cpu) for values and gradients.
# Imported the normal way (`import torchsort`; ops.py swaps in a raising stub when
# isotonic_cuda is missing, so a wheel without the CUDA module fails here).
# Bindings relied on (isotonic_cuda.cu PYBIND11_MODULE): isotonic_l2(y), isotonic_kl(y, w),
# isotonic_l2_backward(s, sol, grad), isotonic_kl_backward(s, sol, grad); float/double/half.
# `--cpu` runs the reference self-checks and, when the package imports, its CPU kernel.
import os
import sys
import traceback

# This file's name can equal the package's module name: never import it in place of the package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
import torch  # noqa: E402

NAME = "torchsort"
CPU = "--cpu" in sys.argv


def pav_decreasing(y, block_value):
    # argmin over v_1 >= ... >= v_n; blocks merged while they violate the order.
    # block_value(lo, hi) is a torch expression, so autograd gives the gradient.
    blocks = []  # (lo, hi, value)
    for i in range(y.shape[0]):
        lo, hi, val = i, i + 1, block_value(i, i + 1)
        while blocks and blocks[-1][2].item() <= val.item():
            lo = blocks.pop()[0]
            val = block_value(lo, hi)
        blocks.append((lo, hi, val))
    return torch.cat([v.expand(hi - lo) for lo, hi, v in blocks])


def iso_l2(y):  # argmin ||v - y||^2, v decreasing
    return torch.stack([pav_decreasing(r, lambda lo, hi, r=r: r[lo:hi].mean()) for r in y])


def iso_kl(y, w):  # argmin <exp(y - v), 1> + <exp(w), v>, v decreasing
    return torch.stack([
        pav_decreasing(r, lambda lo, hi, r=r, q=q: torch.logsumexp(r[lo:hi], 0) - torch.logsumexp(q[lo:hi], 0))
        for r, q in zip(y, w)])


def ref_soft_rank(x, reg, eps):
    n = x.shape[1]
    w = torch.arange(n, 0, -1, dtype=x.dtype).expand_as(x)
    s, perm = torch.sort(x / eps, descending=True)
    inv = torch.argsort(perm, 1)
    if reg == "l2":
        return (s - iso_l2(s - w)).gather(1, inv)
    return torch.exp((s - iso_kl(s, torch.log(w))).gather(1, inv))


def ref_soft_sort(x, reg, eps):
    n = x.shape[1]
    w = torch.arange(n, 0, -1, dtype=x.dtype).expand_as(x) / eps
    s, _ = torch.sort(-x, descending=True)
    sol = iso_l2(w - s) if reg == "l2" else iso_kl(w, s)
    return -(w - sol)


def ref_all(x, g):
    out = {}
    for fn, f in (("rank", ref_soft_rank), ("sort", ref_soft_sort)):
        for reg in ("l2", "kl"):
            xr = x.clone().requires_grad_()
            y = f(xr, reg, 0.5)
            (y * g).sum().backward()
            out[(fn, reg)] = (y.detach(), xr.grad)
    return out


def pkg_all(torchsort, x, g):
    out = {}
    for fn, f in (("rank", torchsort.soft_rank), ("sort", torchsort.soft_sort)):
        for reg in ("l2", "kl"):
            xr = x.clone().requires_grad_()
            y = f(xr, regularization=reg, regularization_strength=0.5)
            (y * g).sum().backward()
            out[(fn, reg)] = (y.detach(), xr.grad)
    return out


def err(a, b):
    return max(max((a[k][i].double().cpu() - b[k][i].double().cpu()).abs().max().item() for i in (0, 1))
               for k in a)


def main():
    torch.manual_seed(0)
    x = torch.randn(4, 12, dtype=torch.float64) * 2
    x[1, 3] = x[1, 7]  # a tie
    g = torch.randn(4, 12, dtype=torch.float64)
    ref = ref_all(x, g)
    # self-checks: with a tiny strength soft_rank is the hard rank and soft_sort the sorted values
    hard = ref_soft_rank(torch.randn(4, 5, dtype=torch.float64), "l2", 1e-4)
    assert torch.equal(torch.sort(hard, 1).values, torch.arange(1, 6, dtype=torch.float64).expand(4, 5))
    xs = torch.randn(4, 9, dtype=torch.float64)
    assert (ref_soft_sort(xs, "l2", 1e-4) - torch.sort(xs, 1).values).abs().max().item() < 1e-9
    # soft values keep the total (sum of ranks n(n+1)/2; sum of sorted values for l2)
    assert (ref[("rank", "l2")][0].sum(1) - 78).abs().max().item() < 1e-9
    assert (ref[("sort", "l2")][0].sum(1) - x.sum(1)).abs().max().item() < 1e-9
    try:
        import torchsort
    except ImportError as e:
        if CPU:
            return True, "reference (cpu) ok; package not importable here (%s)" % e
        raise
    cpu64 = pkg_all(torchsort, x, g)
    cpu32 = pkg_all(torchsort, x.float(), g.float())
    e_cpu = err(cpu64, ref)
    if CPU:
        return e_cpu < 1e-6, "reference (cpu) cpu-kernel vs ref %.2e" % e_cpu
    gpu64 = pkg_all(torchsort, x.cuda(), g.cuda())
    gpu32 = pkg_all(torchsort, x.float().cuda(), g.float().cuda())
    e64, e32 = err(gpu64, ref), err(gpu32, cpu32)
    ok = e64 < 1e-6 and e32 < 1e-4 and e_cpu < 1e-6
    return ok, "gpu64 vs ref %.2e gpu32 vs cpu-kernel %.2e cpu-kernel vs ref %.2e (values+grads)" % (e64, e32, e_cpu)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
