# PointRCNN iou3d (sshaoshuai/PointRCNN lib/utils/iou3d): the CUDA bird's-eye overlap and IoU of
# rotated boxes [x1, y1, x2, y2, ry] against a plain polygon clipping (Sutherland-Hodgman, float64)
# of the same rectangles, each turned about its centre as the kernel turns it (by -ry).
# `--cpu` runs only the reference (a machine without a GPU checks that part).
import math
import sys
import torch


def corners(b):
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    c, s = math.cos(b[4]), math.sin(b[4])
    pts = [(b[0], b[1]), (b[2], b[1]), (b[2], b[3]), (b[0], b[3])]
    return [((x - cx) * c + (y - cy) * s + cx, -(x - cx) * s + (y - cy) * c + cy) for x, y in pts]


def area(poly):
    return abs(sum(p[0] * q[1] - q[0] * p[1] for p, q in zip(poly, poly[1:] + poly[:1]))) / 2


def clip(subject, clipper):
    orient = 1 if sum(p[0] * q[1] - q[0] * p[1] for p, q in zip(clipper, clipper[1:] + clipper[:1])) > 0 else -1
    out = subject
    for a, b in zip(clipper, clipper[1:] + clipper[:1]):
        inside = lambda p: orient * ((b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])) >= 0
        def cut(p, q):
            d1 = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
            d2 = (b[0] - a[0]) * (q[1] - a[1]) - (b[1] - a[1]) * (q[0] - a[0])
            t = d1 / (d1 - d2)
            return (p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]))
        src, out = out, []
        for p, q in zip(src, src[1:] + src[:1]):
            if inside(q):
                if not inside(p):
                    out.append(cut(p, q))
                out.append(q)
            elif inside(p):
                out.append(cut(p, q))
        if not out:
            return []
    return out


def overlap_ref(a, b):
    return [[area(clip(corners(p), corners(q))) if clip(corners(p), corners(q)) else 0.0 for q in b] for p in a]


torch.manual_seed(0)
def boxes(n):
    xy = torch.rand(n, 2) * 6
    wh = torch.rand(n, 2) * 2 + 0.5
    return torch.cat([xy, xy + wh, (torch.rand(n, 1) - 0.5) * math.pi], 1)

a, b = boxes(24), boxes(30)
ov = torch.tensor(overlap_ref(a.double().tolist(), b.double().tolist()), dtype=torch.float64)
area_a = ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])).double()
area_b = ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])).double()
iou = ov / (area_a[:, None] + area_b[None, :] - ov).clamp(min=1e-8)
# the reference: an unturned pair is plain rectangle overlap, and some pairs do overlap
ax = torch.tensor([[0.0, 0, 2, 1, 0]]); bx = torch.tensor([[1.0, 0.5, 3, 2, 0]])
assert abs(overlap_ref(ax.tolist(), bx.tolist())[0][0] - 0.5) < 1e-12 and (ov > 0).sum() > 20
if "--cpu" in sys.argv:
    print("PASS pointrcnn_iou3d reference (cpu) %d overlapping pairs" % (ov > 0).sum().item())
    sys.exit(0)

import iou3d_cuda

got_ov = torch.zeros(24, 30, device="cuda")
got_iou = torch.zeros(24, 30, device="cuda")
iou3d_cuda.boxes_overlap_bev_gpu(a.cuda(), b.cuda(), got_ov)
iou3d_cuda.boxes_iou_bev_gpu(a.cuda(), b.cuda(), got_iou)
err_ov = (got_ov.cpu().double() - ov).abs().max().item()
err_iou = (got_iou.cpu().double() - iou).abs().max().item()
ok = err_ov < 1e-3 and err_iou < 1e-3
print("%s pointrcnn_iou3d overlap %.2e iou %.2e" % ("PASS" if ok else "FAIL", err_ov, err_iou))
sys.exit(0 if ok else 1)
