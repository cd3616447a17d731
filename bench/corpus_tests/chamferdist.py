# chamferdist 1.0.3 (krrish94/chamferdist, pytorch3d's KNN): the CUDA kernels
# chamferdist._C.knn_points_idx (forward: K nearest squared distances and indices) and
# _C.knn_points_backward (gradient of the distances), through the package's knn_points and
# ChamferDistance, against brute-force nearest neighbours from torch.cdist in float64 and autograd
# through the gathered distances. The package's CPU kernels (same bindings on CPU tensors) are
# checked against the same reference. Imported the normal way (`import chamferdist`).
# Bindings relied on (ext.cpp / knn.h):
#   knn_points_idx(p1, p2, lengths1, lengths2, int K, int version) -> (idx int64, dists)
#   knn_points_backward(p1, p2, lengths1, lengths2, idxs, grad_dists) -> (grad_p1, grad_p2)
# `--cpu` runs the reference, its self-checks and (when the package imports here) the CPU kernel.
import os
import sys
import traceback

# this file's folder holds a file named like the package: keep it off the import path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402

NAME = "chamferdist"
CPU_ONLY = "--cpu" in sys.argv


def ref_knn(p1, p2, K):  # float64 brute force: squared distances (N, P1, K) and indices
    d = torch.cdist(p1.double(), p2.double()).pow(2)
    dists, idx = d.topk(K, dim=2, largest=False, sorted=True)
    return dists, idx


def ref_grad(p1, p2, idx, g):  # autograd of sum(g * |p1 - p2[idx]|^2) with idx fixed
    a = p1.double().clone().requires_grad_()
    b = p2.double().clone().requires_grad_()
    nn = torch.stack([b[n][idx[n]] for n in range(b.shape[0])])  # (N, P1, K, D)
    d = (a[:, :, None, :] - nn).pow(2).sum(-1)
    (d * g.double()).sum().backward()
    return a.grad, b.grad


def check(knn_points, dev, tag):
    torch.manual_seed(0)
    N, P1, P2, D, K = 2, 300, 257, 3, 4
    p1 = torch.rand(N, P1, D, device=dev).requires_grad_()
    p2 = torch.rand(N, P2, D, device=dev).requires_grad_()
    out = knn_points(p1, p2, K=K)
    rd, ri = ref_knn(p1.detach().cpu(), p2.detach().cpu(), K)
    e_d = (out.dists.detach().cpu().double() - rd).abs().max().item()
    idx_agree = (out.idx.cpu() == ri).float().mean().item()
    g = torch.randn(N, P1, K)
    out.dists.backward(g.to(dev))
    ga, gb = ref_grad(p1.detach().cpu(), p2.detach().cpu(), out.idx.detach().cpu(), g)
    e_g = max((p1.grad.cpu().double() - ga).abs().max().item(),
              (p2.grad.cpu().double() - gb).abs().max().item())
    # fp32 squared distances in [0, 3]: 1e-5 absolute; indices may differ only on near-ties
    ok = e_d < 1e-5 and idx_agree > 0.995 and e_g < 1e-4
    return ok, "%s dists %.2e idx %.4f grad %.2e" % (tag, e_d, idx_agree, e_g)


def main():
    # reference self-check: topk of cdist equals an explicit loop for a few points
    torch.manual_seed(1)
    a, b = torch.rand(1, 5, 3), torch.rand(1, 7, 3)
    rd, ri = ref_knn(a, b, 2)
    for i in range(5):
        d = [((a[0, i].double() - b[0, j].double()) ** 2).sum().item() for j in range(7)]
        order = sorted(range(7), key=lambda j: d[j])[:2]
        assert ri[0, i].tolist() == order and abs(rd[0, i, 0].item() - d[order[0]]) < 1e-12
    msgs = []
    try:
        import chamferdist
        from chamferdist.chamfer import knn_points
    except ImportError as e:
        if not CPU_ONLY:
            raise
        return True, "reference (cpu) ok; cpu kernel not checked (package not importable: %s)" % e
    ok, m = check(knn_points, "cpu", "cpu-kernel")
    msgs.append(m)
    if CPU_ONLY:
        return ok, "reference (cpu) " + " ".join(msgs)
    ok2, m = check(knn_points, "cuda", "cuda")
    msgs.append(m)
    # the module: bidirectional Chamfer sum against the reference
    torch.manual_seed(2)
    s, t = torch.rand(3, 200, 3, device="cuda"), torch.rand(3, 150, 3, device="cuda")
    cd = chamferdist.ChamferDistance()(s, t, bidirectional=True, batch_reduction="sum",
                                       point_reduction="sum").item()
    r = (ref_knn(s.cpu(), t.cpu(), 1)[0].sum() + ref_knn(t.cpu(), s.cpu(), 1)[0].sum()).item()
    e_cd = abs(cd - r) / r
    msgs.append("chamfer rel %.2e" % e_cd)
    return ok and ok2 and e_cd < 1e-5, " ".join(msgs)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
