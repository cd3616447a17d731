# RoIAlign.pytorch (longcw/RoIAlign.pytorch): TensorFlow's crop_and_resize, the CUDA kernel
# (forward and backward) against the package's CPU kernel, and the CPU kernel against plain
# torch (grid_sample, bilinear, align_corners=True, boxes inside the image).
# `--cpu` runs the CPU kernel against plain torch only (a machine without a GPU).
import sys
import torch
import torch.nn.functional as F
import roi_align.crop_and_resize_cpu as cpu_ext

torch.manual_seed(0)
image = torch.rand(2, 4, 20, 24)
lo, hi = torch.rand(6, 2) * 0.5, torch.rand(6, 2) * 0.5 + 0.5
boxes = torch.cat([lo, hi], 1)  # y1, x1, y2, x2 in [0, 1]
box_ind = torch.tensor([0, 1, 1, 0, 1, 0], dtype=torch.int32)
CH, CW = 7, 5


def run(ext, img, bx, ind):
    crops = torch.zeros_like(img)
    ext.forward(img, bx, ind, 0.0, CH, CW, crops)
    return crops


def reference(img, bx, ind):
    ys = torch.linspace(0, 1, CH)[None, :] * (bx[:, 2:3] - bx[:, 0:1]) + bx[:, 0:1]  # (n, CH)
    xs = torch.linspace(0, 1, CW)[None, :] * (bx[:, 3:4] - bx[:, 1:2]) + bx[:, 1:2]
    grid = torch.stack([xs[:, None, :].expand(-1, CH, -1), ys[:, :, None].expand(-1, -1, CW)], -1)
    return F.grid_sample(img[ind.long()], grid * 2 - 1, mode="bilinear", align_corners=True)


cpu = run(cpu_ext, image, boxes, box_ind)
err_ref = (cpu - reference(image.double(), boxes.double(), box_ind)).abs().max().item()
if "--cpu" in sys.argv:
    ok = err_ref < 1e-5
    print("%s roi_align cpu kernel vs plain torch %.2e" % ("PASS" if ok else "FAIL", err_ref))
    sys.exit(0 if ok else 1)

import roi_align.crop_and_resize_gpu as gpu_ext

gpu = run(gpu_ext, image.cuda(), boxes.cuda(), box_ind.cuda())
err_fwd = (gpu.cpu() - cpu).abs().max().item()
grad = torch.rand_like(cpu)
g_cpu, g_gpu = torch.zeros_like(image), torch.zeros_like(image).cuda()
cpu_ext.backward(grad, boxes, box_ind, g_cpu)
gpu_ext.backward(grad.cuda(), boxes.cuda(), box_ind.cuda(), g_gpu)
err_bwd = (g_gpu.cpu() - g_cpu).abs().max().item()
ok = err_ref < 1e-5 and err_fwd < 1e-5 and err_bwd < 1e-4
print("%s roi_align plain torch %.2e gpu forward %.2e backward %.2e"
      % ("PASS" if ok else "FAIL", err_ref, err_fwd, err_bwd))
sys.exit(0 if ok else 1)
