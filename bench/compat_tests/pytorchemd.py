# PyTorchEMD (daerduoCarey/PyTorchEMD): the CUDA approxmatch and matchcost kernels against the
# same algorithm written in plain torch (float64, on the CPU): the match matrix and the cost.
# `--cpu` runs only the reference (a machine without a GPU checks that part).
import sys
import torch


def approxmatch_ref(x1, x2):
    """Haoqiang Fan's approxmatch as the kernel computes it: match is (B, m, n)."""
    b, n, m = x1.shape[0], x1.shape[1], x2.shape[1]
    multi_l, multi_r = (1.0, float(n // m)) if n >= m else (float(m // n), 1.0)
    remain_l = torch.full((b, n), multi_l, dtype=x1.dtype)
    remain_r = torch.full((b, m), multi_r, dtype=x1.dtype)
    match = torch.zeros(b, m, n, dtype=x1.dtype)
    d2 = ((x2[:, :, None, :] - x1[:, None, :, :]) ** 2).sum(-1)
    for j in range(7, -3, -1):
        level = 0.0 if j == -2 else -(4.0 ** j)
        w = torch.exp(level * d2)
        ratio_l = remain_l / (1e-9 + (w * remain_r[:, :, None]).sum(1))
        sum_r = (w * ratio_l[:, None, :]).sum(2) * remain_r
        ratio_r = torch.clamp(remain_r / (sum_r + 1e-9), max=1.0) * remain_r
        remain_r = torch.clamp(remain_r - sum_r, min=0.0)
        wm = w * ratio_l[:, None, :] * ratio_r[:, :, None]
        match += wm
        remain_l = torch.clamp(remain_l - wm.sum(1), min=0.0)
    return match


def cost_ref(x1, x2, match):
    return (match * ((x2[:, :, None, :] - x1[:, None, :, :]) ** 2).sum(-1)).sum((1, 2))


torch.manual_seed(0)
x1, x2 = torch.rand(2, 300, 3), torch.rand(2, 200, 3)
ref = approxmatch_ref(x1.double(), x2.double())
ref_cost = cost_ref(x1.double(), x2.double(), ref)
# the reference is a transport plan: no point gives more than it has
assert ref.sum(1).max() <= 1 + 1e-6 and ref.sum(2).max() <= 300 // 200 + 1e-6 and ref.min() >= 0
if "--cpu" in sys.argv:
    print("PASS pytorchemd reference (cpu) cost %s" % [round(c, 4) for c in ref_cost.tolist()])
    sys.exit(0)

import emd_cuda

match = emd_cuda.approxmatch_forward(x1.cuda(), x2.cuda())
cost = emd_cuda.matchcost_forward(x1.cuda(), x2.cuda(), match)
err_match = (match.cpu().double() - ref).abs().max().item()
err_cost = ((cost.cpu().double() - ref_cost).abs() / ref_cost).max().item()
ok = err_match < 1e-3 and err_cost < 1e-3
print("%s pytorchemd match %.2e cost (relative) %.2e" % ("PASS" if ok else "FAIL", err_match, err_cost))
sys.exit(0 if ok else 1)
