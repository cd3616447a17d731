# torch-points-kernels 0.7.0 (torch-points3d/torch-points-kernels): the CUDA kernels of
# torch_points_kernels.points_cuda against the package's own CPU kernels (points_cpu) and plain
# torch (float64 cdist):
#   furthest_point_sampling vs points_cpu.fps(random=False) (both start at index 0) and the greedy
#     property (each pick attains the largest distance to the picks before it);
#   ball_query_dense and ball_query_partial_dense vs a torch loop (the first nsample points inside
#     the radius in index order) and, as neighbour sets, vs points_cpu dense_ball_query /
#     batch_ball_query (nanoflann; nsample above the largest ball so the sets are complete);
#   three_nn vs points_cpu.dense_knn (k=3) and cdist top-3;
#   three_interpolate / three_interpolate_grad vs points_cpu.knn_interpolate / _grad and autograd;
#   chamfer_dist / chamfer_dist_grad (no CPU kernel) vs cdist nearest neighbours and autograd.
# Imported the normal way (`import torch_points_kernels`; its cluster module needs numba, which the
# GPU machine has). Bindings relied on (cuda/src/bindings.cpp, cpu/src/bindings.cpp):
#   cuda: furthest_point_sampling(points (B,N,3), int n) -> int32; three_nn(unknown, known) ->
#   [dist2, idx int32]; three_interpolate(feats (B,C,m), idx int32 (B,n,3), w) -> (B,C,n);
#   three_interpolate_grad(g, idx, w, int m); ball_query_dense(new_xyz, xyz, float r, int ns) ->
#   (idx int64, dist -1 padded); ball_query_partial_dense(x, y, batch_x, batch_y, r, ns) ->
#   (idx -1 padded, dist); chamfer_dist(xyz1, xyz2) -> [d1, d2, idx1, idx2];
#   chamfer_dist_grad(xyz1, xyz2, idx1, idx2, g1, g2) -> [g_xyz1, g_xyz2].
#   cpu: fps(points, num_samples, random); dense_knn(support, querry, k) -> (idx, dist2);
#   knn_interpolate(features, idx int64, weights); knn_interpolate_grad(grad_out, idx, weights, m);
#   dense_ball_query(support, querry, radius, max_num, mode, sorted) (called as the package's
#   torchpoints.py does); batch_ball_query(support, querry, query_batch, support_batch, radius,
#   max_num, mode, sorted).
# `--cpu` runs the references and (when the package imports here) the CPU kernels against them.
import os
import sys
import traceback

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402

NAME = "torch-points-kernels"
CPU_ONLY = "--cpu" in sys.argv
RADIUS, NS = 0.15, 48


def fps_greedy_gap(xyz, idx):
    gap = 0.0
    for b in range(xyz.shape[0]):
        x = xyz[b].double()
        temp = torch.full((x.shape[0],), float("inf"), dtype=torch.float64)
        for j in range(1, idx.shape[1]):
            temp = torch.minimum(temp, (x - x[int(idx[b, j - 1])]).pow(2).sum(-1))
            gap = max(gap, (temp.max() - temp[int(idx[b, j])]).item())
    return gap


def ball_ref(centers, pts, ns):  # first ns inside (strict), padded: dense pads with the first
    d2 = torch.cdist(centers.double(), pts.double()).pow(2)  # (M, N)
    lists = [torch.nonzero(row < RADIUS * RADIUS).flatten() for row in d2]
    return lists, d2, (d2 - RADIUS * RADIUS).abs().min().item()


def inputs():
    torch.manual_seed(0)
    B, N, M, C = 2, 600, 80, 4
    xyz = torch.rand(B, N, 3) + 0.1  # off the origin: the CUDA FPS skips points with |p|^2 <= 1e-3
    centers = xyz[:, torch.randperm(N)[:M]].contiguous()
    feats = torch.randn(B, C, M)
    return B, N, M, C, xyz, centers, feats


def sets_bad(idx, dist, lists, offset=0):  # nanoflann's rows: valid entries (dist >= 0) as sets
    return sum(int(sorted(set(r[d >= 0].tolist())) != (lst + offset).tolist())
               for r, d, lst in zip(idx, dist, lists))


