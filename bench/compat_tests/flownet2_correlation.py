# flownet2-pytorch correlation (kernel 1, stride 1): the mean over channels of
# in1[y, x] * in2[y + dy, x + dx] for every displacement, against plain torch.
import torch
import torch.nn.functional as F
import correlation_cuda

torch.manual_seed(0)
B, C, H, W, D = 2, 8, 10, 12, 3
a, b = torch.randn(B, C, H, W, device="cuda"), torch.randn(B, C, H, W, device="cuda")
r1, r2, out = torch.empty(0, device="cuda"), torch.empty(0, device="cuda"), torch.empty(0, device="cuda")
correlation_cuda.forward(a, b, r1, r2, out, D, 1, D, 1, 1, 1)
pb = F.pad(b, (D, D, D, D))
ref = torch.stack([(a * pb[:, :, D + dy:D + dy + H, D + dx:D + dx + W]).sum(1) / C
                   for dy in range(-D, D + 1) for dx in range(-D, D + 1)], dim=1)
err = (out - ref).abs().max().item()
assert out.shape == ref.shape and err < 1e-4, (tuple(out.shape), err)
print("PASS flownet2_correlation %.2e" % err)
