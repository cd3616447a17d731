# sageattention (thu-ml SageAttention 2.2.0): quantised attention. Kernels: on sm_90 sageattn() runs
# sageattn_qk_int8_pv_fp8_cuda_sm90 -> _qattn_sm90.qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf
# (INT8 Q/K, FP8 P and V, fp32 accumulation; V quantised by _fused.transpose_pad_permute_cuda /
# scale_fuse_quant_cuda); also sageattn_qk_int8_pv_fp16_cuda -> _qattn_sm80.qk_int8_sv_f16_accum_f32_attn
# (INT8 Q/K, FP16 PV; built for 9.0 too), with causal masks, HND and NHD layouts, fp16 and bf16, a
# kv length that is no multiple of 128 (the sm90 path pads V), and the returned log-sum-exp.
# Reference: softmax(q k^T * d^-0.5) v in float64 on the CPU (checked against
# torch.nn.functional.scaled_dot_product_attention in the self-check).
# Tolerance, from the format: Q/K are INT8 per thread/block (~0.4% of the block max per element)
# and V/P are FP8 e4m3 (3 mantissa bits, ~3% per element) with fp32 sums, so the output is close in
# direction but not bitwise: cosine similarity > 0.99 and relative L2 error < 0.1 per case (a wrong
# kernel gives cosine near 0). The lse (natural log) carries the INT8 score error (~0.02 per score,
# averaged over the keys a row attends to, barely at all for the first causal rows): mean |error|
# < 0.02 and max < 0.15 (a wrong base or scale is off by whole units).
# The package is imported the normal way; sageattention.sm90_compile / sm80_compile are imported
# explicitly first because its core swallows their import errors (SM90_ENABLED = False).
# `--cpu` runs only the reference and its self-checks.
import sys
import traceback

import torch
import torch.nn.functional as F

NAME = "sageattention"


def attn_ref(q, k, v, causal):  # HND, float64
    s = q.double() @ k.double().transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool).triu(m - n + 1), float("-inf"))
    return torch.softmax(s, -1) @ v.double(), torch.logsumexp(s, -1)


def compare(o, ref):
    o = o.double().cpu().flatten()
    r = ref.flatten()
    cos = F.cosine_similarity(o, r, dim=0).item()
    l2 = ((o - r).norm() / r.norm()).item()
    return cos, l2


def make(b, h, n, d, dtype):
    # q scaled up so the attention rows are peaked rather than flat (a flat softmax averages the
    # quantisation noise away and would hide errors)
    q = (torch.randn(b, h, n, d) * 2).to(dtype)
    k = torch.randn(b, h, n, d).to(dtype)
    v = torch.randn(b, h, n, d).to(dtype)
    return q, k, v


def self_check():
    q, k, v = make(1, 2, 70, 64, torch.float32)
    for causal in (False, True):
        ref, _ = attn_ref(q, k, v, causal)
        sd = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
        assert torch.allclose(ref, sd, atol=1e-10), "reference disagrees with SDPA"
    c, l2 = compare(ref.float() * 1.01, ref)
    assert c > 0.9999 and abs(l2 - 0.01) < 1e-6


def main():
    torch.manual_seed(0)
    self_check()
    if "--cpu" in sys.argv:
        return True, "reference (cpu) == SDPA (float64), causal and not"
    import sageattention
    import sageattention.sm80_compile  # noqa: F401  (surface a failing extension import)
    import sageattention.sm90_compile  # noqa: F401
    from sageattention import core
    assert core.SM90_ENABLED and core.SM80_ENABLED, "sm90/sm80 kernels not enabled"
    assert torch.cuda.get_device_capability() == (9, 0), "this test expects sm_90 (sageattn -> sm90 kernel)"
    res = {}
    cases = [  # (tag, dtype, n, d, causal, function)
        ("sm90_f16", torch.float16, 1000, 128, False, "sageattn"),
        ("sm90_bf16_causal", torch.bfloat16, 512, 64, True, "sageattn"),
        ("sm90_nhd", torch.float16, 300, 128, False, "nhd"),
        ("sm80_f16", torch.float16, 1000, 128, False, "sm80"),
        ("sm80_causal", torch.bfloat16, 256, 64, True, "sm80"),
    ]
    lse_err, lse_mean = 0.0, 0.0
    for tag, dtype, n, d, causal, fn in cases:
        q, k, v = make(2, 4, n, d, dtype)
        ref, lse_ref = attn_ref(q, k, v, causal)
        qc, kc, vc = q.cuda(), k.cuda(), v.cuda()
        if fn == "sageattn":
            o, lse = sageattention.sageattn(qc, kc, vc, tensor_layout="HND", is_causal=causal, return_lse=True)
            d = (lse.double().cpu() - lse_ref).abs()
            lse_err, lse_mean = max(lse_err, d.max().item()), max(lse_mean, d.mean().item())
        elif fn == "nhd":
            o = sageattention.sageattn_qk_int8_pv_fp8_cuda_sm90(
                qc.transpose(1, 2).contiguous(), kc.transpose(1, 2).contiguous(), vc.transpose(1, 2).contiguous(),
                tensor_layout="NHD", is_causal=causal).transpose(1, 2)
        else:
            o = sageattention.sageattn_qk_int8_pv_fp16_cuda(qc, kc, vc, tensor_layout="HND", is_causal=causal,
                                                           pv_accum_dtype="fp32")
        assert o.shape == q.shape and o.dtype == dtype, (tag, o.shape, o.dtype)
        res[tag] = compare(o, ref)
    ok = all(c > 0.99 and l2 < 0.1 for c, l2 in res.values()) and lse_mean < 0.02 and lse_err < 0.15
    return ok, " ".join("%s cos %.5f l2 %.3f" % (t, c, l2) for t, (c, l2) in res.items()) + \
        " lse mean %.3f max %.3f" % (lse_mean, lse_err)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
