# inplace-abn 1.1.0 (import inplace_abn; compiled module inplace_abn._backend): the in-place
# activated batch norm, i.e. the CUDA kernels statistics / forward / backward_reduce /
# backward_train (training) and backward_test (eval) plus reduce_statistics (CUDA only), through
# inplace_abn.functions.inplace_abn with leaky_relu and elu, against BatchNorm + LeakyReLU/ELU in
# plain torch (float64, weight |w| + eps as the package defines it: y = act((x - mean) / sqrt(var +
# eps) * (|w| + eps) + b); gradients of x, w, b by autograd; running mean/var update checked too)
# and against the package's own CPU kernels (inplace_abn_cpu.cpp, same binding).
# Imported the normal way. Bindings relied on (src/inplace_abn.cpp PYBIND11_MODULE): statistics(x)
# -> (mean, biased var, count (1,) int64); reduce_statistics(all_mean (N,C), all_var (N,C),
# all_count (N,1) int64) under WITH_CUDA; forward / backward_* dispatching on x.is_cuda().
# `--cpu` runs the reference self-checks and, when the package imports, its CPU kernels.
import os
import sys
import traceback

# This file's name can equal the package's module name: never import it in place of the package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NAME = "inplace-abn"
CPU = "--cpu" in sys.argv
EPS, MOM = 1e-5, 0.1


def act(y, activation, p):
    return F.leaky_relu(y, p) if activation == "leaky_relu" else F.elu(y, p)


def ref_abn(x, w, b, rm, rv, training, activation, p):
    xr, wr, br = (t.double().clone().requires_grad_() for t in (x, w, b))
    rm, rv = rm.double().clone(), rv.double().clone()
    y = act(F.batch_norm(xr, rm, rv, wr.abs() + EPS, br, training, MOM, EPS), activation, p)
    return xr, wr, br, y, rm, rv


def run(abn_fn, x, w, b, rm, rv, g, training, activation, p):
    x0, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    rm, rv = rm.clone(), rv.clone()
    y = abn_fn(x0 * 1, wr, br, rm, rv, training, MOM, EPS, activation, p)  # in place: not on a leaf
    y.backward(g)
    return [y.detach(), x0.grad, wr.grad, br.grad, rm, rv]


def inputs():
    torch.manual_seed(0)
    C = 6
    x = torch.randn(4, C, 9, 7) * 2 + torch.linspace(-1, 1, C)[None, :, None, None]
    w = torch.randn(C)  # mixed signs: the package uses |w| + eps
    b = torch.randn(C)
    rm, rv = torch.randn(C) * 0.1, torch.rand(C) + 0.5
    g = torch.randn_like(x)
    return x, w, b, rm, rv, g


CASES = [(True, "leaky_relu", 0.01), (True, "elu", 1.0), (False, "leaky_relu", 0.2)]


def references(x, w, b, rm, rv, g):
    out = []
    for training, activation, p in CASES:
        xr, wr, br, y, rm2, rv2 = ref_abn(x, w, b, rm, rv, training, activation, p)
        y.backward(g.double())
        out.append([y.detach(), xr.grad, wr.grad, br.grad, rm2, rv2])
    return out


def err(got, want):
    return max((a.double().cpu() - r).abs().max().item() / (1 + r.abs().max().item()) for a, r in zip(got, want))


def main():
    x, w, b, rm, rv, g = inputs()
    refs = references(x, w, b, rm, rv, g)
    # self-checks: the training output per channel of (y before activation - b) / (|w|+eps) has
    # zero mean and unit (biased) variance; the running var takes the unbiased variance
    xd = x.double()
    pre = F.batch_norm(xd, None, None, w.double().abs() + EPS, b.double(), True, MOM, EPS)
    z = (pre - b.double()[None, :, None, None]) / (w.double().abs() + EPS)[None, :, None, None]
    assert z.mean((0, 2, 3)).abs().max().item() < 1e-12
    assert (z.var((0, 2, 3), unbiased=False) - xd.var((0, 2, 3), unbiased=False) /
            (xd.var((0, 2, 3), unbiased=False) + EPS)).abs().max().item() < 1e-9
    want_rv = (1 - MOM) * rv.double() + MOM * xd.var((0, 2, 3), unbiased=True)
    assert (refs[0][5] - want_rv).abs().max().item() < 1e-12
    try:
        from inplace_abn import functions, _backend
    except ImportError as e:
        if CPU:
            return True, "reference (cpu) ok; package not importable here (%s)" % e
        raise
    e_cpu = max(err(run(functions.inplace_abn, x, w, b, rm, rv, g, *c), r) for c, r in zip(CASES, refs))
    if CPU:
        return e_cpu < 1e-4, "reference (cpu) cpu-kernel vs ref %.2e" % e_cpu
    dev = [t.cuda() for t in (x, w, b, rm, rv, g)]
    e_gpu = max(err(run(functions.inplace_abn, *dev, *c), r) for c, r in zip(CASES, refs))
    # reduce_statistics (the multi-GPU reduction, a CUDA kernel): two halves of a batch = the batch
    xc = dev[0]
    parts = [_backend.statistics(xc[:1].contiguous()), _backend.statistics(xc[1:].contiguous())]
    m, v, n = _backend.reduce_statistics(torch.stack([p[0] for p in parts]), torch.stack([p[1] for p in parts]),
                                         torch.stack([p[2] for p in parts]))
    e_red = max((m.double().cpu() - xd.mean((0, 2, 3))).abs().max().item(),
                (v.double().cpu() - xd.var((0, 2, 3), unbiased=False)).abs().max().item())
    ok = e_gpu < 1e-4 and e_cpu < 1e-4 and e_red < 1e-4 and int(n.reshape(-1)[0]) == xc.numel() // xc.shape[1]
    return ok, "gpu vs ref %.2e cpu-kernel vs ref %.2e (out, grads, running stats; rel) reduce_statistics %.2e" % (
        e_gpu, e_cpu, e_red)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
