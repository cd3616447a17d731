# warp-rnnt (1ytic/warp-rnnt pytorch_binding): the CUDA RNN-Transducer loss and its gradient
# against the transducer's forward recursion written in plain torch (float64, log space) and
# autograd through it. The extension is loaded by its file: the package's __init__ reads its
# own version with pkg_resources, which a plain environment may lack.
# `--cpu` runs only the reference (a machine without a GPU checks that part).
import glob
import importlib.util
import os
import sys
import torch


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


torch.manual_seed(0)
N, T, U, V = 3, 12, 5, 6
logits = torch.randn(N, T, U + 1, V, dtype=torch.float64)
lp = torch.log_softmax(logits, -1).requires_grad_()
ys = torch.randint(1, V, (N, U), dtype=torch.int32)
xn = torch.tensor([12, 10, 7], dtype=torch.int32)
yn = torch.tensor([5, 3, 4], dtype=torch.int32)
ref = rnnt_ref(lp, ys, xn, yn)
ref.sum().backward()
assert (ref > 0).all() and torch.isfinite(lp.grad).all()
if "--cpu" in sys.argv:
    print("PASS warp_rnnt reference (cpu) costs %s" % [round(c, 4) for c in ref.tolist()])
    sys.exit(0)

so = [f for p in sys.path for f in glob.glob(os.path.join(p or ".", "warp_rnnt", "_C*.so"))]
spec = importlib.util.spec_from_file_location("_C", so[0])
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
costs, grads = core.rnnt_loss(xs=lp.detach().float().cuda(), ys=ys.cuda(), xn=xn.cuda(), yn=yn.cuda(),
                              blank=0, fastemit_lambda=0.0)
err_cost = (costs.cpu().double() - ref.detach()).abs().max().item()
err_grad = (grads.cpu().double() - lp.grad).abs().max().item()
ok = err_cost < 1e-4 and err_grad < 1e-4
print("%s warp_rnnt cost %.2e grad %.2e" % ("PASS" if ok else "FAIL", err_cost, err_grad))
sys.exit(0 if ok else 1)
