# MSN-Point-Cloud-Completion's MDS (Colin97/MSN-Point-Cloud-Completion MDS): the CUDA minimum
# density sampling replayed in plain torch (float64): each point the kernel picks must hold the
# least accumulated density given the points picked before it (to float32's precision: 1e-6
# beyond a relative 1e-4, as float32 densities underflow to 0), and no point twice; the CUDA
# gather_points against torch.gather, exactly.
# `--cpu` runs only the reference (a machine without a GPU checks that part).
import sys
import torch

torch.manual_seed(0)
B, N, M = 2, 2048, 256
xyz = torch.rand(B, N, 3)
mml = torch.full((B,), 0.05)


def mds_ref(p, t):  # the kernel's rule, its own choices unknown: the least density each time
    temp = torch.zeros(N, dtype=torch.float64)
    temp[0], old, out = 1e9, 0, [0]
    for _ in range(1, M):
        temp += torch.exp(-((p - p[old]) ** 2).sum(-1) / t)
        old = int(temp.argmin())
        temp[old] = 1e9
        out.append(old)
    return out


def replay(p, t, picks):  # the worst excess of a picked point's density over the least one's
    temp = torch.zeros(N, dtype=torch.float64)
    temp[picks[0]], worst = 1e9, 0.0
    for j in range(1, M):
        temp += torch.exp(-((p - p[picks[j - 1]]) ** 2).sum(-1) / t)
        least = temp.min().item()
        worst = max(worst, temp[picks[j]].item() - least * (1 + 1e-4))  # float32's sums
        temp[picks[j]] = 1e9
    return worst


t = 5 * 0.05 ** 2
ref = mds_ref(xyz[0].double(), t)
assert len(set(ref)) == M and replay(xyz[0].double(), t, ref) <= 0
if "--cpu" in sys.argv:
    print("PASS msn_mds reference (cpu) %d distinct picks" % len(set(ref)))
    sys.exit(0)

import MDS

idx = torch.zeros(B, M, dtype=torch.int32, device="cuda")
MDS.minimum_density_sampling(xyz.cuda(), M, mml.cuda(), idx)
picks = idx.cpu().tolist()
distinct = all(len(set(p)) == M and p[0] == 0 for p in picks)
worst = max(replay(xyz[b].double(), t, picks[b]) for b in range(B))
same = sum(a == b for a, b in zip(picks[0], ref))
feats = torch.rand(B, 7, N)
got = MDS.gather_points(feats.cuda(), idx).cpu()
err_gather = (got - torch.gather(feats, 2, idx.cpu().long()[:, None, :].expand(-1, 7, -1))).abs().max().item()
ok = distinct and worst < 1e-6 and err_gather == 0
print("%s msn_mds distinct %s worst density excess %.2e (%d of %d picks as the float64 replay) gather %.1e"
      % ("PASS" if ok else "FAIL", distinct, worst, same, M, err_gather))
sys.exit(0 if ok else 1)
