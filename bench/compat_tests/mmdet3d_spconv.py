# mmdetection3d v0.17.3 (open-mmlab/mmdetection3d): its vendored spconv 1.x
# (mmdet3d.ops.spconv.sparse_conv_ext) and its voxelization (mmdet3d.ops.voxel.voxel_layer).
# - A submanifold and a strided sparse 3D convolution, called as mmdet3d/ops/spconv/ops.py
#   calls them (get_indice_pairs_3d, then indice_conv_fp32), on 200 random active voxels of a
#   16^3 grid in two batches (4 channels in, 8 out), against the definition (each output
#   site sums W[k] @ x over its active neighbours, a Python loop) and torch's dense conv3d of
#   the densified input at the output sites; the strided one's output sites must be exactly
#   those whose receptive field holds an active voxel.
# - dynamic_voxelize and the deterministic hard_voxelize against plain torch / a Python loop.
# The modules are loaded by their files: mmdet3d's __init__ imports mmcv 1.x, which torch 2
# cannot install. `--cpu` runs only the reference part (a machine without a GPU checks it);
# `--ext-cpu` runs the extensions' own CPU paths instead of the GPU (the built wheel here).
import glob
import importlib.util
import itertools
import os
import sys
import torch
import torch.nn.functional as F

TOL = 1e-4


