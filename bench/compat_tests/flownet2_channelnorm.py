# flownet2-pytorch channelnorm: the L2 norm over channels against plain torch.
import torch
import channelnorm_cuda

torch.manual_seed(0)
x = torch.randn(2, 6, 16, 20, device="cuda")
out = torch.zeros(2, 1, 16, 20, device="cuda")
channelnorm_cuda.forward(x, out, 2)
err = (out - x.pow(2).sum(1, keepdim=True).sqrt()).abs().max().item()
assert err < 1e-4, err
print("PASS flownet2_channelnorm %.2e" % err)