def check_first(idx, dist, lists, d2, pad_idx_first):  # the CUDA order: first NS in index order
    bad, e = 0, 0.0
    for j, ref in enumerate(lists):
        ref = ref[:NS]
        k = len(ref)
        want = torch.full((NS,), -1, dtype=torch.long)
        if k:
            want[:] = ref[0] if pad_idx_first else -1
            want[:k] = ref
        elif pad_idx_first:
            want[:] = 0
        bad += int(not torch.equal(idx[j].long(), want))
        if k:
            e = max(e, (dist[j, :k].double() - d2[j, ref]).abs().max().item())
        bad += int((dist[j, k:] != -1).sum())
    return bad, e


def main():
    B, N, M, C, xyz, centers, feats = inputs()
    refs = [ball_ref(centers[b], xyz[b], NS) for b in range(B)]
    largest = max(len(lst) for r in refs for lst in r[0])
    assert 0 < largest < NS and min(r[2] for r in refs) > 1e-6, (largest, [r[2] for r in refs])
    d_r, i_r = torch.cdist(xyz.double(), centers.double()).pow(2).topk(3, dim=2, largest=False)
    msgs = ["largest_ball %d" % largest]
    try:
        import torch_points_kernels  # noqa: F401
        from torch_points_kernels import points_cpu as cpu
    except ImportError as e:
        if not CPU_ONLY:
            raise
        return True, "reference (cpu) ok %s; cpu kernels not checked (not importable: %s)" % (msgs[0], e)

    # CPU kernels against the references
    fps_c = cpu.fps(xyz.contiguous(), 64, False)
    gap_c = fps_greedy_gap(xyz, fps_c)
    idx_c, dist_c = cpu.dense_ball_query(centers, xyz, RADIUS, NS, mode=0, sorted=True)
    bad_c = sum(sets_bad(idx_c[b], dist_c[b], refs[b][0]) for b in range(B))
    nn_i_c, nn_d_c = cpu.dense_knn(centers.contiguous(), xyz.contiguous(), 3)
    e_knn_c = (nn_d_c.double() - d_r).abs().max().item()
    same_knn_c = (nn_i_c.long() == i_r).float().mean().item()
    w = torch.rand(B, N, 3)
    w = (w / w.sum(2, keepdim=True)).contiguous()
    kr = feats.double().requires_grad_()
    interp_r = torch.stack([(kr[b][:, i_r[b]] * w[b].double()[None]).sum(-1) for b in range(B)])
    g = torch.randn(B, C, N)
    interp_r.backward(g.double())
    interp_c = cpu.knn_interpolate(feats.contiguous(), i_r.contiguous(), w)
    e_int_c = (interp_c.double() - interp_r.detach()).abs().max().item()
    e_intg_c = (cpu.knn_interpolate_grad(g.contiguous(), i_r.contiguous(), w, M).double()
                - kr.grad).abs().max().item()
    ok = gap_c < 1e-5 and bad_c == 0 and e_knn_c < 1e-5 and same_knn_c > 0.995 and e_int_c < 1e-5 \
        and e_intg_c < 1e-5
    msgs.append("cpu: fps_gap %.1e ball_sets_bad %d knn %.1e/%.4f interp %.1e grad %.1e"
                % (gap_c, bad_c, e_knn_c, same_knn_c, e_int_c, e_intg_c))
    if CPU_ONLY:
        return ok, "reference (cpu) " + " ".join(msgs)

    from torch_points_kernels import points_cuda as cu
    dev = "cuda"
    fps_g = cu.furthest_point_sampling(xyz.to(dev).contiguous(), 64).cpu().long()
    gap_g = fps_greedy_gap(xyz, fps_g)
    fps_same = (fps_g == fps_c).float().mean().item()
    # dense ball query: the CUDA order (first NS in index order, idx padded with the first)
    idx_g, dist_g = cu.ball_query_dense(centers.to(dev).contiguous(), xyz.to(dev).contiguous(), RADIUS, NS)
    idx_g, dist_g = idx_g.cpu(), dist_g.cpu()
    bad_bq, e_bq = 0, 0.0
    for b in range(B):
        bb, ee = check_first(idx_g[b], dist_g[b], refs[b][0], refs[b][1], True)
        bad_bq, e_bq = bad_bq + bb, max(e_bq, ee)
    # partial dense: the batches flattened, indices global, -1 padding
    x_flat, y_flat = xyz.reshape(-1, 3).contiguous(), centers.reshape(-1, 3).contiguous()
    bx = torch.arange(B).repeat_interleave(N)
    by = torch.arange(B).repeat_interleave(M)
    idx_p, dist_p = cu.ball_query_partial_dense(x_flat.to(dev), y_flat.to(dev), bx.to(dev), by.to(dev),
                                                RADIUS, NS)
    idx_p, dist_p = idx_p.cpu(), dist_p.cpu()
    bad_pd = 0
    for b in range(B):
        lists = [lst + b * N for lst in refs[b][0]]
        sl = slice(b * M, (b + 1) * M)
        bb, ee = check_first(idx_p[sl], dist_p[sl], lists, torch.cat([torch.zeros(M, b * N, dtype=torch.float64),
                                                                      refs[b][1]], 1), False)
        bad_pd, e_bq = bad_pd + bb, max(e_bq, ee)
    # the CPU kernel on the same flattened layout: neighbour sets
    idx_pc, dist_pc = cpu.batch_ball_query(x_flat, y_flat, bx, by, RADIUS, NS, mode=0, sorted=True)
    bad_pc = sum(sets_bad(idx_pc[b * M:(b + 1) * M], dist_pc[b * M:(b + 1) * M], refs[b][0], b * N)
                 for b in range(B))
    # three_nn and three_interpolate (+ gradient)
    d2_g, nn_g = cu.three_nn(xyz.to(dev).contiguous(), centers.to(dev).contiguous())
    e_nn = max((d2_g.cpu().double() - d_r).abs().max().item(), (d2_g.cpu() - nn_d_c).abs().max().item())
    same_nn = (nn_g.cpu().long() == nn_i_c.long()).float().mean().item()
    idx32 = i_r.int().to(dev).contiguous()
    int_g = cu.three_interpolate(feats.to(dev).contiguous(), idx32, w.to(dev))
    e_int = max((int_g.cpu().double() - interp_r.detach()).abs().max().item(),
                (int_g.cpu() - interp_c).abs().max().item())
    intg_g = cu.three_interpolate_grad(g.to(dev).contiguous(), idx32, w.to(dev), M)
    e_intg = (intg_g.cpu().double() - kr.grad).abs().max().item()
    # chamfer distance (+ gradient)
    a, c = xyz[:, :300].contiguous(), (xyz[:, 300:] * 0.9).contiguous()
    d1, d2, i1, i2 = cu.chamfer_dist(a.to(dev), c.to(dev))
    D = torch.cdist(a.double(), c.double()).pow(2)
    e_ch = max((d1.cpu().double() - D.min(2).values).abs().max().item(),
               (d2.cpu().double() - D.min(1).values).abs().max().item())
    g1, g2 = torch.randn(B, 300), torch.randn(B, 300)
    ga, gc = cu.chamfer_dist_grad(a.to(dev), c.to(dev), i1, i2, g1.to(dev), g2.to(dev))
    ar, cr = a.double().requires_grad_(), c.double().requires_grad_()
    j1, j2 = i1.cpu().long(), i2.cpu().long()
    dd1 = torch.stack([(ar[b] - cr[b][j1[b]]).pow(2).sum(-1) for b in range(B)])
    dd2 = torch.stack([(cr[b] - ar[b][j2[b]]).pow(2).sum(-1) for b in range(B)])
    ((dd1 * g1.double()).sum() + (dd2 * g2.double()).sum()).backward()
    e_chg = max((ga.cpu().double() - ar.grad).abs().max().item(), (gc.cpu().double() - cr.grad).abs().max().item())
    ok_g = (gap_g < 1e-5 and fps_same > 0.5 and bad_bq == 0 and bad_pd == 0 and bad_pc == 0 and e_bq < 1e-5
            and e_nn < 1e-5 and same_nn > 0.995 and e_int < 1e-5 and e_intg < 1e-5 and e_ch < 1e-5 and e_chg < 1e-4)
    msgs.append("cuda: fps_gap %.1e fps_same_as_cpu %.3f ball_dense_bad %d ball_partial_bad %d cpu_batch_sets_bad %d "
                "ball_dist %.1e three_nn %.1e/%.4f interp %.1e grad %.1e chamfer %.1e grad %.1e"
                % (gap_g, fps_same, bad_bq, bad_pd, bad_pc, e_bq, e_nn, same_nn, e_int, e_intg, e_ch, e_chg))
    return ok and ok_g, " ".join(msgs)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