def load(folder, name):
    so = [f for p in sys.path
          for f in glob.glob(os.path.join(p or ".", "mmdet3d", "ops", folder, name + "*.so"))]
    if not so:
        print("FAIL no mmdet3d/ops/%s/%s*.so on sys.path" % (folder, name))
        sys.exit(1)
    spec = importlib.util.spec_from_file_location(name, so[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def by_definition(indices, feats, weight, out_sites, stride, padding):
    # out[o] = sum over kernel offsets k and active inputs i with i = o*stride - padding + k
    # of feats[i] @ weight[k]  (torch's conv3d is a cross-correlation: the same k order).
    where = {tuple(r): n for n, r in enumerate(indices.tolist())}
    K = weight.shape[0]
    out = torch.zeros(len(out_sites), weight.shape[-1], dtype=torch.float64)
    for n, (b, z, y, x) in enumerate(out_sites.tolist()):
        for kz, ky, kx in itertools.product(range(K), repeat=3):
            i = where.get((b, z * stride - padding + kz, y * stride - padding + ky,
                           x * stride - padding + kx))
            if i is not None:
                out[n] += feats[i].double() @ weight[kz, ky, kx].double()
    return out


def dense_at(indices, feats, weight, sites, B, S, stride, padding):
    X = torch.zeros(B, feats.shape[1], S, S, S)
    b, z, y, x = indices.long().unbind(1)
    X[b, :, z, y, x] = feats
    Y = F.conv3d(X.double(), weight.permute(4, 3, 0, 1, 2).double(), stride=stride,
                 padding=padding)
    ob, oz, oy, ox = sites.long().unbind(1)
    mask = torch.zeros(B, 1, S, S, S, dtype=torch.float64)
    mask[b, 0, z, y, x] = 1
    reach = F.conv3d(mask, torch.ones(1, 1, 3, 3, 3, dtype=torch.float64), stride=stride,
                     padding=padding)[:, 0] > 0
    return Y[ob, :, oz, oy, ox], reach


def voxel_reference(points, vsize, crange, max_points, max_voxels):
    lo, size = torch.tensor(crange[:3]), torch.tensor(vsize)
    grid = torch.round((torch.tensor(crange[3:]) - lo) / size).long()
    c = torch.floor((points[:, :3] - lo) / size).long()
    valid = ((c >= 0) & (c < grid)).all(1)
    zyx = c.flip(1)
    dyn = torch.where(valid[:, None], zyx, torch.full_like(zyx, -1))
    voxels, coors, counts, seen = [], [], [], {}
    for n in range(points.shape[0]):
        if not valid[n]:
            continue
        key = tuple(zyx[n].tolist())
        if key not in seen:
            if len(coors) >= max_voxels:
                continue
            seen[key] = len(coors)
            coors.append(key)
            counts.append(0)
            voxels.append(torch.zeros(max_points, points.shape[1]))
        v = seen[key]
        if counts[v] < max_points:
            voxels[v][counts[v]] = points[n]
            counts[v] += 1
    return dyn, torch.stack(voxels), torch.tensor(coors), torch.tensor(counts)


torch.manual_seed(0)
B, S, CIN, COUT, N = 2, 16, 4, 8, 200
flat = torch.randperm(B * S ** 3)[:N]
indices = torch.stack([flat // S ** 3, flat // S ** 2 % S, flat // S % S, flat % S], 1).int()
feats = torch.randn(N, CIN)
w_subm = torch.randn(3, 3, 3, CIN, COUT) * 0.2
w_conv = torch.randn(3, 3, 3, CIN, COUT) * 0.2
OUT = (S + 2 - 2 - 1) // 2 + 1  # kernel 3, stride 2, padding 1
# Reference self-check: the definition and the dense convolution agree.
ref_subm = by_definition(indices, feats, w_subm, indices, 1, 1)
dense_subm, _ = dense_at(indices, feats, w_subm, indices, B, S, 1, 1)
assert (ref_subm - dense_subm).abs().max() < 1e-9
all_out = torch.tensor(list(itertools.product(range(B), range(OUT), range(OUT), range(OUT))))
dense_all, reach = dense_at(indices, feats, w_conv, all_out, B, S, 2, 1)
want_sites = all_out[reach.reshape(-1)]
ref_conv = by_definition(indices, feats, w_conv, want_sites, 2, 1)
assert (ref_conv - dense_all[reach.reshape(-1)]).abs().max() < 1e-9
points = torch.rand(3000, 4) * torch.tensor([44.0, 44.0, 6.0, 1.0]) - torch.tensor(
    [2.0, 2.0, 1.0, 0.0])
vsize, crange = [0.5, 0.5, 0.5], [0.0, 0.0, 0.0, 40.0, 40.0, 4.0]
dyn_ref, vox_ref, coor_ref, cnt_ref = voxel_reference(points, vsize, crange, 5, 2000)
if "--cpu" in sys.argv:
    print("PASS mmdet3d spconv reference (cpu): subm %d sites, conv %d sites; voxels %d"
          % (N, len(want_sites), len(coor_ref)))
    sys.exit(0)

dev = "cpu" if "--ext-cpu" in sys.argv else "cuda"
ext = load("spconv", "sparse_conv_ext")
vl = load("voxel", "voxel_layer")
errors = {}
# Submanifold: the input sites are the output sites (ops.get_indice_pairs, subm=True).
_, pairs, num = ext.get_indice_pairs_3d(indices.to(dev), B, [S] * 3, [S] * 3, [3] * 3, [1] * 3,
                                        [0] * 3, [1] * 3, [0] * 3, 1, 0)
out = ext.indice_conv_fp32(feats.to(dev), w_subm.to(dev), pairs, num, N, 0, 1)
errors["subm"] = (out.cpu().double() - ref_subm).abs().max().item()
# Strided: its own output sites, in its own order.
outids, pairs, num = ext.get_indice_pairs_3d(indices.to(dev), B, [OUT] * 3, [S] * 3, [3] * 3,
                                             [2] * 3, [1] * 3, [1] * 3, [0] * 3, 0, 0)
out = ext.indice_conv_fp32(feats.to(dev), w_conv.to(dev), pairs, num, outids.shape[0], 0, 0)
got_sites = outids.cpu().long()
same_sites = sorted(map(tuple, got_sites.tolist())) == sorted(map(tuple, want_sites.tolist()))
ref_at = by_definition(indices, feats, w_conv, got_sites, 2, 1)
errors["conv"] = (out.cpu().double() - ref_at).abs().max().item()
# Voxelization.
coors = torch.zeros(points.shape[0], 3, dtype=torch.int32, device=dev)
vl.dynamic_voxelize(points.to(dev), coors, vsize, crange, 3)
coors = coors.cpu().long()
valid = dyn_ref[:, 0] >= 0
dyn_ok = bool((coors[valid] == dyn_ref[valid]).all() and (coors[~valid][:, 0] == -1).all())
voxels = torch.zeros(2000, 5, 4, device=dev)
vcoors = torch.zeros(2000, 3, dtype=torch.int32, device=dev)
counts = torch.zeros(2000, dtype=torch.int32, device=dev)
m = vl.hard_voxelize(points.to(dev), voxels, vcoors, counts, vsize, crange, 5, 2000, 3, True)
hard_ok = (m == len(coor_ref) and torch.equal(vcoors[:m].cpu().long(), coor_ref) and
           torch.equal(counts[:m].cpu().long(), cnt_ref) and
           torch.equal(voxels[:m].cpu(), vox_ref))
ok = (same_sites and errors["subm"] < TOL and errors["conv"] < TOL and dyn_ok and hard_ok)
print("%s mmdet3d (%s) spconv subm %.1e conv %.1e (%d output sites, %s), voxelize dynamic %s "
      "hard %s (%d voxels)"
      % ("PASS" if ok else "FAIL", dev, errors["subm"], errors["conv"], outids.shape[0],
         "the expected sites" if same_sites else "OTHER sites", "ok" if dyn_ok else "WRONG",
         "ok" if hard_ok else "WRONG", m))
sys.exit(0 if ok else 1)
