# MSN-Point-Cloud-Completion's emd (Colin97/MSN-Point-Cloud-Completion emd): the CUDA auction
# algorithm's assignment checked in plain torch, as the package's own test_emd checks it: every
# point assigned once (a permutation), each returned distance the squared distance of its pair,
# and the total between the nearest-neighbour lower bound and a greedy matching's cost (the
# auction's total with eps 0.002 is near the optimum: below what greedy matching reaches).
# `--cpu` runs only the reference (a machine without a GPU checks that part).
import sys
import torch

torch.manual_seed(0)
B, N = 2, 1024  # the kernel needs N % 1024 == 0
x1, x2 = torch.rand(B, N, 3), torch.rand(B, N, 3)
d2 = torch.cdist(x1.double(), x2.double()).pow(2)
lower = torch.maximum(d2.min(2).values.sum(1), d2.min(1).values.sum(1))  # no matching costs less


def greedy(d):  # closest free pair first: a matching, so never below the optimum
    order = d.flatten().argsort().tolist()
    used1, used2, total, left = [False] * N, [False] * N, 0.0, N
    flat = d.flatten().tolist()
    for k in order:
        i, j = divmod(k, N)
        if not used1[i] and not used2[j]:
            used1[i] = used2[j] = True
            total += flat[k]
            left -= 1
            if not left:
                break
    return total


upper = torch.tensor([greedy(d2[b]) for b in range(B)], dtype=torch.float64)
assert (lower < upper).all()
if "--cpu" in sys.argv:
    print("PASS msn_emd reference (cpu) bounds %s .. %s" % (lower.tolist(), upper.tolist()))
    sys.exit(0)

import emd

c = lambda *s, dt=torch.float32: torch.zeros(*s, device="cuda", dtype=dt)
i32 = torch.int32
dist, assignment = c(B, N), c(B, N, dt=i32) - 1
price, assignment_inv = c(B, N), c(B, N, dt=i32) - 1
bid, bid_inc, max_inc = c(B, N, dt=i32), c(B, N), c(B, N)
unass_idx, max_idx = c(B * N, dt=i32), c(B * N, dt=i32)
unass_cnt, unass_cnt_sum, cnt_tmp = c(512, dt=i32), c(512, dt=i32), c(512, dt=i32)
emd.forward(x1.cuda(), x2.cuda(), dist, assignment, price, assignment_inv, bid, bid_inc, max_inc,
            unass_idx, unass_cnt, unass_cnt_sum, cnt_tmp, max_idx, 0.002, 10000)  # as the package's own test_emd
a = assignment.cpu().long()
perm = all(a[b].unique().numel() == N and a[b].min() >= 0 for b in range(B))
pair = ((x1 - torch.gather(x2, 1, a.clamp(min=0)[..., None].expand(-1, -1, 3))) ** 2).sum(-1)
err = (dist.cpu() - pair).abs().max().item()
total = dist.cpu().double().sum(1)
ok = perm and err < 1e-5 and (total >= lower * (1 - 1e-6)).all() and (total <= upper).all()
print("%s msn_emd permutation %s distance %.2e total %s (bounds %s .. %s)"
      % ("PASS" if ok else "FAIL", perm, err, [round(t, 3) for t in total.tolist()],
         [round(t, 3) for t in lower.tolist()], [round(t, 3) for t in upper.tolist()]))
sys.exit(0 if ok else 1)
