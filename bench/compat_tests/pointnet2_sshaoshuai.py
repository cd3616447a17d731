# Pointnet2.PyTorch (sshaoshuai): gather, three_nn and furthest point sampling against
# plain torch.
import torch
import pointnet2_cuda as p

torch.manual_seed(0)
B, C, N, M = 2, 4, 256, 64
pts = torch.randn(B, C, N, device="cuda")
idx = torch.randint(0, N, (B, M), device="cuda", dtype=torch.int32)
out = torch.zeros(B, C, M, device="cuda")
p.gather_points_wrapper(B, C, N, M, pts, idx, out)
err_gather = (out - torch.gather(pts, 2, idx.long().unsqueeze(1).expand(B, C, M))).abs().max().item()
unknown, known = torch.rand(B, N, 3, device="cuda"), torch.rand(B, M, 3, device="cuda")
dist2 = torch.zeros(B, N, 3, device="cuda")
nn_idx = torch.zeros(B, N, 3, device="cuda", dtype=torch.int32)
p.three_nn_wrapper(B, N, M, unknown, known, dist2, nn_idx)
ref = torch.cdist(unknown, known).pow(2).topk(3, dim=2, largest=False)
err_nn = (dist2 - ref.values).abs().max().item()
xyz = torch.rand(B, N, 3, device="cuda")
temp = torch.full((B, N), 1e10, device="cuda")
fps = torch.zeros(B, M, device="cuda", dtype=torch.int32)
p.furthest_point_sampling_wrapper(B, N, M, xyz, temp, fps)
ref_fps = torch.zeros(B, M, dtype=torch.long)
for bi in range(B):  # the greedy rule on the CPU: each next point is the farthest from those chosen
    d = torch.full((N,), float("inf"))
    cur, pc = 0, xyz[bi].cpu()
    for k in range(M):
        ref_fps[bi, k] = cur
        d = torch.minimum(d, ((pc - pc[cur]) ** 2).sum(1))
        cur = int(d.argmax())
fps_same = torch.equal(fps.cpu().long(), ref_fps)
assert err_gather == 0 and err_nn < 1e-5 and fps_same, (err_gather, err_nn, fps_same)
print("PASS pointnet2_sshaoshuai gather %.1e three_nn %.2e fps exact" % (err_gather, err_nn))
