# torchsparse 2.1.0 (git mit-han-lab/torchsparse 385f5ce): sparse 3D convolution and its helpers.
#
# RUN WITH `python3 -P` (the runner does): this file is named torchsparse.py, so without -P its own
# folder comes first on sys.path and `import torchsparse` would import this script.
#
# Loaded the normal way (`import torchsparse`; the compiled module is torchsparse.backend). The GPU
# machine has backports.cached_property and rootpath, which its __init__ / AttributeDict import.
# torchsparse.backends.init() calls torch.cuda.get_device_capability() at import, so the package
# cannot even be imported without a GPU: --cpu runs only the plain-torch references.
#
# What runs on the GPU, all through torchsparse's own Python API (SparseTensor + torchsparse.nn.Conv3d,
# coords (N, 4) int32 = [batch, x, y, z], spatial_range (B, D, H, W)), float32 features:
#  - Conv3d 1x1x1: no kernel of the package (conv3d does feats.matmul(weight)); checks the
#    (Cin, Cout) weight layout before the 3x3x3 cases.
#  - Conv3d 3x3x3 submanifold stride 1 with the default config (dataflow ImplicitGEMM, kmap_mode
#    hashmap_on_the_fly: build_kernel_map_subm_hashmap + conv_forward_implicit_gemm_cuda). On sm_80+
#    torchsparse.backends.init() sets allow_tf32=True, so the default fp32 conv runs the TF32 kernel
#    (conv_forward_cuda_setting*_mode0_tf32tf32f32): tolerance 1e-2 of max|ref| (TF32 keeps 10
#    mantissa bits, inputs rounded to ~5e-4 relative, 432-term sums; bound ~8e-3, typical ~1e-3).
#  - the same with torchsparse.backends.allow_tf32=False (f32f32f32 kernels), Cin/Cout 16/32
#    (setting1) and 32/64 (setting3): tolerance 1e-4 of max|ref|.
#  - backward (training=True: conv_forward_implicit_gemm_sorted_cuda for dgrad,
#    conv_backward_wgrad_implicit_gemm_sorted_cuda for wgrad), fp32 kernels, grads of feats and
#    weight against torch autograd: 1e-4 of max|ref grad|.
#  - dataflow GatherScatter (conv_forward_gather_scatter_cuda / conv_backward_gather_scatter_cuda,
#    forward and grads) and FetchOnDemand (conv_forward_fetch_on_demand_cuda, forward), fp32: 1e-4.
#  - Conv3d kernel 2 stride 2 (build_kernel_map_downsample_hashmap, ImplicitGEMM fp32, forward and
#    grads): the output voxel set must equal the cells whose 2x2x2 window holds an input; 1e-4.
#  - the package's CPU kernel conv_forward_gather_scatter_cpu(in, out, kernel, nbmaps, nbsizes,
#    transpose) on the GatherScatter kernel map: 1e-4.
#  - SparseTensor.dense() (to_dense_forward_cuda) against indexing: exact.
#  - F.sphash (hash_cuda: FNV-1a 64 of the 4 int32 coords, no fold; hash_cpu: FNV-1a folded as
#    (h >> 60) ^ (h & 0x0FFFFFFFFFFFFFFF), see backend/hash/*.cpp|cu) against numpy: exact.
#  - torchsparse.utils.quantize.sparse_quantize (numpy code) against np.unique: exact.
# Reference: the features scattered into a dense (B, C, D, H, W) grid, torch.nn.functional.conv3d
# (padding 1; stride 2 padding 0) in float64 on the CPU, read back at the output coordinates.
# Weight layout (K^3, Cin, Cout): from backend/others/sparsemapping_cuda.cu
# subm_hashmap_kmap_stage2_odd_kernel, kernel row k has offset (k % 3 - 1, k / 3 % 3 - 1,
# k / 9 - 1) on (x, y, z) (x fastest, as nn/utils/kernel.py get_kernel_offsets for odd volumes),
# and out_in_map[out][k] = the input at out + offset: a cross-correlation like torch's conv3d, so
# torch weight[co, ci, a, b, c] = W[a + 3 b + 9 c, ci, co]. Even kernels (downsample stage1/stage3)
# are z-fastest: W[4 a + 2 b + c]. Both agree with upstream tests/python/test_single_layer_conv.py
# (permute(4,3,2,1,0) odd, permute(4,3,0,1,2) even). --cpu checks gather convolutions written from
# those kernel maps against the dense reference. On a mismatch the FAIL line says which other offset
# order would have matched.
import sys
import traceback

