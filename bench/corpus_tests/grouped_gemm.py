# grouped_gemm (tgale96, 0.3.0, import grouped_gemm): the grouped GEMM grouped_gemm_backend.gmm
# (one GEMM per expert over a token-sorted bf16 matrix; built without GROUPED_GEMM_CUTLASS it runs
# cuBLAS per group, with the variable-K path for the weight gradient) through the package's autograd
# op grouped_gemm.ops.gmm, forward with trans_b False/True and backward (d a and d b), against a
# per-group float64 matmul of the same bf16 inputs.
# Binding (csrc/ops.cu, csrc/grouped_gemm.cu): gmm(Tensor a, Tensor b, Tensor c, Tensor batch_sizes,
# bool trans_a, bool trans_b): a (tokens, k) bf16, b (experts, k, n) or (experts, n, k) with
# trans_b, c (tokens, n); batch_sizes int64 on the CPU (the cuBLAS build requires that).
# Tolerance: bf16 inputs are exact in fp64, the kernel accumulates in fp32 and rounds to bf16
# (2^-9 relative), so max |out - ref| < 1e-2 * max |ref|.
# The package is imported the normal way. `--cpu` runs only the reference and its self-checks.
import sys
import traceback

import torch

NAME = "grouped_gemm"


def gmm_ref(a, b, sizes, trans_b):
    out, start = [], 0
    for i, m in enumerate(sizes.tolist()):
        w = b[i].t() if trans_b else b[i]
        out.append(a[start:start + m] @ w)
        start += m
    return torch.cat(out)


def inputs():
    torch.manual_seed(0)
    experts, k, n = 4, 128, 96
    sizes = torch.tensor([17, 64, 3, 44], dtype=torch.int64)
    a = torch.randn(int(sizes.sum()), k).bfloat16()
    b = (torch.randn(experts, k, n) / k ** 0.5).bfloat16()
    g = torch.randn(int(sizes.sum()), n).bfloat16()
    return a, b, sizes, g


def refs(a, b, sizes, g):
    a64 = a.double().requires_grad_()
    b64 = b.double().requires_grad_()
    out = gmm_ref(a64, b64, sizes, False)
    out.backward(g.double())
    return out.detach(), a64.grad, b64.grad


def rel(x, ref):
    return ((x.double().cpu() - ref).abs().max() / ref.abs().max()).item()


def main():
    a, b, sizes, g = inputs()
    out, da, db = refs(a, b, sizes, g)
    # self-check: the grouped reference equals one block-diagonal matmul
    big = torch.block_diag(*[a[s:e].double() for s, e in zip([0] + sizes.cumsum(0)[:-1].tolist(),
                                                              sizes.cumsum(0).tolist())])
    assert torch.allclose(big @ b.double().reshape(-1, b.shape[2]), out)
    assert torch.allclose(gmm_ref(a.double(), b.double().transpose(1, 2).contiguous(), sizes, True), out)
    if "--cpu" in sys.argv:
        return True, "reference (cpu) grouped matmul == block-diagonal matmul, trans_b consistent"
    from grouped_gemm import ops
    errs = {}
    ac = a.cuda().requires_grad_()
    bc = b.cuda().requires_grad_()
    y = ops.gmm(ac, bc, sizes, False)
    y.backward(g.cuda())
    errs["fwd"] = rel(y.detach(), out)
    errs["da"] = rel(ac.grad, da)
    errs["db"] = rel(bc.grad, db)
    bt = b.transpose(1, 2).contiguous().cuda().requires_grad_()
    ac.grad = None
    y = ops.gmm(ac, bt, sizes, True)
    y.backward(g.cuda())
    errs["fwd_tb"] = rel(y.detach(), out)
    errs["da_tb"] = rel(ac.grad, da)
    errs["db_tb"] = rel(bt.grad, db.transpose(1, 2))
    ok = all(v < 1e-2 for v in errs.values())
    return ok, " ".join("%s %.2e" % kv for kv in errs.items())


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
