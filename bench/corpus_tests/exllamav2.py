# exllamav2 (turboderp-org, 0.3.2): kernels of its compiled top-level module exllamav2_ext:
#  - the 4-bit GPTQ matrix path: make_q_matrix (shuffles the packed weights on the GPU; with a
#    g_idx it also builds the act-order permutation), reconstruct (dequantise to fp16) and
#    gemm_half_q_half (the fused GPTQ GEMM kernel with force_cuda, and reconstruct + cuBLAS for
#    m > 32 without it), against A @ W_deq in float64 where W_deq is dequantised here from a GPTQ
#    packer written here after the GPTQ v1 format exllamav2 reads (qweight int32 (k/8, n): row r
#    packs rows 8r..8r+7 at bits 4j; qzeros int32 (groups, n/8) holding zero-1; scales fp16
#    (groups, n); w = scale * (q - zero)), once with sequential groups and once act-order (g_idx);
#  - the fused norms rms_norm (fp16 and fp32 in/out) and layer_norm, against float64 formulas.
# Bindings (exllamav2_ext/ext_qmatrix.cpp, ext_norm.cpp): make_q_matrix(q_weight, q_perm, q_invperm,
# q_scale, q_scale_max, q_groups, q_group_map, gptq_qzeros, gptq_scales, gptq_g_idx, bias, temp_dq,
# int max_dq_rows) -> handle (unused tensors on the meta device, as exllamav2/ext.py passes them);
# reconstruct(handle, out); gemm_half_q_half(a, handle, c, bool force_cuda); free_q_matrix(handle);
# rms_norm(x, w, y, float eps); layer_norm(x, w, b, y, float eps).
# Tolerance: the kernels dequantise in fp16 and accumulate partly in fp16 (half2 dot products), so
# mean |C - ref| / mean |ref| < 5e-3 and max error < 2e-2 of max |ref|; reconstruct within 4e-3 of
# max |W|; norms within 4e-3 of the max (fp16 output) and 1e-4 for fp32 in/out.
# `import exllamav2` pulls in its tokenizer/generator stack, so exllamav2_ext is imported directly
# (it is a top-level module of the wheel; exllamav2/ext.py imports it the same way when prebuilt).
# `--cpu` runs only the packer/dequantiser reference and its self-checks.
import sys
import traceback

import torch

NAME = "exllamav2"
GS = 128


def to_i32(x):  # int64 holding a uint32 bit pattern -> int32 with the same bits
    return torch.where(x >= 2 ** 31, x - 2 ** 32, x).int()