import numpy as np
import torch
import torch.nn.functional as tF

NAME = "torchsparse"
B, R = 2, 10  # batches, grid side
NPTS = 300  # active voxels per batch (of R^3 = 1000)


def dense_weight(w, ks):
    """(ks^3, Cin, Cout) torchsparse kernel -> (Cout, Cin, ks, ks, ks) torch weight: rows are
    x-fastest for odd ks, z-fastest for even ks (as tests/python/test_single_layer_conv.py)."""
    v = w.reshape(ks, ks, ks, w.shape[1], w.shape[2])
    return v.permute(4, 3, 2, 1, 0) if ks % 2 else v.permute(4, 3, 0, 1, 2)


def alt_weights(w, ks):
    """The other plausible offset orders, only to explain a failure."""
    v = w.reshape(ks, ks, ks, w.shape[1], w.shape[2])
    xf, zf = v.permute(4, 3, 2, 1, 0), v.permute(4, 3, 0, 1, 2)
    alts = {"x-fastest": xf, "z-fastest": zf, "x-fastest,flipped": xf.flip(2, 3, 4),
            "z-fastest,flipped": zf.flip(2, 3, 4)}
    del alts["x-fastest" if ks % 2 else "z-fastest"]
    return alts


def densify(feats, coords):
    """(N, C) at (N, 4) [b, x, y, z] -> (B, C, R, R, R); differentiable in feats."""
    g = feats.new_zeros(B, R, R, R, feats.shape[1])
    c = coords.long()
    g = g.index_put((c[:, 0], c[:, 1], c[:, 2], c[:, 3]), feats)
    return g.permute(0, 4, 1, 2, 3)


