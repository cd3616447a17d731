# flownet2-pytorch resample2d: bilinear warping by a flow against grid_sample.
import torch
import torch.nn.functional as F
import resample2d_cuda

torch.manual_seed(0)
B, C, H, W = 2, 3, 16, 20
img = torch.randn(B, C, H, W, device="cuda")
flow = torch.randn(B, 2, H, W, device="cuda") * 2
out = torch.zeros(B, C, H, W, device="cuda")
resample2d_cuda.forward(img, flow.contiguous(), out, 1, True)
ys, xs = torch.meshgrid(torch.arange(H, device="cuda"), torch.arange(W, device="cuda"), indexing="ij")
x = (xs + flow[:, 0]).clamp(0, W - 1)
y = (ys + flow[:, 1]).clamp(0, H - 1)
grid = torch.stack((2 * x / (W - 1) - 1, 2 * y / (H - 1) - 1), dim=-1)
ref = F.grid_sample(img, grid, mode="bilinear", align_corners=True)
err = (out - ref).abs().max().item()
assert err < 1e-4, err
print("PASS flownet2_resample2d %.2e" % err)
