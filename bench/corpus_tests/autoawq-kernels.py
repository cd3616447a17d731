# autoawq-kernels (casper-hansen AutoAWQ_kernels 0.0.9; top-level modules, no package): kernels of
# awq_ext, the module AutoAWQ's WQLinear_GEMM and fused layers call:
#  - gemm_forward_cuda (the 4-bit AWQ GEMM, both tile shapes: n % 128 == 0 -> m16n128k32 and
#    n % 64 == 0 -> m16n64k32, split_k 8 as AutoAWQ calls it) and dequantize_weights_cuda (AutoAWQ's
#    large-batch path: dequantise, then torch.matmul), against A @ W_deq in float64, where the weights
#    are quantised (zero point, per group) and packed here exactly as AutoAWQ's
#    WQLinear_GEMM.from_linear does: qweight int32 (k, n/8) and qzeros int32 (k/G, n/8) with the
#    nibble order [0, 2, 4, 6, 1, 3, 5, 7], scales fp16 (k/G, n), w = (q - z) * s;
#  - the fused layers layernorm_forward_cuda (T5/RMS norm, fp16), rotary_embedding_neox (in place on
#    q and k, fp32) and silu_and_mul, against float64 formulas.
# Bindings (awq_ext/pybind_awq.cpp and the headers): gemm_forward_cuda(in_feats half (m,k), kernel,
# scaling_factors, zeros, int split_k_iters) -> (m, n); dequantize_weights_cuda(kernel, scales, zeros,
# int split_k_iters, int thx, int thy, bool dbg) -> (k, n); layernorm_forward_cuda(input (b,s,n),
# gamma, out, float eps); rotary_embedding_neox(positions int64, query, key (b,s,heads,head_size),
# int head_size, cos_sin_cache (max_pos, rot_dim) = [cos | sin]); silu_and_mul(out (.., d), input (.., 2d)).
# Not tested: awq_v2_ext (TinyChat's interleaved layout), exl_ext/exlv2_ext (exllama kernels; the
# exllamav2 corpus test covers the same GPTQ kernels), grouped_gemm_forward, topk_softmax.
# Tolerance: dequantisation is exact in fp16 up to the product rounding and the GEMM sums in fp16
# over 8 split-k slices: mean |C - ref| / mean |ref| < 5e-3, max < 2e-2 of max |ref|; dequantised
# weights within 1e-3 of max |W|; fp16 norm/silu within 4e-3 of the max, fp32 rope within 1e-5.
# `--cpu` runs only the packer/dequantiser reference and its self-checks.
import sys
import traceback

import torch

NAME = "autoawq-kernels"
ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def to_i32(x):
    return torch.where(x >= 2 ** 31, x - 2 ** 32, x).int()