def pack_rows(q):  # (k, n) 4-bit -> (k/8, n) int32, row 8r+j at bits 4j
    k, n = q.shape
    q = q.long().reshape(k // 8, 8, n)
    return to_i32(sum(q[:, j] << (4 * j) for j in range(8)))


def pack_cols(z):  # (g, n) 4-bit -> (g, n/8) int32, column 8c+j at bits 4j
    g, n = z.shape
    z = z.long().reshape(g, n // 8, 8)
    return to_i32(sum(z[:, :, j] << (4 * j) for j in range(8)))


def unpack_rows(p):
    p = p.long() & 0xFFFFFFFF
    return torch.stack([(p >> (4 * j)) & 15 for j in range(8)], 1).reshape(-1, p.shape[1])


def gptq_quant(w, g_idx):  # w (k, n) float; g_idx (k,) group of each row
    groups = int(g_idx.max()) + 1
    k, n = w.shape
    scale = torch.empty(groups, n, dtype=torch.half)
    zero = torch.empty(groups, n, dtype=torch.long)
    for g in range(groups):
        rows = w[g_idx == g]
        mn, mx = rows.amin(0).clamp(max=0), rows.amax(0).clamp(min=0)
        scale[g] = ((mx - mn) / 15).half()
        zero[g] = torch.round(-mn / scale[g].float()).clamp(1, 15).long()
    s, z = scale[g_idx].float(), zero[g_idx]
    q = torch.clamp(torch.round(w / s).long() + z, 0, 15)
    deq = scale[g_idx].double() * (q - z).double()
    return dict(qweight=pack_rows(q), qzeros=pack_cols(zero - 1), scales=scale), deq, q, zero


def self_check(w, packed, deq, q, zero, g_idx):
    assert torch.equal(unpack_rows(packed["qweight"]), q)
    zc = packed["qzeros"].long() & 0xFFFFFFFF
    zu = torch.stack([(zc >> (4 * j)) & 15 for j in range(8)], 2).reshape(zero.shape)
    assert torch.equal(zu + 1, zero)
    s = packed["scales"].float()[g_idx]
    assert ((w - deq.float()).abs() <= s * 1.01).all()


def cases():
    torch.manual_seed(0)
    k, n = 1024, 512
    seq = torch.arange(k) // GS
    perm = torch.randperm(k)
    act = torch.empty(k, dtype=torch.long)
    act[perm] = torch.arange(k) // GS  # act-order: groups follow a permutation of the rows
    out = []
    for tag, g_idx in (("seq", seq), ("act", act)):
        w = torch.randn(k, n) * 0.05
        packed, deq, q, zero = gptq_quant(w, g_idx)
        self_check(w, packed, deq, q, zero, g_idx)
        out.append((tag, g_idx, packed, deq))
    return out


def rel(x, ref):
    d = (x.double().cpu() - ref).abs()
    return (d.mean() / ref.abs().mean()).item(), (d.max() / ref.abs().max()).item()


def main():
    qcases = cases()
    if "--cpu" in sys.argv:
        return True, "reference (cpu) GPTQ pack/unpack round trip, |w - deq| <= scale"
    import exllamav2_ext as ext
    meta = torch.empty((1, 1), device="meta")
    errs, bad = {}, []
    for tag, g_idx, packed, deq in qcases:
        k, n = deq.shape
        # QMatrix keeps raw pointers to these tensors: they must outlive the handle, as the
        # module's weight dict keeps them in exllamav2 (temporaries passed straight in are freed
        # and their memory reused by the next allocation: the first GPU run's NaN)
        qweight = packed["qweight"].cuda()
        qzeros, scales = packed["qzeros"].cuda(), packed["scales"].cuda()
        temp_dq = torch.empty(k * n, dtype=torch.half, device="cuda")
        if tag == "seq":
            h = ext.make_q_matrix(qweight, meta, meta, meta, meta, meta, meta, qzeros, scales, meta, meta,
                                  temp_dq, k)
        else:
            q_perm = torch.empty(k, dtype=torch.short, device="cuda")
            q_invperm = torch.empty_like(q_perm)
            h = ext.make_q_matrix(qweight, q_perm, q_invperm, meta, meta, meta, meta, qzeros, scales,
                                  g_idx.int(), meta, temp_dq, k)
        # reconstruct writes each row back to its original place (through q_perm for act-order)
        rec = torch.empty(k, n, dtype=torch.half, device="cuda")
        ext.reconstruct(h, rec)
        errs["reconstruct_" + tag] = rel(rec, deq)
        for m, force in ((1, True), (8, True), (40, True), (40, False)):
            a = torch.randn(m, k, dtype=torch.half)
            c = torch.empty(m, n, dtype=torch.half, device="cuda")
            ext.gemm_half_q_half(a.cuda(), h, c, force)
            errs["%s_m%d_%s" % (tag, m, "q" if force else "dq")] = rel(c, a.double() @ deq)
        ext.free_q_matrix(h)
    for key, (mean, mx) in errs.items():
        if not (mx < 4e-3 if key.startswith("reconstruct") else (mean < 5e-3 and mx < 2e-2)):
            bad.append(key)
    # fused norms
    torch.manual_seed(1)
    dim, eps = 2048, 1e-6
    x = torch.randn(7, dim) * 3
    wn = (torch.rand(dim) + 0.5).half()
    bn = torch.randn(dim).half()
    x64 = x.half().double()
    rms_ref = x64 / torch.sqrt((x64 * x64).mean(1, keepdim=True) + eps) * wn.double()
    y = torch.empty(7, dim, dtype=torch.half, device="cuda")
    ext.rms_norm(x.half().cuda(), wn.cuda(), y, eps)
    errs["rms_norm"] = rel(y, rms_ref)
    yf = torch.empty(7, dim, dtype=torch.float, device="cuda")
    ext.rms_norm(x.cuda(), wn.cuda(), yf, eps)
    xf = x.double()
    errs["rms_norm_fp32"] = rel(yf, xf / torch.sqrt((xf * xf).mean(1, keepdim=True) + eps) * wn.double())
    mu = x64.mean(1, keepdim=True)
    ln_ref = (x64 - mu) / torch.sqrt(((x64 - mu) ** 2).mean(1, keepdim=True) + eps) * wn.double() + bn.double()
    y = torch.empty(7, dim, dtype=torch.half, device="cuda")
    ext.layer_norm(x.half().cuda(), wn.cuda(), bn.cuda(), y, eps)
    errs["layer_norm"] = rel(y, ln_ref)
    for key in ("rms_norm", "layer_norm"):
        if not errs[key][1] < 4e-3:
            bad.append(key)
    if not errs["rms_norm_fp32"][1] < 1e-4:
        bad.append("rms_norm_fp32")
    worst = max(v[1] for kk, v in errs.items() if "_m" in kk)
    rec = max(errs["reconstruct_seq"][1], errs["reconstruct_act"][1])
    msg = "gemm worst max rel %.2e, reconstruct %.2e, rms_norm %.2e/%.2e, layer_norm %.2e" % (
        worst, rec, errs["rms_norm"][1], errs["rms_norm_fp32"][1], errs["layer_norm"][1])
    if bad:
        msg += " FAILED " + ",".join("%s %.2e/%.2e" % (b, errs[b][0], errs[b][1]) for b in bad)
    return not bad, msg


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
