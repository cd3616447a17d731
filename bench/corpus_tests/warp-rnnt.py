# warp-rnnt 0.7.0 (PyPI sdist; import warp_rnnt, compiled module warp_rnnt._C): the CUDA
# RNN-Transducer loss and its gradient in the three layouts the package has: dense
# (core.rnnt_loss on (N, T, U+1, V), core.cu), dense with gather=True (the kernel on the gathered
# (N, T, U+1, 2) blank/label log probs, core_gather.cu) and compact (core.rnnt_loss_compact /
# rnnt_loss_compact_backward on (sum T*(U+1), V), core_compact.cu), all through
# warp_rnnt.rnnt_loss and autograd, against the transducer's forward recursion written in plain
# torch (float64, log space; the reference of bench/compat_tests/warp_rnnt_loss.py) and autograd
# through it. Imported the normal way; its __init__ reads its version with pkg_resources, so where
# that import fails (setuptools without pkg_resources) warp_rnnt/_C*.so is loaded by its file and
# the dense kernel is called directly (the wrapper-level checks are then skipped and say so).
# Bindings relied on (binding.cpp PYBIND11_MODULE): rnnt_loss(xs, ys, xn, yn, blank=0,
# fastemit_lambda=0.0) -> (costs (N,), grads like xs); xs float32 CUDA, ys/xn/yn int32 CUDA.
# `--cpu` runs only the reference and its self-checks (the package has no CPU kernel).
import glob
import importlib.util
import os
import sys
import traceback

# This file's name can equal the package's module name: never import it in place of the package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
import torch  # noqa: E402

NAME = "warp-rnnt"
CPU = "--cpu" in sys.argv


def rnnt_ref(lp, ys, xn, yn, blank=0):  # lp (N, T, U+1, V) log probabilities
    costs = []
    for n in range(lp.shape[0]):
        T, U = int(xn[n]), int(yn[n])
        alpha = [[None] * (U + 1) for _ in range(T)]
        for t in range(T):
            for u in range(U + 1):
                if t == 0 and u == 0:
                    alpha[t][u] = lp.new_zeros(())
                    continue
                terms = []
                if t > 0:
                    terms.append(alpha[t - 1][u] + lp[n, t - 1, u, blank])
                if u > 0:
                    terms.append(alpha[t][u - 1] + lp[n, t, u - 1, int(ys[n, u - 1])])
                alpha[t][u] = torch.logsumexp(torch.stack(terms), 0)
        costs.append(-(alpha[T - 1][U] + lp[n, T - 1, U, blank]))
    return torch.stack(costs)


def to_compact(lp, ys, xn, yn):
    rows = [lp[n, :int(xn[n]), :int(yn[n]) + 1].reshape(-1, lp.shape[-1]) for n in range(lp.shape[0])]
    labels = [ys[n, :int(yn[n])] for n in range(lp.shape[0])]
    return torch.cat(rows), torch.cat(labels)


def load_core():
    try:
        import warp_rnnt
        return warp_rnnt, warp_rnnt._C
    except ImportError as e:
        if "pkg_resources" not in str(e) and "warp_rnnt" not in str(e):
            raise
        so = [f for p in sys.path for f in glob.glob(os.path.join(p or ".", "warp_rnnt", "_C*.so"))]
        if not so:
            raise
        spec = importlib.util.spec_from_file_location("_C", so[0])
        core = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(core)
        print("note: import warp_rnnt failed (%s); loaded %s by its file" % (e, so[0]))
        return None, core


def main():
    torch.manual_seed(0)
    N, T, U, V = 3, 12, 5, 6
    logits = torch.randn(N, T, U + 1, V, dtype=torch.float64)
    lp = torch.log_softmax(logits, -1).requires_grad_()
    ys = torch.randint(1, V, (N, U), dtype=torch.int32)
    xn = torch.tensor([12, 10, 7], dtype=torch.int32)
    yn = torch.tensor([5, 3, 4], dtype=torch.int32)
    ref = rnnt_ref(lp, ys, xn, yn)
    ref.sum().backward()
    ref, ref_grad = ref.detach(), lp.grad
    # self-checks: costs are positive; with T = 1 and U = 0 the cost is -log p(blank)
    assert (ref > 0).all() and torch.isfinite(ref_grad).all()
    one = rnnt_ref(lp.detach()[:1, :1, :1], ys[:1, :0], torch.tensor([1]), torch.tensor([0]))
    assert abs(one.item() + lp[0, 0, 0, 0].item()) < 1e-12
    # outside each sample's (T_n, U_n + 1) window the gradient is zero
    assert ref_grad[2, 7:].abs().max().item() == 0 and ref_grad[1, :, 4:].abs().max().item() == 0
    if CPU:
        return True, "reference (cpu) costs %s" % [round(c, 4) for c in ref.tolist()]
    pkg, core = load_core()
    dev = dict(ys=ys.cuda(), xn=xn.cuda(), yn=yn.cuda())
    costs, grads = core.rnnt_loss(xs=lp.detach().float().cuda(), blank=0, fastemit_lambda=0.0, **dev)
    errs = {"dense": ((costs.cpu().double() - ref).abs().max().item(),
                      (grads.cpu().double() - ref_grad).abs().max().item())}
    if pkg is not None:
        for mode in ("gather", "compact", "mean"):
            x = lp.detach().float().cuda().requires_grad_()
            if mode == "compact":
                xc, yc = to_compact(x, dev["ys"], xn, yn)
                xc = xc.detach().requires_grad_()
                c = pkg.rnnt_loss(xc, yc.contiguous(), dev["xn"], dev["yn"], compact=True)
                c.sum().backward()
                g, want_g = xc.grad, to_compact(ref_grad, ys, xn, yn)[0]
                want_c = ref
            elif mode == "gather":
                c = pkg.rnnt_loss(x, dev["ys"], dev["xn"], dev["yn"], gather=True)
                c.sum().backward()
                g, want_g, want_c = x.grad, ref_grad, ref
            else:
                c = pkg.rnnt_loss(x, dev["ys"], dev["xn"], dev["yn"], reduction="mean")
                c.backward()
                g, want_g, want_c = x.grad, ref_grad / N, ref.mean()
            errs[mode] = ((c.detach().cpu().double() - want_c).abs().max().item(),
                          (g.cpu().double() - want_g).abs().max().item())
    ok = all(ec < 1e-4 and eg < 1e-4 for ec, eg in errs.values())
    msg = " ".join("%s cost %.2e grad %.2e" % (k, ec, eg) for k, (ec, eg) in errs.items())
    if pkg is None:
        msg += " (wrapper checks skipped: loaded by file)"
    return ok, msg


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