def awq_pack(intw):  # (rows, n) 4-bit -> (rows, n/8) int32, AutoAWQ's order map
    rows, n = intw.shape
    g = intw.long().reshape(rows, n // 8, 8)
    return to_i32(sum(g[:, :, ORDER[i]] << (4 * i) for i in range(8)))


def awq_unpack(p):
    p = p.long() & 0xFFFFFFFF
    nib = torch.stack([(p >> (4 * i)) & 15 for i in range(8)], 2)  # nib[..., i] = value of column ORDER[i]
    out = torch.empty_like(nib)
    out[:, :, ORDER] = nib
    return out.reshape(p.shape[0], -1)


def awq_quant(w, G):  # w (k, n) float -> packed dict, float64 dequantised (k, n)
    k, n = w.shape
    wg = w.reshape(k // G, G, n)
    mx, mn = wg.amax(1), wg.amin(1)
    s = ((mx - mn).clamp(min=1e-5) / 15).half()
    z = (-torch.round(mn / s.float())).clamp(0, 15).long()
    q = torch.clamp(torch.round(wg / s.float()[:, None]).long() + z[:, None], 0, 15).reshape(k, n)
    deq = ((q.reshape(k // G, G, n) - z[:, None]).double() * s.double()[:, None]).reshape(k, n)
    return dict(qweight=awq_pack(q), qzeros=awq_pack(z), scales=s), deq, q, z


def cases():
    torch.manual_seed(0)
    out = []
    for k, n, G in ((512, 256, 128), (512, 192, 64)):
        w = torch.randn(k, n) * 0.05
        packed, deq, q, z = awq_quant(w, G)
        assert torch.equal(awq_unpack(packed["qweight"]), q) and torch.equal(awq_unpack(packed["qzeros"]), z)
        srep = packed["scales"].float().repeat_interleave(G, 0)
        assert ((w - deq.float()).abs() <= srep * 1.01).all()
        out.append(("k%dn%dg%d" % (k, n, G), packed, deq))
    return out


def rel(x, ref):
    d = (x.double().cpu() - ref).abs()
    return (d.mean() / ref.abs().mean()).item(), (d.max() / ref.abs().max()).item()


def rope_ref(x, pos, cache):  # neox: rotate the two halves of the rotary dims
    rot = cache.shape[1]
    cos, sin = cache[pos][..., None, :rot // 2].double(), cache[pos][..., None, rot // 2:].double()
    x = x.double().clone()
    a, b = x[..., :rot // 2].clone(), x[..., rot // 2:rot].clone()
    x[..., :rot // 2] = a * cos - b * sin
    x[..., rot // 2:rot] = b * cos + a * sin
    return x


def main():
    qcases = cases()
    # the rotary reference is a rotation: it keeps each head's norm, and position 0 is the identity
    xr = torch.randn(3, 2, 64)
    ar = torch.arange(8).double()[:, None] * (1.0 / (10000 ** (torch.arange(0, 64, 2).double() / 64)))[None]
    cr = torch.cat([ar.cos(), ar.sin()], 1)
    yr = rope_ref(xr, torch.tensor([0, 3, 7]), cr)
    assert torch.allclose(yr.norm(dim=-1), xr.double().norm(dim=-1)) and torch.allclose(yr[0], xr[0].double())
    if "--cpu" in sys.argv:
        return True, "reference (cpu) AWQ pack/unpack round trip, |w - deq| <= scale, rope keeps norms"
    import awq_ext
    errs, bad = {}, []
    for tag, p, deq in qcases:
        qw, qz, sc = p["qweight"].cuda(), p["qzeros"].cuda(), p["scales"].cuda()
        dq = awq_ext.dequantize_weights_cuda(qw, sc, qz, 0, 0, 0, False)
        errs["dequant_" + tag] = rel(dq, deq)
        for m in (1, 16, 37):
            a = torch.randn(m, deq.shape[0]).half()
            errs["gemm_%s_m%d" % (tag, m)] = rel(awq_ext.gemm_forward_cuda(a.cuda(), qw, sc, qz, 8), a.double() @ deq)
    for key, (mean, mx) in errs.items():
        if not (mx < 1e-3 if key.startswith("dequant") else (mean < 5e-3 and mx < 2e-2)):
            bad.append(key)
    torch.manual_seed(1)
    # RMS (T5) norm, fp16
    x = torch.randn(2, 5, 1024).half()
    g = (torch.rand(1024) + 0.5).half()
    out = torch.empty(2, 5, 1024, dtype=torch.half, device="cuda")
    awq_ext.layernorm_forward_cuda(x.cuda(), g.cuda(), out, 1e-6)
    x64 = x.double()
    errs["rmsnorm"] = rel(out, x64 / torch.sqrt((x64 ** 2).mean(-1, keepdim=True) + 1e-6) * g.double())
    # neox rotary embedding, in place, fp32
    b, s, h, hd = 2, 6, 4, 64
    q, k = torch.randn(b, s, h, hd), torch.randn(b, s, h, hd)
    pos = torch.randint(0, 32, (b, s))
    inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
    ang = torch.arange(32).float()[:, None] * inv[None]
    cache = torch.cat([ang.cos(), ang.sin()], 1)  # (max_pos, rot_dim)
    qc, kc = q.cuda(), k.cuda()
    awq_ext.rotary_embedding_neox(pos.cuda(), qc, kc, hd, cache.cuda())
    errs["rope_q"] = rel(qc, rope_ref(q, pos, cache))
    errs["rope_k"] = rel(kc, rope_ref(k, pos, cache))
    # SwiGLU activation
    xi = torch.randn(9, 2 * 700).half()
    o = torch.empty(9, 700, dtype=torch.half, device="cuda")
    awq_ext.silu_and_mul(o, xi.cuda())
    xd = xi.double()
    errs["silu_and_mul"] = rel(o, torch.nn.functional.silu(xd[:, :700]) * xd[:, 700:])
    for key, tol in (("rmsnorm", 4e-3), ("rope_q", 1e-5), ("rope_k", 1e-5), ("silu_and_mul", 4e-3)):
        if not errs[key][1] < tol:
            bad.append(key)
    worst = max(v[1] for kk, v in errs.items() if kk.startswith("gemm"))
    msg = "gemm worst max rel %.2e, dequant %.2e, rmsnorm %.2e, rope %.2e, silu_and_mul %.2e" % (
        worst, max(v[1] for kk, v in errs.items() if kk.startswith("dequant")), errs["rmsnorm"][1],
        max(errs["rope_q"][1], errs["rope_k"][1]), errs["silu_and_mul"][1])
    if bad:
        msg += " FAILED " + ",".join("%s %.2e/%.2e" % (b_, errs[b_][0], errs[b_][1]) for b_ in bad)
    return not bad, msg


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
