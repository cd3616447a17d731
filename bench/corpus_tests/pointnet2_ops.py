# pointnet2_ops 3.0.0 (erikwijmans/Pointnet2_PyTorch, pointnet2_ops_lib): the CUDA kernels of
# pointnet2_ops._ext, each against plain torch (float64 where it helps):
#   furthest_point_sampling: the greedy property (each pick attains the largest distance to the
#     picks before it) and the same picks as a torch loop of the kernel's algorithm;
#   ball_query: the first nsample points inside the radius, padded with the first (torch loop);
#   group_points / group_points_grad, gather_points / gather_points_grad: torch indexing + autograd;
#   three_nn: the three nearest squared distances and indices (torch.cdist + topk);
#   three_interpolate / three_interpolate_grad: weighted gather + autograd.
# The package has no CPU kernels (its .cpp wrappers assert "CPU not supported").
# Imported the normal way (`from pointnet2_ops import _ext, pointnet2_utils`).
# Bindings relied on (_ext-src/src/*.cpp): furthest_point_sampling(points (B,N,3), int m) -> int32
# (B,m); ball_query(new_xyz (B,M,3), xyz (B,N,3), float radius, int nsample) -> int32 (B,M,ns);
# group_points(points (B,C,N), idx int32 (B,M,ns)) -> (B,C,M,ns); group_points_grad(g, idx, int n);
# gather_points(points (B,C,N), idx int32 (B,M)) -> (B,C,M); gather_points_grad(g, idx, int n);
# three_nn(unknown (B,n,3), known (B,m,3)) -> [dist2 (B,n,3), idx int32]; three_interpolate(
# points (B,C,m), idx (B,n,3), weight (B,n,3)) -> (B,C,n); three_interpolate_grad(g, idx, w, int m).
# `--cpu` runs only the references and their self-checks.
import os
import sys
import traceback

# this file's folder holds a file named like the package: keep it off the import path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402

NAME = "pointnet2_ops"
CPU_ONLY = "--cpu" in sys.argv


def fps_ref(xyz, m):  # the kernel's algorithm in torch: start at 0, keep min sq. distance, argmax
    B, N, _ = xyz.shape
    out = torch.zeros(B, m, dtype=torch.long)
    for b in range(B):
        temp = torch.full((N,), 1e10, dtype=xyz.dtype)
        old = 0
        for j in range(1, m):
            d = (xyz[b] - xyz[b, old]).pow(2).sum(-1)
            temp = torch.minimum(temp, d)
            old = int(temp.argmax())
            out[b, j] = old
    return out


def fps_greedy_gap(xyz, idx):  # max over picks of (best min-distance - the pick's min-distance)
    gap = 0.0
    for b in range(xyz.shape[0]):
        x = xyz[b].double()
        temp = torch.full((x.shape[0],), float("inf"), dtype=torch.float64)
        for j in range(1, idx.shape[1]):
            temp = torch.minimum(temp, (x - x[int(idx[b, j - 1])]).pow(2).sum(-1))
            gap = max(gap, (temp.max() - temp[int(idx[b, j])]).item())
    return gap


def ball_query_ref(new_xyz, xyz, radius, ns):
    d2 = torch.cdist(new_xyz.double(), xyz.double()).pow(2)
    B, M, N = d2.shape
    out = torch.zeros(B, M, ns, dtype=torch.long)
    for b in range(B):
        for j in range(M):
            inside = torch.nonzero(d2[b, j] < radius * radius).flatten()[:ns]
            if len(inside):
                out[b, j, :] = inside[0]
                out[b, j, :len(inside)] = inside
    return out, (d2 - radius * radius).abs().min().item()


def inputs():
    torch.manual_seed(0)
    B, N, M, C, ns = 2, 512, 64, 5, 16
    xyz = torch.rand(B, N, 3) + 0.1  # away from the origin: the FPS kernel skips |p|^2 <= 1e-3
    feats = torch.randn(B, C, N)
    return B, N, M, C, ns, xyz, feats


