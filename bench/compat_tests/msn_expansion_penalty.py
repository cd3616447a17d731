# MSN-Point-Cloud-Completion's expansion penalty (Colin97/MSN-Point-Cloud-Completion
# expansion_penalty): the CUDA kernel's minimum spanning trees (Prim's, one per primitive)
# against Prim's algorithm in plain torch (float64): the summed mean edge length; every penalised
# point's distance an edge of the tree longer than alpha times the mean, to the point named; and
# the backward against its formula, 2 * grad * (p - p[idx]).
# `--cpu` runs only the reference (a machine without a GPU checks that part).
import sys
import torch

torch.manual_seed(0)
B, N, P, ALPHA = 2, 512, 64, 1.5
xyz = torch.rand(B, N, 3)


def mst_edges(p):  # Prim's from point 0: (u, v, length) of each edge
    n = p.shape[0]
    d = torch.cdist(p, p)
    seen = torch.zeros(n, dtype=torch.bool)
    seen[0] = True
    best, frm, edges = d[0].clone(), torch.zeros(n, dtype=torch.long), []
    for _ in range(n - 1):
        cand = torch.where(seen, torch.full_like(best, float("inf")), best)
        v = int(cand.argmin())
        edges.append((int(frm[v]), v, best[v].item()))
        seen[v] = True
        closer = d[v] < best
        best, frm = torch.where(closer, d[v], best), torch.where(closer, torch.full_like(frm, v), frm)
    return edges


trees = [[mst_edges(xyz[b, k * P:(k + 1) * P].double()) for k in range(N // P)] for b in range(B)]
mean_ref = torch.tensor([sum(sum(e[2] for e in t) / (P - 1) for t in trees[b]) for b in range(B)])
assert all(len(t) == P - 1 for tb in trees for t in tb) and (mean_ref > 0).all()
if "--cpu" in sys.argv:
    print("PASS msn_expansion_penalty reference (cpu) summed mean MST edge %s" % mean_ref.tolist())
    sys.exit(0)

import expansion_penalty

dist = torch.zeros(B, N, device="cuda")
idx = torch.zeros(B, N, dtype=torch.int32, device="cuda") - 1
neighbor = torch.zeros(B, N * 512, dtype=torch.int32, device="cuda")
cost = torch.zeros(B, N * 512, device="cuda")
mml = torch.zeros(B, device="cuda")
expansion_penalty.forward(xyz.cuda(), P, idx, dist, ALPHA, neighbor, cost, mml)
err_mean = ((mml.cpu().double() - mean_ref).abs() / mean_ref).max().item()
bad, penalised = 0, 0
for b in range(B):
    for j in range(N):
        k = int(idx[b, j])
        if k < 0:
            continue
        penalised += 1
        tree, base = trees[b][j // P], (j // P) * P
        pairs = {(min(u, v) + base, max(u, v) + base): w for u, v, w in tree}
        w = pairs.get((min(j, k), max(j, k)))
        mean_k = sum(e[2] for e in tree) / (P - 1)
        if w is None or abs(w - dist[b, j].item()) > 1e-5 or w <= ALPHA * mean_k * (1 - 1e-5):
            bad += 1
grad = torch.rand(B, N)
gx = torch.zeros(B, N, 3, device="cuda")
expansion_penalty.backward(xyz.cuda(), gx, grad.cuda(), idx)
il = idx.cpu().long()
other = torch.gather(xyz, 1, il.clamp(min=0)[..., None].expand(-1, -1, 3))
gref = torch.where(il[..., None] >= 0, 2 * grad[..., None] * (xyz - other), torch.zeros_like(xyz))
err_grad = (gx.cpu() - gref).abs().max().item()
ok = err_mean < 1e-5 and bad == 0 and penalised > 0 and err_grad < 1e-5
print("%s msn_expansion_penalty mean MST edge %.2e, %d penalised points (%d not a long tree edge), grad %.2e"
      % ("PASS" if ok else "FAIL", err_mean, penalised, bad, err_grad))
sys.exit(0 if ok else 1)
