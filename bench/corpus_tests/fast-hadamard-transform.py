# fast-hadamard-transform (Dao-AILab, import fast_hadamard_transform): the CUDA Walsh-Hadamard
# transform fast_hadamard_transform_cuda.fast_hadamard_transform (through the package's autograd
# wrapper hadamard_transform, forward and backward, fp32 and fp16, a non-power-of-2 dim that the
# kernel zero-pads) and fast_hadamard_transform_12N (dim = 12 * 2^k), against x @ H^T * scale in
# float64 with H built here (Sylvester recursion; for 12N, kron(H12, H_{2^k}) with the order-12
# matrix copied from csrc/fast_hadamard_transform_special.h, whose chunk index is the major one).
# Bindings (csrc/fast_hadamard_transform.cpp): fast_hadamard_transform(Tensor x, float scale),
# fast_hadamard_transform_12N(Tensor x, float scale); x (..., dim) float/half/bf16 on CUDA.
# The package is imported the normal way (its interface imports scipy, which the machine has).
# `--cpu` runs only the reference and its self-checks.
import math
import sys
import traceback

import torch

NAME = "fast-hadamard-transform"
# Rows of the order-12 matrix in hadamard_mult_thread_12 (out[r] = sum_c H12[r][c] * x[c]).
H12_ROWS = [
    "+-++++++++++", "--+-+-+-+-+-", "+++-++----++", "+---+--+-++-",
    "+++++-++----", "+-+---+--+-+", "++--+++-++--", "+--++---+--+",
    "++----+++-++", "+--+-++---+-", "++++----+++-", "+-+--+-++---",
]


def sylvester(n):
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h


def h12():
    return torch.tensor([[1.0 if ch == "+" else -1.0 for ch in row] for row in H12_ROWS], dtype=torch.float64)


def ref_pow2(x, scale):  # zero-pad to the next power of 2, transform, cut back (the kernel's rule)
    dim = x.shape[-1]
    n = 1 << math.ceil(math.log2(dim))
    xp = torch.nn.functional.pad(x.double(), (0, n - dim))
    return (xp @ sylvester(n).T * scale)[..., :dim]


def ref_12n(x, scale):
    p = x.shape[-1] // 12
    return x.double() @ torch.kron(h12(), sylvester(p)).T * scale


def self_check():
    for n in (8, 64):
        h = sylvester(n)
        assert torch.equal(h @ h.T, n * torch.eye(n, dtype=torch.float64))
    h = h12()
    assert torch.equal(h @ h.T, 12 * torch.eye(12, dtype=torch.float64)), "H12 rows are not orthogonal"
    k = torch.kron(h, sylvester(16))
    assert torch.equal(k @ k.T, 192 * torch.eye(192, dtype=torch.float64))
    # the transform with scale 1/sqrt(n) is orthonormal: it keeps the norm
    x = torch.randn(3, 256, dtype=torch.float64)
    assert torch.allclose(ref_pow2(x, 1 / 16).norm(dim=-1), x.norm(dim=-1))


def rel(a, b):
    return ((a.double().cpu() - b).abs().max() / b.abs().max()).item()


def main():
    torch.manual_seed(0)
    self_check()
    if "--cpu" in sys.argv:
        return True, "reference (cpu) H_n, H12 and kron(H12, H_16) orthogonal"
    from fast_hadamard_transform.fast_hadamard_transform_interface import (hadamard_transform,
                                                                           hadamard_transform_12N)
    errs = {}
    # fp32 forward + backward (the backward is the same kernel applied to dout), dims 1024 and
    # 200 (padded to 256 inside the kernel): rounding of a length-n butterfly in fp32, ~1e-6.
    for dim in (1024, 200):
        x = torch.randn(6, dim, device="cuda", requires_grad=True)
        scale = 1 / math.sqrt(dim)
        out = hadamard_transform(x, scale)
        g = torch.randn_like(out)
        out.backward(g)
        errs["fp32_%d" % dim] = rel(out.detach(), ref_pow2(x.detach().cpu(), scale))
        errs["grad_%d" % dim] = rel(x.grad, ref_pow2(g.cpu(), scale))
    # fp16 in and out: the result is rounded to fp16 (2^-11 relative), so 5e-3 of the max
    x = torch.randn(4, 2, 512, device="cuda", dtype=torch.float16)
    errs["fp16_512"] = rel(hadamard_transform(x, 1 / math.sqrt(512)), ref_pow2(x.cpu(), 1 / math.sqrt(512)))
    x = torch.randn(5, 12 * 64, device="cuda")
    errs["12N_768"] = rel(hadamard_transform_12N(x, 0.5), ref_12n(x.cpu(), 0.5))
    ok = all(v < (5e-3 if k.startswith("fp16") else 1e-5) for k, v in errs.items())
    return ok, " ".join("%s %.2e" % kv for kv in errs.items())


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
