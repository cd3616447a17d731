# Deformable-DETR's MultiScaleDeformableAttention (fundamentalvision/Deformable-DETR models/ops):
# the CUDA multi-scale deformable attention, forward and backward, against the package's own
# plain-torch reference (ms_deform_attn_core_pytorch, grid_sample), in float64 and float32.
# `--cpu` runs only the reference (a machine without a GPU checks that part).
import sys
import torch
import torch.nn.functional as F


def core_pytorch(value, shapes, loc, attn):  # the package's ms_deform_attn_core_pytorch
    n, _, m, d = value.shape
    _, lq, m, l, p, _ = loc.shape
    values = value.split([h * w for h, w in shapes.tolist()], dim=1)
    grids = 2 * loc - 1
    out = []
    for lid, (h, w) in enumerate(shapes.tolist()):
        v = values[lid].flatten(2).transpose(1, 2).reshape(n * m, d, h, w)
        g = grids[:, :, :, lid].transpose(1, 2).flatten(0, 1)
        out.append(F.grid_sample(v, g, mode="bilinear", padding_mode="zeros", align_corners=False))
    attn = attn.transpose(1, 2).reshape(n * m, 1, lq, l * p)
    return (torch.stack(out, dim=-2).flatten(-2) * attn).sum(-1).view(n, m * d, lq).transpose(1, 2)


torch.manual_seed(3)
N, M, D, Lq, L, P = 2, 4, 8, 30, 2, 4
shapes = torch.as_tensor([(12, 10), (6, 5)], dtype=torch.long)
start = torch.cat((shapes.new_zeros((1,)), shapes.prod(1).cumsum(0)[:-1]))
S = int(shapes.prod(1).sum())
value = torch.rand(N, S, M, D)
loc = torch.rand(N, Lq, M, L, P, 2)
attn = torch.rand(N, Lq, M, L, P) + 1e-5
attn /= attn.sum(-1, keepdim=True).sum(-2, keepdim=True)
ref = core_pytorch(value.double(), shapes, loc.double(), attn.double())
# the reference: sampling at the exact centre of every cell returns the cell's value
h, w = 12, 10
ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij")
centre = torch.stack([(xs + 0.5) / w, (ys + 0.5) / h], -1).reshape(1, h * w, 1, 1, 1, 2)
v0 = value[:1, : h * w, :1].double()
one = core_pytorch(v0, shapes[:1], centre, torch.ones(1, h * w, 1, 1, 1).double())
assert (one - v0.reshape(1, h * w, D)).abs().max() < 1e-12
if "--cpu" in sys.argv:
    print("PASS deformable_detr_msda reference (cpu) output %s" % list(ref.shape))
    sys.exit(0)

import MultiScaleDeformableAttention as MSDA

c = lambda t, dt: t.to("cuda", dt).contiguous()
errs = []
for dt in (torch.float64, torch.float32):
    out = MSDA.ms_deform_attn_forward(c(value, dt), shapes.cuda(), start.cuda(), c(loc, dt), c(attn, dt), 2)
    errs.append((out.cpu().double() - ref).abs().max().item())
# backward in float64 against autograd through the reference
vd, ld, ad = (t.double().requires_grad_() for t in (value, loc, attn))
g = torch.rand_like(ref)
(core_pytorch(vd, shapes, ld, ad) * g).sum().backward()
gv, gl, ga = MSDA.ms_deform_attn_backward(c(value, torch.float64), shapes.cuda(), start.cuda(),
                                          c(loc, torch.float64), c(attn, torch.float64), c(g, torch.float64), 2)
err_grad = max((gv.cpu() - vd.grad).abs().max().item(), (ga.cpu() - ad.grad).abs().max().item(),
               (gl.cpu() - ld.grad).abs().max().item())
ok = errs[0] < 1e-9 and errs[1] < 1e-4 and err_grad < 1e-6
print("%s deformable_detr_msda float64 %.2e float32 %.2e grad %.2e"
      % ("PASS" if ok else "FAIL", errs[0], errs[1], err_grad))
sys.exit(0 if ok else 1)
