# ChamferDistancePytorch chamfer3D: nearest squared distances and indices against torch.cdist.
import torch
import chamfer_3D

torch.manual_seed(0)
a, b = torch.rand(2, 500, 3, device="cuda"), torch.rand(2, 400, 3, device="cuda")
d1, d2 = torch.zeros(2, 500, device="cuda"), torch.zeros(2, 400, device="cuda")
i1 = torch.zeros(2, 500, dtype=torch.int32, device="cuda")
i2 = torch.zeros(2, 400, dtype=torch.int32, device="cuda")
chamfer_3D.forward(a, b, d1, d2, i1, i2)
c = torch.cdist(a, b).pow(2)
err = max((d1 - c.min(2).values).abs().max().item(), (d2 - c.min(1).values).abs().max().item())
assert err < 1e-5, err
print("PASS chamfer3d %.2e" % err)
