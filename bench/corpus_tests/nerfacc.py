# nerfacc 0.5.3 (nerfstudio-project/nerfacc): the CUDA kernels of nerfacc.csrc for packed rays,
# through the package's own wrappers, against plain torch in float64 (per-ray cumsum/cumprod and
# autograd through them):
#   inclusive_sum / exclusive_sum (forward and the backward=True pass), inclusive_prod_forward /
#   _backward, exclusive_prod_forward / _backward: nerfacc.inclusive_sum(x, packed_info), ...;
#   the volume-rendering weights nerfacc.render_weight_from_density(..., ray_indices=...) (exclusive
#     sum of sigma*dt) and render_weight_from_alpha (exclusive product of 1 - alpha), with gradients;
#   ray_aabb_intersect against the package's pure-torch _ray_aabb_intersect (float64).
# Imported the normal way (`import nerfacc`; its cuda/_backend.py needs rich, which the GPU machine
# has). _backend falls back to a JIT build when `from nerfacc import csrc` fails: the test asserts
# that the compiled nerfacc.csrc is the module in use. The package has no CPU kernels.
# Bindings relied on (cuda/csrc/nerfacc.cpp, scan.cu): inclusive_sum/exclusive_sum(chunk_starts
# int64, chunk_cnts int64, inputs float32 1-D, bool normalize, bool backward);
# inclusive_prod_forward/exclusive_prod_forward(starts, cnts, inputs); *_prod_backward(starts, cnts,
# inputs, outputs, grad_outputs); ray_aabb_intersect(rays_o, rays_d, aabbs, near, far, miss).
# `--cpu` runs only the references and their self-checks.
import os
import sys
import traceback

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402

NAME = "nerfacc"
CPU_ONLY = "--cpu" in sys.argv


def chunks():
    torch.manual_seed(0)
    cnts = torch.randint(1, 40, (37,))
    cnts[5] = 0  # an empty ray
    cnts[7] = 1
    starts = cnts.cumsum(0) - cnts
    return starts, cnts


def scan_ref(x, starts, cnts, kind):  # x float64 1-D with autograd; per-chunk scans
    out = []
    for s, c in zip(starts.tolist(), cnts.tolist()):
        seg = x[s:s + c]
        if kind == "inclusive_sum":
            out.append(seg.cumsum(0))
        elif kind == "exclusive_sum":
            out.append(torch.cat([seg.new_zeros(1), seg[:-1]]).cumsum(0)[:c])
        elif kind == "inclusive_prod":
            out.append(seg.cumprod(0))
        else:
            out.append(torch.cat([seg.new_ones(1), seg[:-1]]).cumprod(0)[:c])
    return torch.cat(out)


def weights_ref(t0, t1, sigmas, starts, cnts):
    sdt = sigmas * (t1 - t0)
    trans = torch.exp(-scan_ref(sdt, starts, cnts, "exclusive_sum"))
    alphas = 1 - torch.exp(-sdt)
    return trans * alphas


def samples(starts, cnts):
    torch.manual_seed(1)
    n = int(cnts.sum())
    ray_ids = torch.repeat_interleave(torch.arange(len(cnts)), cnts)
    t0 = torch.rand(n) * 4
    t1 = t0 + torch.rand(n) * 0.2 + 0.01
    sigmas = torch.rand(n) * 3
    x = torch.rand(n) * 1.5 + 0.25  # factors for the products, around 1
    return n, ray_ids, t0, t1, sigmas, x


