# curope (naver/croco d7de070, models/curope; the wheel holds only the top-level compiled module
# `curope`, the models/curope/*.py wrappers are not packaged): curope.rope_2d, the CUDA RoPE-2D
# kernel rope_2d_cuda_kernel (kernels.cu), applied in place to tokens (B, N, H, D), against a
# plain-torch float64 RoPE2D written here from croco's models/pos_embed.py torch fallback
# (RoPE2D.get_cos_sin / rotate_half / apply_rope1d: first half of D rotated by the y position,
# second half by the x position, inv_freq = F0 / base^(2j/(D/2))), and against the package's own
# CPU kernel (rope_2d_cpu, float32 only, same binding). The backward that cuRoPE2D_func uses is the
# same kernel with -F0: checked against the gradient of the reference (autograd vjp).
# Imported the normal way (`import curope`). Binding relied on (curope.cpp PYBIND11_MODULE):
# rope_2d(tokens (B,N,H,D) contiguous, positions (B,N,2) int64, base: float, fwd: float) -> None.
# The kernel is built with --use_fast_math (__sinf/__cosf): positions are kept below 16 and the
# float32 tolerance is 2e-4 absolute on unit-normal tokens (float16: 2e-2, a few half ulps at |x| ~ 4).
# `--cpu` runs the reference self-checks and, when the module imports, its CPU kernel.
import os
import sys
import traceback

# This file's name can equal the package's module name: never import it in place of the package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
import torch  # noqa: E402

NAME = "curope"
CPU = "--cpu" in sys.argv
BASE, F0 = 100.0, 1.0


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def ref_rope2d(tokens, positions, base=BASE, f0=F0):
    # tokens (B, heads, ntokens, dim), positions (B, ntokens, 2): croco's RoPE2D.forward in float64
    D = tokens.size(3) // 2
    inv_freq = f0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    t = torch.arange(int(positions.max()) + 1, dtype=torch.float64)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    freqs = torch.cat((freqs, freqs), dim=-1)
    cos, sin = freqs.cos().to(tokens.dtype), freqs.sin().to(tokens.dtype)

    def rope1d(x, pos1d):
        c = torch.nn.functional.embedding(pos1d, cos)[:, None, :, :]
        s = torch.nn.functional.embedding(pos1d, sin)[:, None, :, :]
        return x * c + rotate_half(x) * s

    y, x = tokens.chunk(2, dim=-1)
    return torch.cat((rope1d(y, positions[:, :, 0]), rope1d(x, positions[:, :, 1])), dim=-1)


def kernel(mod, tok_bnhd, pos, fwd):
    t = tok_bnhd.clone().contiguous()
    mod.rope_2d(t, pos, BASE, fwd)
    return t


def main():
    torch.manual_seed(0)
    # D = 64 (croco/dust3r's head size): one block of D threads per token; each warp then reads only
    # the shared values it wrote itself (the kernel has no barrier between heads)
    B, N, H, D = 2, 50, 4, 64
    tok = torch.randn(B, N, H, D, dtype=torch.float64)  # the kernel's layout
    pos = torch.randint(0, 16, (B, N, 2), dtype=torch.int64)
    g = torch.randn(B, N, H, D, dtype=torch.float64)
    tr = tok.transpose(1, 2).requires_grad_()  # the reference's layout (B, heads, N, D)
    out = ref_rope2d(tr, pos)
    out.backward(g.transpose(1, 2))
    want, want_grad = out.detach().transpose(1, 2), tr.grad.transpose(1, 2)
    # self-checks: a rotation keeps each (u, v) pair's norm; position 0 is the identity
    assert abs(want.norm().item() - tok.norm().item()) < 1e-9
    z = torch.zeros_like(pos)
    assert (ref_rope2d(tok.transpose(1, 2), z) - tok.transpose(1, 2)).abs().max().item() < 1e-15
    # gradient of a rotation = the inverse rotation (what cuRoPE2D_func.backward uses, F0 -> -F0)
    inv = ref_rope2d(g.transpose(1, 2), pos, f0=-F0).transpose(1, 2)
    assert (inv - want_grad).abs().max().item() < 1e-12
    try:
        import curope
    except ImportError as e:
        if CPU:
            return True, "reference (cpu) ok; module not importable here (%s)" % e
        raise
    if not hasattr(curope, "rope_2d"):
        raise ImportError("curope has no rope_2d: imported %s, not the compiled module" % curope.__file__)

    def errs(dev, dt):
        f = (kernel(curope, tok.to(dev, dt), pos.to(dev), F0).double().cpu() - want).abs().max().item()
        b = (kernel(curope, g.to(dev, dt), pos.to(dev), -F0).double().cpu() - want_grad).abs().max().item()
        return f, b

    cf, cb = errs("cpu", torch.float32)
    if CPU:
        return cf < 2e-4 and cb < 2e-4, "reference (cpu) cpu-kernel fwd %.2e bwd %.2e" % (cf, cb)
    f32, b32 = errs("cuda", torch.float32)
    f16, b16 = errs("cuda", torch.float16)
    ok = f32 < 2e-4 and b32 < 2e-4 and f16 < 2e-2 and b16 < 2e-2 and cf < 2e-4 and cb < 2e-4
    return ok, "gpu fp32 fwd %.2e bwd %.2e fp16 fwd %.2e bwd %.2e cpu-kernel fwd %.2e bwd %.2e" % (
        f32, b32, f16, b16, cf, cb)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
