# DCNv2 (CharlesShang/DCNv2): the CUDA deformable convolution against plain torch (zero
# offsets and a mask of ones make it a convolution) and against its own CPU kernel
# (random offsets and mask).
import torch
import torch.nn.functional as F
import _ext

torch.manual_seed(0)
x = torch.randn(2, 8, 12, 12, device="cuda")
w = torch.randn(16, 8, 3, 3, device="cuda")
b = torch.randn(16, device="cuda")
off = torch.zeros(2, 2 * 9, 12, 12, device="cuda")
mask = torch.ones(2, 9, 12, 12, device="cuda")
out = _ext.dcn_v2_forward(x, w, b, off, mask, 3, 3, 1, 1, 1, 1, 1, 1, 1)
err_conv = (out - F.conv2d(x, w, b, padding=1)).abs().max().item()
off = torch.randn(2, 2 * 9, 12, 12, device="cuda")
mask = torch.rand(2, 9, 12, 12, device="cuda")
gpu = _ext.dcn_v2_forward(x, w, b, off, mask, 3, 3, 1, 1, 1, 1, 1, 1, 1)
cpu = _ext.dcn_v2_forward(x.cpu(), w.cpu(), b.cpu(), off.cpu(), mask.cpu(), 3, 3, 1, 1, 1, 1, 1, 1, 1)
err_cpu = (gpu.cpu() - cpu).abs().max().item()
assert err_conv < 1e-3 and err_cpu < 1e-3, (err_conv, err_cpu)
print("PASS dcnv2 conv %.2e cpu %.2e" % (err_conv, err_cpu))
