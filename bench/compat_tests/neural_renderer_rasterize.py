# neural_renderer (daniilidis-group/neural_renderer): the CUDA rasterizer's face index, depth
# and barycentric weight maps against a plain-torch rasterizer (float64) of the same rule:
# pixel centres, back faces culled, the kernel's edge tests, perspective-correct depth, the
# nearest face between near and far. A pixel on an edge may go either way in float32: at most
# 0.5% of covered pixels may differ.
# `--cpu` runs only the reference (a machine without a GPU checks that part).
import glob
import importlib.util
import os
import sys
import torch

IS, NEAR, FAR = 64, 0.1, 100.0


def reference(faces):  # faces (B, F, 3, 3): x, y in [-1, 1], z the depth
    b, nf = faces.shape[:2]
    idx = torch.arange(IS, dtype=torch.float64)
    yp, xp = torch.meshgrid((2 * idx + 1 - IS) / IS, (2 * idx + 1 - IS) / IS, indexing="ij")
    xp, yp = xp.reshape(1, -1, 1), yp.reshape(1, -1, 1)
    f = faces.reshape(b, 1, nf, 9)
    g = lambda k: f[..., k]
    back = (g(7) - g(1)) * (g(3) - g(0)) < (g(4) - g(1)) * (g(6) - g(0))
    out = (((yp - g(1)) * (g(3) - g(0)) < (xp - g(0)) * (g(4) - g(1)))
           | ((yp - g(4)) * (g(6) - g(3)) < (xp - g(3)) * (g(7) - g(4)))
           | ((yp - g(7)) * (g(0) - g(6)) < (xp - g(6)) * (g(1) - g(7))))
    m = torch.stack([torch.stack([g(0), g(3), g(6)], -1), torch.stack([g(1), g(4), g(7)], -1),
                     torch.ones_like(f[..., :3])], -2)  # (b, 1, nf, 3, 3)
    rhs = torch.stack([xp.expand(b, -1, nf), yp.expand(b, -1, nf), torch.ones(b, IS * IS, nf,
                      dtype=torch.float64)], -1)
    w = torch.linalg.solve(m.expand(b, IS * IS, nf, 3, 3), rhs).clamp(0, 1)
    w = w / w.sum(-1, keepdim=True)
    z = 1 / (w[..., 0] / g(2) + w[..., 1] / g(5) + w[..., 2] / g(8))
    ok = ~back & ~out & (z > NEAR) & (z < FAR)
    z = torch.where(ok, z, torch.full_like(z, FAR))
    depth, index = z.min(-1)
    index = torch.where(depth < FAR, index, torch.full_like(index, -1))
    weight = torch.gather(w, 2, index.clamp(min=0)[..., None, None].expand(-1, -1, 1, 3))[:, :, 0]
    return index.reshape(b, IS, IS), depth.reshape(b, IS, IS), weight.reshape(b, IS, IS, 3)


torch.manual_seed(0)
B, F = 2, 40
xy = torch.rand(B, F, 1, 2) * 1.8 - 0.9 + (torch.rand(B, F, 3, 2) - 0.5) * 0.8
faces = torch.cat([xy, torch.rand(B, F, 3, 1) * 5 + 1], -1).float()
index, depth, weight = reference(faces.double())
covered = index >= 0
assert 0.1 < covered.float().mean() < 0.9  # some faces seen, some not
if "--cpu" in sys.argv:
    print("PASS neural_renderer reference (cpu) %.0f%% of pixels covered" % (100 * covered.float().mean()))
    sys.exit(0)

# By its file: the package's __init__ imports skimage (for its .obj loader), which a plain
# environment may lack.
so = [f for d in sys.path for f in glob.glob(os.path.join(d or ".", "neural_renderer", "cuda", "rasterize.*.so"))]
spec = importlib.util.spec_from_file_location("rasterize", so[0])
rasterize_cuda = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rasterize_cuda)

fc = faces.cuda().contiguous()
fim = torch.full((B, IS, IS), -1, dtype=torch.int32, device="cuda")
wm = torch.zeros(B, IS, IS, 3, device="cuda")
dm = torch.full((B, IS, IS), FAR, device="cuda")
finv = torch.zeros(B, IS, IS, 3, 3, device="cuda")
fim, wm, dm, finv = rasterize_cuda.forward_face_index_map(fc, fim, wm, dm, finv, torch.zeros_like(fc),
                                                          IS, NEAR, FAR, 0, 0, 1)
got = fim.cpu().long()
differ = (got != index).float().sum().item() / covered.sum().item()
same = (got == index) & covered
err_depth = (dm.cpu().double() - depth)[same].abs().max().item()
err_weight = (wm.cpu().double() - weight)[same].abs().max().item()
ok = differ <= 0.005 and err_depth < 1e-3 and err_weight < 1e-3
print("%s neural_renderer face index differs on %.3f%% of covered pixels, depth %.2e weights %.2e"
      % ("PASS" if ok else "FAIL", 100 * differ, err_depth, err_weight))
sys.exit(0 if ok else 1)
