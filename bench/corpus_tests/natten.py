# natten (SHI-Labs NATTEN 0.21.7): neighborhood attention through its own Python API natten.na1d /
# natten.na2d with the backend forced, so each libnatten CUDA kernel family is the one that runs:
#  - backend="cutlass-fna" (the CUTLASS 2.x fused neighborhood attention, forward and backward):
#    1-D, fp32, kernel 7, dilation 2, with gradients; 1-D causal fp16 forward;
#  - backend="hopper-fna" (the sm_90 TMA/WGMMA kernels plus the token-permute kernels): 2-D, fp16,
#    kernel (5, 7), dilation (1, 2), head_dim 64, forward and backward; and 2-D bf16 with the
#    backend left to natten (it must pick hopper-fna on an H200, asserted through its chooser).
# Reference: plain-torch masked softmax attention in float64 (autograd for the gradients), the mask
# built here from NATTEN's window rule (csrc/include/natten/cuda/reference/mask.hpp, stride 1): per
# dimension, tokens split into dilation groups i % d; within a group of length Lg, query a sees keys
# [s, s + K) with s = min(max(a - K//2, 0), Lg - K), or [max(a - K + 1, 0), a] when causal; the N-D
# neighborhood is the product of the per-dimension windows. Layout [batch, *tokens, heads, dim].
# Tolerance: fp32 kernels within 1e-4 of max |ref| (output and grads); fp16/bf16 inputs are exact in
# float64, the kernels use fp32 softmax/accumulation and round the output: output within 1e-2 and
# gradients within 3e-2 of max |ref| (bf16: 3e-2 for the output).
# natten's __init__ swallows a failing `from natten import libnatten` (HAS_LIBNATTEN = False, then it
# would quietly fall back to flex attention), so the test imports natten.libnatten itself first.
# `--cpu` runs only the reference and its self-checks (against dense attention when the window
# covers everything, and the window rule's size and self-inclusion).
import sys
import traceback

import torch

NAME = "natten"


def mask1d(L, K, d, causal):
    m = torch.zeros(L, L, dtype=torch.bool)
    for i in range(L):
        g, a = i % d, i // d
        lg = len(range(g, L, d))
        if causal:
            lo, hi = max(a - K + 1, 0), a + 1
        else:
            lo = min(max(a - K // 2, 0), lg - K)
            hi = lo + K
        for b in range(lo, hi):
            m[i, g + b * d] = True
    return m


def na_mask(shape, ks, dil, causal):
    m = None
    for L, K, d, c in zip(shape, ks, dil, causal):
        md = mask1d(L, K, d, c)
        m = md if m is None else (m[:, None, :, None] & md[None, :, None, :]).reshape(m.shape[0] * L, -1)
    return m


def na_ref(q, k, v, ks, dil, causal):  # q (B, *shape, H, D) float64 -> same shape
    shape = q.shape[1:-2]
    B, H, D = q.shape[0], q.shape[-2], q.shape[-1]
    qf, kf, vf = (t.reshape(B, -1, H, D).transpose(1, 2) for t in (q, k, v))
    s = qf @ kf.transpose(-1, -2) * D ** -0.5
    s = s.masked_fill(~na_mask(shape, ks, dil, causal), float("-inf"))
    return (torch.softmax(s, -1) @ vf).transpose(1, 2).reshape(q.shape)


def self_check():
    m = mask1d(20, 5, 2, False)
    assert (m.sum(1) == 5).all() and m.diagonal().all()
    mc = mask1d(20, 5, 1, True)
    assert mc.diagonal().all() and not mc.triu(1).any() and int(mc.sum(1).max()) == 5
    q, k, v = (torch.randn(1, 6, 4, 2, 8, dtype=torch.float64) for _ in range(3))
    full = na_ref(q, k, v, (6, 4), (1, 1), (False, False))
    dense = torch.softmax(q.reshape(1, 24, 2, 8).transpose(1, 2) @ k.reshape(1, 24, 2, 8).permute(0, 2, 3, 1)
                          * 8 ** -0.5, -1) @ v.reshape(1, 24, 2, 8).transpose(1, 2)
    assert torch.allclose(full, dense.transpose(1, 2).reshape(full.shape))


def run(natten, tag, shape, ks, dil, causal, dtype, backend, grad, errs):
    torch.manual_seed(len(errs))
    B, H, D = 2, 2, (32 if len(shape) == 1 else 64)
    q, k, v = (torch.randn(B, *shape, H, D).to(dtype) for _ in range(3))
    q64, k64, v64 = (t.double().requires_grad_(grad) for t in (q, k, v))
    ref = na_ref(q64, k64, v64, ks, dil, causal)
    qc, kc, vc = (t.cuda().requires_grad_(grad) for t in (q, k, v))
    fn = natten.na1d if len(shape) == 1 else natten.na2d
    kw = dict(kernel_size=ks if len(ks) > 1 else ks[0], dilation=dil if len(dil) > 1 else dil[0],
              is_causal=causal if len(causal) > 1 else causal[0])
    if backend:
        kw["backend"] = backend
    out = fn(qc, kc, vc, **kw)
    scale = ref.detach().abs().max()
    errs[tag] = ((out.detach().double().cpu() - ref.detach()).abs().max() / scale).item()
    if grad:
        g = torch.randn(out.shape).to(dtype)
        ref.backward(g.double())
        out.backward(g.cuda())
        for name, a, b in (("dq", qc, q64), ("dk", kc, k64), ("dv", vc, v64)):
            errs[tag + "_" + name] = ((a.grad.double().cpu() - b.grad).abs().max() / b.grad.abs().max()).item()


def main():
    self_check()
    if "--cpu" in sys.argv:
        return True, "reference (cpu) window rule and dense equivalence"
    import natten.libnatten  # noqa: F401  (surface a failing extension import)
    import natten
    from natten.backends import choose_backend
    assert natten.HAS_LIBNATTEN, "natten reports no libnatten"
    errs = {}
    run(natten, "cutlass1d_f32", (64,), (7,), (2,), (False,), torch.float32, "cutlass-fna", True, errs)
    run(natten, "cutlass1d_f16_causal", (50,), (9,), (1,), (True,), torch.float16, "cutlass-fna", False, errs)
    run(natten, "hopper2d_f16", (16, 20), (5, 7), (1, 2), (False, False), torch.float16, "hopper-fna", True, errs)
    probe = torch.randn(1, 12, 12, 2, 64, dtype=torch.bfloat16, device="cuda")
    picked = choose_backend(probe, probe, probe, torch_compile=False)
    assert picked == "hopper-fna", "natten picked %s on this GPU" % picked
    run(natten, "auto2d_bf16", (12, 12), (3, 5), (2, 1), (False, True), torch.bfloat16, None, False, errs)
    bad = []
    for key, e in errs.items():
        tol = 1e-4 if "f32" in key else (3e-2 if ("_d" in key or "bf16" in key) else 1e-2)
        if not e < tol:
            bad.append(key)
    msg = " ".join("%s %.2e" % kv for kv in errs.items())
    return not bad, msg + (" FAILED " + ",".join(bad) if bad else "")


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
