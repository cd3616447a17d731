# PointRCNN roipool3d (sshaoshuai/PointRCNN lib/utils/roipool3d): the CUDA point pooling of 3D
# boxes against the package's CPU kernel (the same first 512 points inside each box, in point
# order, repeated when fewer), and the CPU point-in-box test against plain torch.
# `--cpu` runs the CPU kernels against plain torch only (a machine without a GPU).
import sys
import torch
import roipool3d_cuda

torch.manual_seed(0)
N, M, C, S = 4000, 6, 5, 128
pts = (torch.rand(N, 3) * torch.tensor([20.0, 4.0, 20.0]) - torch.tensor([10.0, 2.0, 10.0])).contiguous()
feat = torch.rand(N, C)
centre = torch.rand(M, 3) * torch.tensor([12.0, 1.0, 12.0]) - torch.tensor([6.0, -1.0, 6.0])
size = torch.rand(M, 3) * 3 + 1  # h, w, l
boxes = torch.cat([centre, size, (torch.rand(M, 1) - 0.5) * 3], 1).contiguous()  # x, y(bottom), z, h, w, l, ry


def inside_ref(p, b):  # the kernel's rule: y from bottom - h to bottom, x/z turned by ry
    x, y, z = (p[:, k][None, :] for k in range(3))
    cx, by, cz, h, w, l, ry = (b[:, k][:, None] for k in range(7))
    cy = by - h / 2
    c, s = torch.cos(ry), torch.sin(ry)
    xr, zr = (x - cx) * c - (z - cz) * s, (x - cx) * s + (z - cz) * c
    near = ((x - cx).abs() <= 10) & ((y - cy).abs() <= h / 2) & ((z - cz).abs() <= 10)
    return near & (xr.abs() <= l / 2) & (zr.abs() <= w / 2)


flag = torch.zeros(M, N, dtype=torch.long)
roipool3d_cuda.pts_in_boxes3d_cpu(flag, pts, boxes)
ref = inside_ref(pts.double(), boxes.double())
differ_cpu = (flag.bool() != ref).sum().item()
pooled_pts, pooled_feat = torch.zeros(M, S, 3), torch.zeros(M, S, C)
empty = torch.zeros(M, dtype=torch.long)
roipool3d_cuda.roipool3d_cpu(pts, boxes, feat, pooled_pts, pooled_feat, empty)
assert ref.sum() > 50 and (empty == 0).any()
if "--cpu" in sys.argv:
    ok = differ_cpu == 0
    print("%s pointrcnn_roipool3d cpu point-in-box vs plain torch: %d of %d differ (%d inside)"
          % ("PASS" if ok else "FAIL", differ_cpu, M * N, ref.sum().item()))
    sys.exit(0 if ok else 1)

out = torch.zeros(1, M, S, 3 + C, device="cuda")
out_empty = torch.zeros(1, M, dtype=torch.int32, device="cuda")
roipool3d_cuda.forward(pts[None].cuda(), boxes[None].cuda(), feat[None].cuda(), out, out_empty)
full = ~empty.bool()
err = (out[0].cpu() - torch.cat([pooled_pts, pooled_feat], -1))[full].abs().max().item()
same_empty = (out_empty[0].cpu().long() == empty).all().item()
ok = differ_cpu == 0 and err == 0 and same_empty
print("%s pointrcnn_roipool3d gpu vs cpu kernel %.2e, empty flags equal %s, cpu vs plain torch %d differ"
      % ("PASS" if ok else "FAIL", err, same_empty, differ_cpu))
sys.exit(0 if ok else 1)