def main():
    starts, cnts = chunks()
    n, ray_ids, t0, t1, sigmas, x = samples(starts, cnts)
    g = torch.randn(n)
    refs = {}
    for kind in ("inclusive_sum", "exclusive_sum", "inclusive_prod", "exclusive_prod"):
        xr = x.double().requires_grad_()
        y = scan_ref(xr, starts, cnts, kind)
        y.backward(g.double())
        refs[kind] = (y.detach(), xr.grad)
    # self-checks: the docstring examples of nerfacc.scan
    ex = torch.arange(1, 10, dtype=torch.float64)
    s3, c3 = torch.tensor([0, 2, 5]), torch.tensor([2, 3, 4])
    assert scan_ref(ex, s3, c3, "inclusive_sum").tolist() == [1, 3, 3, 7, 12, 6, 13, 21, 30]
    assert scan_ref(ex, s3, c3, "exclusive_prod").tolist() == [1, 1, 1, 3, 12, 1, 6, 42, 336]
    sr = sigmas.double().requires_grad_()
    w_ref = weights_ref(t0.double(), t1.double(), sr, starts, cnts)
    gw = torch.randn(n)
    w_ref.backward(gw.double())
    assert (w_ref >= 0).all() and w_ref.sum() > 1
    if CPU_ONLY:
        return True, "reference (cpu) %d samples in %d rays (no cpu kernel in the package)" % (n, len(cnts))

    import nerfacc
    import nerfacc.csrc
    from nerfacc.cuda import _backend
    from nerfacc.grid import _ray_aabb_intersect
    assert _backend._C is nerfacc.csrc, "nerfacc is not using its compiled nerfacc.csrc"
    dev = "cuda"
    packed = torch.stack([starts, cnts], -1).to(dev)
    fns = {"inclusive_sum": nerfacc.inclusive_sum, "exclusive_sum": nerfacc.exclusive_sum,
           "inclusive_prod": nerfacc.inclusive_prod, "exclusive_prod": nerfacc.exclusive_prod}
    errs = {}
    for kind, fn in fns.items():
        xc = x.to(dev).clone().requires_grad_()
        y = fn(xc, packed)
        y.backward(g.to(dev))
        y_ref, g_ref = refs[kind]
        scale = y_ref.abs().max().item()
        errs[kind] = (y.detach().cpu().double() - y_ref).abs().max().item() / scale
        errs[kind + "_grad"] = (xc.grad.cpu().double() - g_ref).abs().max().item() / g_ref.abs().max().item()
    # rendering weights from density (ray_indices -> pack_info on the GPU) and from alpha
    sc = sigmas.to(dev).clone().requires_grad_()
    w, trans, alphas = nerfacc.render_weight_from_density(t0.to(dev), t1.to(dev), sc,
                                                          ray_indices=ray_ids.to(dev), n_rays=len(cnts))
    w.backward(gw.to(dev))
    errs["weights"] = (w.detach().cpu().double() - w_ref.detach()).abs().max().item()
    errs["weights_grad"] = (sc.grad.cpu().double() - sr.grad).abs().max().item() / sr.grad.abs().max().item()
    wa, _ = nerfacc.render_weight_from_alpha(alphas.detach(), packed_info=packed)
    errs["weights_alpha"] = (wa.cpu().double() - w_ref.detach()).abs().max().item()
    # ray / box intersection
    torch.manual_seed(2)
    ro = torch.randn(300, 3) * 2
    rd = torch.nn.functional.normalize(torch.randn(300, 3), dim=-1)
    boxes = torch.tensor([[-1.0, -1.0, -1.0, 1.0, 1.0, 1.0], [0.2, -0.5, 0.1, 1.4, 0.9, 1.7]])
    tmin, tmax, hits = nerfacc.ray_aabb_intersect(ro.to(dev), rd.to(dev), boxes.to(dev))
    rmin, rmax, rhits = _ray_aabb_intersect(ro.double(), rd.double(), boxes.double())
    hits_bad = int((hits.cpu() != rhits).sum())
    h = rhits & hits.cpu()
    errs["aabb_t"] = max((tmin.cpu().double()[h] - rmin[h]).abs().max().item(),
                         (tmax.cpu().double()[h] - rmax[h]).abs().max().item())
    # fp32 kernels: values 1e-5 (relative for the scans), gradients 1e-4 of their largest magnitude
    tol = {k: (1e-4 if k.endswith("_grad") else 1e-5) for k in errs}
    tol["aabb_t"] = 1e-4
    ok = all(errs[k] <= tol[k] for k in errs) and hits_bad == 0 and int(rhits.sum()) > 50
    return ok, " ".join("%s %.1e" % kv for kv in errs.items()) + " aabb_hits %d mismatch %d" % (
        int(rhits.sum()), hits_bad)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