def ref_conv(feats, coords, tw, out_coords, stride=1):
    """Dense conv3d (torch weight tw), read at out_coords -> (M, Cout). Stride 1: padding ks // 2
    (submanifold); stride > 1: padding 0 (Conv3d's padding for an even kernel)."""
    ks = tw.shape[-1]
    y = tF.conv3d(densify(feats, coords), tw, stride=stride, padding=ks // 2 if stride == 1 else 0)
    c = out_coords.long()
    return y.permute(0, 2, 3, 4, 1)[c[:, 0], c[:, 1], c[:, 2], c[:, 3]]


def down_coords(coords, ks, stride):
    """Output voxels of a strided sparse conv: every output cell whose window holds an input."""
    occ = densify(torch.ones(coords.shape[0], 1, dtype=torch.float64), coords)
    hit = tF.conv3d(occ, torch.ones(1, 1, ks, ks, ks, dtype=torch.float64), stride=stride)[:, 0] > 0
    return hit.nonzero().int()


def gather_conv(feats, coords, w, ks):
    """Submanifold conv written from sparsemapping_cuda.cu's kernel map, for the --cpu self-check."""
    lut = torch.full((B, R, R, R), -1, dtype=torch.long)
    c = coords.long()
    lut[c[:, 0], c[:, 1], c[:, 2], c[:, 3]] = torch.arange(c.shape[0])
    out = feats.new_zeros(c.shape[0], w.shape[2])
    h = ks // 2
    for k in range(ks**3):
        off = torch.tensor([0, k % ks - h, k // ks % ks - h, k // (ks * ks) - h])
        q = c + off
        ok = ((q[:, 1:] >= 0) & (q[:, 1:] < R)).all(1)
        idx = torch.full((c.shape[0],), -1, dtype=torch.long)
        qq = q[ok]
        idx[ok] = lut[qq[:, 0], qq[:, 1], qq[:, 2], qq[:, 3]]
        m = idx >= 0
        out = out.index_add(0, m.nonzero()[:, 0], feats[idx[m]] @ w[k])
    return out


def gather_down(feats, coords, w, out_coords, ks=2, stride=2):
    """Strided conv written from build_kernel_map_downsample_hashmap (stage1 even kernel: z-fastest
    digits, stage3 row kv-1-k): output o reads input o*stride + (a, b, c) with row a*ks*ks + b*ks + c."""
    lut = torch.full((B, R, R, R), -1, dtype=torch.long)
    c = coords.long()
    lut[c[:, 0], c[:, 1], c[:, 2], c[:, 3]] = torch.arange(c.shape[0])
    o = out_coords.long()
    out = feats.new_zeros(o.shape[0], w.shape[2])
    for k in range(ks**3):
        q = o * torch.tensor([1, stride, stride, stride]) + torch.tensor(
            [0, k // (ks * ks), k // ks % ks, k % ks])
        ok = ((q[:, 1:] >= 0) & (q[:, 1:] < R)).all(1)
        idx = torch.full((o.shape[0],), -1, dtype=torch.long)
        qq = q[ok]
        idx[ok] = lut[qq[:, 0], qq[:, 1], qq[:, 2], qq[:, 3]]
        m = idx >= 0
        out = out.index_add(0, m.nonzero()[:, 0], feats[idx[m]] @ w[k])
    return out


def make_points(gen):
    cs = []
    for b in range(B):
        cell = torch.randperm(R**3, generator=gen)[:NPTS]
        cs.append(torch.stack([torch.full_like(cell, b), cell // (R * R), cell // R % R, cell % R], 1))
    return torch.cat(cs).int()


def fnv_hash(c, fold):
    """hash_cpu / hash_cuda from backend/hash: FNV-1a 64 over the 4 coords (as unsigned int)."""
    h = np.full(c.shape[0], 14695981039346656037, dtype=np.uint64)
    for j in range(4):
        h ^= c[:, j].astype(np.uint32).astype(np.uint64)
        h *= np.uint64(1099511628211)
    if fold:
        h = (h >> np.uint64(60)) ^ (h & np.uint64(0xFFFFFFFFFFFFFFF))
    return h.view(np.int64)


def fnv_hash_py(row, fold):
    h = 14695981039346656037
    for v in row:
        h = ((h ^ (int(v) & 0xFFFFFFFF)) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    if fold:
        h = (h >> 60) ^ (h & 0xFFFFFFFFFFFFFFF)
    return h - (1 << 64) if h >= 1 << 63 else h


def rel(a, b):
    a, b = a.double().cpu(), b.double().cpu()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def cpu_checks():
    gen = torch.Generator().manual_seed(0)
    coords = make_points(gen)
    f = torch.randn(coords.shape[0], 16, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(27, 16, 32, generator=gen, dtype=torch.float64, requires_grad=True)
    a = gather_conv(f, coords, w, 3)
    b = ref_conv(f, coords, dense_weight(w, 3), coords)
    e_fwd = rel(a, b)
    g = torch.randn(a.shape, generator=gen, dtype=torch.float64)
    ga = torch.autograd.grad((a * g).sum(), (f, w))
    gb = torch.autograd.grad((b * g).sum(), (f, w))
    e_bwd = max(rel(x, y) for x, y in zip(ga, gb))
    # the alternative orders must differ, or the diagnosis and the layout check would mean nothing
    e_alt = min(rel(ref_conv(f, coords, tw, coords), b) for tw in alt_weights(w, 3).values())
    w1 = torch.randn(1, 16, 32, generator=gen, dtype=torch.float64)
    e_1 = rel(gather_conv(f, coords, w1, 1), ref_conv(f, coords, dense_weight(w1, 1), coords))
    w2 = torch.randn(8, 16, 32, generator=gen, dtype=torch.float64)
    oc = down_coords(coords, 2, 2)
    e_2 = rel(gather_down(f, coords, w2, oc), ref_conv(f, coords, dense_weight(w2, 2), oc, 2))
    cn = coords.numpy()
    hok = all(fnv_hash(cn[:5], fl)[i] == fnv_hash_py(cn[i], fl) for fl in (0, 1) for i in range(5))
    hok = hok and len(np.unique(fnv_hash(cn, False))) == cn.shape[0]
    assert e_fwd < 1e-12 and e_bwd < 1e-12 and e_1 < 1e-12 and e_2 < 1e-12 and e_alt > 0.1 and hok, (
        e_fwd, e_bwd, e_1, e_2, e_alt, hok)
    return ("gather-vs-dense fwd %.1e grad %.1e 1x1x1 %.1e k2s2 %.1e (%d out) alt-orders>=%.2f "
            "hash ok" % (e_fwd, e_bwd, e_1, e_2, oc.shape[0], e_alt))


def gpu_checks():
    import torchsparse
    import torchsparse.backend
    import torchsparse.backends
    from torchsparse import SparseTensor
    from torchsparse.nn import Conv3d
    from torchsparse.nn import functional as F
    from torchsparse.utils.quantize import sparse_quantize

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    coords = make_points(gen)
    dev = torch.device("cuda")
    coords_d = coords.to(dev)
    errs, bad = {}, []
    default_cfg = F.conv_config.get_default_conv_config()
    default_flow = default_cfg.dataflow.name
    tf32_default = bool(torchsparse.backends.allow_tf32)

    def config(flow):
        cfg = type(default_cfg)(dict(default_cfg))  # an AttributeDict copy; conv3d mutates ifsort
        cfg.dataflow = flow
        return cfg

    def conv(tag, cin, cout, ks, cfg, tol, train=False, grads=False, stride=1):
        f = torch.randn(coords.shape[0], cin, generator=gen)
        w = torch.randn(ks**3, cin, cout, generator=gen) / (cin * ks**3) ** 0.5
        fd = f.to(dev).requires_grad_(grads)
        m = Conv3d(cin, cout, ks, stride=stride, bias=False, config=cfg).to(dev)
        with torch.no_grad():
            m.kernel.copy_(w if m.kernel.dim() == 3 else w[0])
        m.train(train)
        x = SparseTensor(fd, coords_d, spatial_range=(B, R, R, R))
        y = m(x)
        oc = y.coords.cpu()
        want = coords if stride == 1 else down_coords(coords, ks, stride)
        if not torch.equal(key(oc), key(want)) or y.feats.shape != (want.shape[0], cout):
            raise RuntimeError("%s: output %s at %s coords, want %s coords" % (
                tag, tuple(y.feats.shape), oc.shape[0], want.shape[0]))
        fr = f.double().requires_grad_(grads)
        wr = w.double().requires_grad_(grads)
        ref = ref_conv(fr, coords, dense_weight(wr, ks), oc, stride)
        e = rel(y.feats.detach(), ref.detach())
        errs[tag] = e
        if e > tol:
            alts = {n: rel(y.feats.detach(), ref_conv(f.double(), coords, tw, oc, stride))
                    for n, tw in alt_weights(w.double(), ks).items()} if ks > 1 else {}
            bad.append("%s %.2e>%.0e%s" % (tag, e, tol, "".join(
                " (%s %.1e)" % kv for kv in alts.items())))
        if grads:
            g = torch.randn(y.feats.shape, generator=gen)
            (y.feats * g.to(dev)).sum().backward()
            gf, gw = torch.autograd.grad((ref * g.double()).sum(), (fr, wr))
            for n, a, b in (("dfeat", fd.grad, gf), ("dW", m.kernel.grad, gw)):
                errs[tag + "." + n] = e = rel(a, b)
                if e > tol:
                    bad.append("%s.%s %.2e>%.0e" % (tag, n, e, tol))
        return x, f, w

    def key(c):
        return (((c[:, 0].long() * R + c[:, 1]) * R + c[:, 2]) * R + c[:, 3]).sort().values

    def guarded(tag, fn, *args, **kw):
        """One check; an exception fails it (traceback printed) and the others still run."""
        try:
            return fn(*args, **kw)
        except Exception as e:
            traceback.print_exc(file=sys.stdout)
            bad.append("%s %s: %s" % (tag, type(e).__name__, (str(e).splitlines() or [""])[0][:200]))
            return None

    def check(tag, ok):
        if not ok:
            bad.append(tag)

    guarded("1x1x1", conv, "1x1x1", 16, 32, 1, None, 1e-4)  # torch matmul in conv3d, no kernel
    guarded("default", conv, "default", 16, 32, 3, None, 1e-2 if tf32_default else 1e-4)
    torchsparse.backends.allow_tf32 = False
    ig = F.Dataflow.ImplicitGEMM
    guarded("igemm16x32", conv, "igemm16x32", 16, 32, 3, config(ig), 1e-4)
    guarded("igemm32x64", conv, "igemm32x64", 32, 64, 3, config(ig), 1e-4)
    guarded("igemm.train", conv, "igemm.train", 16, 32, 3, config(ig), 1e-4, train=True,
            grads=True)
    gs = guarded("gather", conv, "gather", 16, 32, 3, config(F.Dataflow.GatherScatter), 1e-4,
                 train=True, grads=True)
    guarded("fetch", conv, "fetch", 16, 32, 3, config(F.Dataflow.FetchOnDemand), 1e-4)
    # downsampling: kernel 2 stride 2 (build_kernel_map_downsample_hashmap), as in examples/example.py
    guarded("igemm.k2s2", conv, "igemm.k2s2", 16, 32, 2, config(ig), 1e-4, train=True, grads=True,
            stride=2)

    def gather_cpu(x, f, w):
        # the package's CPU kernel on the GatherScatter kernel map: conv_forward_gather_scatter_cpu(
        #   in_feat, out_feat, kernel, neighbor_map, neighbor_offset, transpose)
        kmap = next(iter(x._caches.kmaps.values()))
        out = torch.zeros(coords.shape[0], 32)
        torchsparse.backend.conv_forward_gather_scatter_cpu(
            f.contiguous(), out, w.contiguous(), kmap["nbmaps"].int().cpu().contiguous(),
            kmap["nbsizes"].int().cpu().contiguous(), False)
        ref = ref_conv(f.double(), coords, dense_weight(w.double(), 3), coords)
        errs["gather_cpu"] = e = rel(out, ref)
        check("gather_cpu %.2e" % e, e <= 1e-4)

    if gs is not None:
        guarded("gather_cpu", gather_cpu, *gs)

    def dense():  # to_dense_forward_cuda
        fd = torch.randn(coords.shape[0], 8, generator=gen)
        dn = SparseTensor(fd.to(dev), coords_d, spatial_range=(B, R, R, R)).dense().cpu()
        check("dense", torch.equal(dn, densify(fd, coords).permute(0, 2, 3, 4, 1)))

    def hashes():  # hash_cuda / hash_cpu
        cn = coords.numpy()
        check("hash_cuda", np.array_equal(F.sphash(coords_d).cpu().numpy(), fnv_hash(cn, False)))
        check("hash_cpu", np.array_equal(F.sphash(coords).numpy(), fnv_hash(cn, True)))

    def quantize():  # sparse_quantize (numpy) against np.unique
        pts = np.random.default_rng(0).uniform(0, 4, size=(2000, 3))
        q, idx, inv = sparse_quantize(pts, 0.5, return_index=True, return_inverse=True)
        fl = np.floor(pts / 0.5).astype(np.int32)
        check("sparse_quantize", np.array_equal(q, np.unique(fl, axis=0))
              and np.array_equal(fl[idx], q) and np.array_equal(q[inv.reshape(-1)], fl))

    guarded("dense", dense)
    guarded("hash", hashes)
    guarded("sparse_quantize", quantize)

    torch.cuda.synchronize()
    cfg = "default=%s(%s)" % (default_flow, "tf32" if tf32_default else "fp32")
    msg = cfg + " " + " ".join("%s=%.1e" % kv for kv in errs.items())
    return msg, bad


def main():
    try:
        ref = cpu_checks()
        if "--cpu" in sys.argv:
            print("PASS %s reference (cpu) %s" % (NAME, ref))
            return 0
        msg, bad = gpu_checks()
    except Exception as e:  # an exception is a failure too
        traceback.print_exc(file=sys.stdout)
        print("FAIL %s %s: %s" % (NAME, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        return 1
    if bad:
        print("FAIL %s %s | %s" % (NAME, "; ".join(bad), msg))
        return 1
    print("PASS %s %s hash/dense/quantize exact" % (NAME, msg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
