# maskrcnn-benchmark (facebookresearch/maskrcnn-benchmark): its CUDA NMS and ROIAlign (forward
# and backward) against its own CPU kernels, the CPU kernels against plain torch (greedy NMS
# with the legacy +1 box sizes; ROIAlign as the mean of bilinear samples, grid_sample), and the
# CUDA sigmoid focal loss against the package's own plain-torch formula.
# `--cpu` runs the CPU kernels against plain torch only (a machine without a GPU).
import sys
import torch
import torch.nn.functional as F
from maskrcnn_benchmark import _C

torch.manual_seed(0)


def nms_ref(b, s, thr):
    order, keep = s.argsort(descending=True).tolist(), []
    area = (b[:, 2] - b[:, 0] + 1) * (b[:, 3] - b[:, 1] + 1)
    while order:
        i = order.pop(0)
        keep.append(i)
        lt, rb = torch.maximum(b[i, :2], b[order, :2]), torch.minimum(b[i, 2:], b[order, 2:])
        inter = (rb - lt + 1).clamp(min=0).prod(1)
        iou = inter / (area[i] + area[order] - inter)
        order = [j for j, o in zip(order, iou.tolist()) if o < thr]
    return sorted(keep)


H, W, PH, PW, SR, SCALE = 24, 32, 7, 7, 2, 0.5


def roi_align_ref(x, rois):  # legacy ROIAlign (aligned=False), boxes well inside the image
    out = []
    for r in rois:
        n, (x1, y1, x2, y2) = int(r[0]), (r[1:] * SCALE).tolist()
        rw, rh = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
        ys = y1 + (torch.arange(PH * SR, dtype=torch.float64) + 0.5) * rh / (PH * SR)
        xs = x1 + (torch.arange(PW * SR, dtype=torch.float64) + 0.5) * rw / (PW * SR)
        grid = torch.stack(torch.meshgrid(2 * xs / (W - 1) - 1, 2 * ys / (H - 1) - 1, indexing="xy"), -1)
        s = F.grid_sample(x[n:n + 1], grid[None].to(x.dtype), mode="bilinear", align_corners=True)[0]
        out.append(s.reshape(-1, PH, SR, PW, SR).mean((2, 4)))
    return torch.stack(out)


boxes = torch.rand(300, 2) * 100
boxes = torch.cat([boxes, boxes + torch.rand(300, 2) * 40 + 5], 1)
scores = torch.rand(300)
keep_cpu = sorted(_C.nms(boxes, scores, 0.5).tolist())
nms_same = keep_cpu == nms_ref(boxes.double(), scores.double(), 0.5)
x = torch.rand(2, 3, H, W)
lo = torch.rand(8, 2) * torch.tensor([W, H]) * 0.8 + 2
hi = torch.minimum(lo + torch.rand(8, 2) * 20 + 4, torch.tensor([W * 2 - 4.0, H * 2 - 4.0]))
rois = torch.cat([torch.randint(0, 2, (8, 1)).float(), lo, hi], 1)
align_cpu = _C.roi_align_forward(x, rois, SCALE, PH, PW, SR)
err_align_ref = (align_cpu.double() - roi_align_ref(x.double(), rois.double())).abs().max().item()
if "--cpu" in sys.argv:
    ok = nms_same and err_align_ref < 1e-5
    print("%s maskrcnn_benchmark cpu nms as plain torch %s (%d kept), roi_align vs plain torch %.2e"
          % ("PASS" if ok else "FAIL", nms_same, len(keep_cpu), err_align_ref))
    sys.exit(0 if ok else 1)

keep_gpu = sorted(_C.nms(boxes.cuda(), scores.cuda(), 0.5).cpu().tolist())
align_gpu = _C.roi_align_forward(x.cuda(), rois.cuda(), SCALE, PH, PW, SR).cpu()
err_align = (align_gpu - align_cpu).abs().max().item()
g = torch.rand_like(align_cpu)
# The package has no CPU backward ("Not implemented on the CPU"): the reference is autograd
# through the plain-torch ROIAlign above, in float64.
xr = x.double().requires_grad_()
roi_align_ref(xr, rois.double()).backward(g.double())
back_gpu = _C.roi_align_backward(g.cuda(), rois.cuda(), SCALE, PH, PW, 2, 3, H, W, SR).cpu()
err_back = (back_gpu.double() - xr.grad).abs().max().item()
logits, targets = torch.randn(64, 5), torch.randint(0, 6, (64,), dtype=torch.int32)
loss = _C.sigmoid_focalloss_forward(logits.cuda(), targets.cuda(), 5, 2.0, 0.25).cpu()
cls = torch.arange(1, 6, dtype=torch.int32)[None]
p, t = torch.sigmoid(logits.double()), targets[:, None]
ref = (-(t == cls).double() * (1 - p) ** 2.0 * torch.log(p) * 0.25
       - ((t != cls) & (t >= 0)).double() * p ** 2.0 * torch.log(1 - p) * 0.75)
err_focal = (loss.double() - ref).abs().max().item()
ok = (nms_same and keep_gpu == keep_cpu and err_align_ref < 1e-5 and err_align < 1e-5
      and err_back < 1e-5 and err_focal < 1e-5)
print("%s maskrcnn_benchmark nms gpu = cpu %s (%d kept), roi_align %.2e backward %.2e, "
      "focal loss %.2e, cpu vs plain torch %.2e"
      % ("PASS" if ok else "FAIL", keep_gpu == keep_cpu, len(keep_gpu), err_align, err_back,
         err_focal, err_align_ref))
sys.exit(0 if ok else 1)
