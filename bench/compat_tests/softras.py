# SoftRas (ShichenLiu/SoftRas): the CUDA soft rasterizer in its hard modes (hard distance, hard
# alpha, hard colour, vertex colours, both sides) against a plain-torch rasterizer (float64) of
# the same rule: pixel centres (rows from the top, y up), a pixel inside a face when its
# barycentric weights lie in [0, 1], the nearest such face between near and far, its colour the
# weights times the vertex colours. A pixel on an edge may go either way in float32: at most
# 0.5% of covered pixels may differ.
# `--cpu` runs only the reference (a machine without a GPU checks that part).
import math
import glob
import importlib.util
import os
import sys
import torch

IS, NEAR, FAR = 64, 1.0, 100.0


def reference(faces, colors):  # faces (B, F, 3, 3), colors (B, F, 3, 3): per vertex
    b, nf = faces.shape[:2]
    idx = torch.arange(IS, dtype=torch.float64)
    yi, xi = torch.meshgrid(IS - 1 - idx, idx, indexing="ij")
    xp, yp = ((2 * xi + 1 - IS) / IS).reshape(1, -1, 1), ((2 * yi + 1 - IS) / IS).reshape(1, -1, 1)
    f = faces.reshape(b, 1, nf, 9)
    g = lambda k: f[..., k]
    m = torch.stack([torch.stack([g(0), g(3), g(6)], -1), torch.stack([g(1), g(4), g(7)], -1),
                     torch.ones_like(f[..., :3])], -2)
    rhs = torch.stack([xp.expand(b, -1, nf), yp.expand(b, -1, nf),
                       torch.ones(b, IS * IS, nf, dtype=torch.float64)], -1)
    w = torch.linalg.solve(m.expand(b, IS * IS, nf, 3, 3), rhs)
    inside = ((w >= 0) & (w <= 1)).all(-1)
    z = 1 / (w[..., 0] / g(2) + w[..., 1] / g(5) + w[..., 2] / g(8))
    z = torch.where(inside & (z >= NEAR) & (z <= FAR), z, torch.full_like(z, math.inf))
    depth, index = z.min(-1)
    index = torch.where(depth < math.inf, index, torch.full_like(index, -1))
    wi = torch.gather(w, 2, index.clamp(min=0)[..., None, None].expand(-1, -1, 1, 3))[:, :, 0]
    ci = torch.gather(colors.reshape(b, 1, nf, 9).expand(-1, IS * IS, -1, -1), 2,
                      index.clamp(min=0)[..., None, None].expand(-1, -1, 1, 9))[:, :, 0].reshape(b, -1, 3, 3)
    rgb = (wi[..., :, None] * ci).sum(-2)
    rgb = torch.where(index[..., None] >= 0, rgb, torch.zeros_like(rgb))
    alpha = inside.any(-1).double()
    r = lambda t: t.reshape(b, IS, IS, *t.shape[2:])
    return r(index), r(depth), r(rgb), r(alpha)


torch.manual_seed(0)
B, F = 2, 40
xy = torch.rand(B, F, 1, 2) * 1.8 - 0.9 + (torch.rand(B, F, 3, 2) - 0.5) * 0.8
faces = torch.cat([xy, torch.rand(B, F, 3, 1) * 5 + 2], -1).float()
colors = torch.rand(B, F, 3, 3)
index, depth, rgb, alpha = reference(faces.double(), colors.double())
covered = index >= 0
assert 0.1 < covered.float().mean() < 0.9 and (alpha == covered.double()).all()
if "--cpu" in sys.argv:
    print("PASS softras reference (cpu) %.0f%% of pixels covered" % (100 * covered.float().mean()))
    sys.exit(0)

# By its file: the package's __init__ imports skimage (for its .obj loader), which a plain
# environment may lack.
so = [f for d in sys.path for f in glob.glob(os.path.join(d or ".", "soft_renderer", "cuda", "soft_rasterize.*.so"))]
spec = importlib.util.spec_from_file_location("soft_rasterize", so[0])
soft_rasterize_cuda = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soft_rasterize_cuda)

faces_info = torch.zeros(B, F, 27, device="cuda")
aggrs_info = torch.zeros(B, 2, IS, IS, device="cuda")
soft_colors = torch.zeros(B, 4, IS, IS, device="cuda")
faces_info, aggrs_info, soft_colors = soft_rasterize_cuda.forward_soft_rasterize(
    faces.cuda().contiguous(), colors.cuda().contiguous(), faces_info, aggrs_info, soft_colors,
    IS, NEAR, FAR, 1e-3, 1e-5, 0, math.log(1.0 / 1e-4 - 1.0), 1e-4, 0, 0, 1, True)
got = aggrs_info[:, 1].cpu().round().long()
differ = (got != index).float().sum().item() / covered.sum().item()
same = (got == index) & covered
err_depth = (aggrs_info[:, 0].cpu().double() - depth)[same].abs().max().item()
err_rgb = (soft_colors[:, :3].permute(0, 2, 3, 1).cpu().double() - rgb)[same].abs().max().item()
alpha_differ = (soft_colors[:, 3].cpu().double() != alpha).float().sum().item() / covered.sum().item()
ok = differ <= 0.005 and alpha_differ <= 0.005 and err_depth < 1e-3 and err_rgb < 1e-3
print("%s softras face differs on %.3f%% and alpha on %.3f%% of covered pixels, depth %.2e colour %.2e"
      % ("PASS" if ok else "FAIL", 100 * differ, 100 * alpha_differ, err_depth, err_rgb))
sys.exit(0 if ok else 1)