def main():
    B, N, M, C, ns, xyz, feats = inputs()
    radius = 0.2
    fps_r = fps_ref(xyz, M)
    assert fps_greedy_gap(xyz, fps_r) < 1e-6 and len(set(fps_r[0].tolist())) == M
    centers = torch.stack([xyz[b, fps_r[b]] for b in range(B)])
    bq_r, margin = ball_query_ref(centers, xyz, radius, ns)
    assert margin > 1e-6, margin  # no point so near the sphere that fp32 rounding (~1e-8 here) could flip it
    d_members = torch.stack([torch.cdist(centers[b].double(), xyz[b].double()).gather(1, bq_r[b])
                             for b in range(B)])
    assert (d_members < radius).all() and (bq_r[:, :, 1:] >= bq_r[:, :, :1]).all()
    if CPU_ONLY:
        return True, "reference (cpu) fps/ball_query/self-checks ok (no cpu kernel in the package)"

    from pointnet2_ops import _ext, pointnet2_utils
    dev = "cuda"
    errs = {}
    fps = pointnet2_utils.furthest_point_sample(xyz.to(dev).contiguous(), M).cpu().long()
    errs["fps_gap"] = fps_greedy_gap(xyz, fps)
    fps_same = (fps == fps_r).float().mean().item()
    ok = errs["fps_gap"] < 1e-5 and fps_same > 0.5 and (fps[:, 0] == 0).all().item()

    bq = _ext.ball_query(centers.to(dev).contiguous(), xyz.to(dev).contiguous(), radius, ns)
    bq_bad = int((bq.cpu().long() != bq_r).sum())
    ok = ok and bq.dtype == torch.int32 and bq_bad == 0

    # grouping and its gradient
    f = feats.to(dev).clone().requires_grad_()
    grouped = pointnet2_utils.grouping_operation(f, bq)
    fr = feats.double().requires_grad_()
    gref = torch.stack([fr[b][:, bq_r[b]] for b in range(B)])  # (B, C, M, ns)
    errs["group"] = (grouped.detach().cpu().double() - gref.detach()).abs().max().item()
    g = torch.randn(B, C, M, ns)
    gref.backward(g.double())
    gg = _ext.group_points_grad(g.to(dev).contiguous(), bq, N)
    errs["group_grad"] = (gg.cpu().double() - fr.grad).abs().max().item()

    # gather and its gradient
    idx = fps.to(dev).int().contiguous()
    gat = _ext.gather_points(feats.to(dev).contiguous(), idx)
    fr = feats.double().requires_grad_()
    gat_r = torch.stack([fr[b][:, fps[b]] for b in range(B)])
    errs["gather"] = (gat.cpu().double() - gat_r.detach()).abs().max().item()
    g = torch.randn(B, C, M)
    gat_r.backward(g.double())
    ggat = _ext.gather_points_grad(g.to(dev).contiguous(), idx, N)
    errs["gather_grad"] = (ggat.cpu().double() - fr.grad).abs().max().item()

    # three_nn and three_interpolate (+ gradient): interpolate the centers' features to all points
    known = centers
    dist2, nn_idx = _ext.three_nn(xyz.to(dev).contiguous(), known.to(dev).contiguous())
    d_r, i_r = torch.cdist(xyz.double(), known.double()).pow(2).topk(3, dim=2, largest=False)
    errs["three_nn"] = (dist2.cpu().double() - d_r).abs().max().item()
    nn_same = (nn_idx.cpu().long() == i_r).float().mean().item()
    w = 1.0 / (dist2 + 1e-8)
    w = (w / w.sum(2, keepdim=True)).contiguous()
    kf = torch.randn(B, C, M)
    interp = pointnet2_utils.three_interpolate(kf.to(dev).contiguous(), nn_idx, w)
    kr = kf.double().requires_grad_()
    wd = w.cpu().double()
    il = nn_idx.cpu().long()
    interp_r = torch.stack([(kr[b][:, il[b]] * wd[b][None]).sum(-1) for b in range(B)])  # (B, C, N)
    errs["three_interp"] = (interp.cpu().double() - interp_r.detach()).abs().max().item()
    g = torch.randn(B, C, N)
    interp_r.backward(g.double())
    gi = _ext.three_interpolate_grad(g.to(dev).contiguous(), nn_idx, w, M)
    errs["three_interp_grad"] = (gi.cpu().double() - kr.grad).abs().max().item()

    tol = {"fps_gap": 1e-5, "group": 0, "group_grad": 1e-5, "gather": 0, "gather_grad": 1e-5,
           "three_nn": 1e-5, "three_interp": 1e-5, "three_interp_grad": 1e-4}
    ok = ok and all(errs[k] <= tol[k] for k in tol) and nn_same > 0.995
    msg = " ".join("%s %.2e" % (k, v) for k, v in errs.items())
    return ok, "%s fps_same %.3f ball_query_mismatch %d three_nn_idx %.4f" % (msg, fps_same, bq_bad, nn_same)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
