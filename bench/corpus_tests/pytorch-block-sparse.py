# pytorch-block-sparse (huggingface, 0.1.2, import pytorch_block_sparse): the CUTLASS 1.x fp32
# block-sparse kernels of the top-level module block_sparse_native, through the package's Python:
# BlockSparseMatrix.reverse_matmul (blocksparse_matmul_cutlass: a @ W^T and a @ W with W block-sparse),
# matmul_with_output_sparse_support (blocksparse_matmul_back_cutlass: g^T x kept only on W's blocks),
# and BlockSparseLinear forward + backward (both kernels), against dense float64 matmuls with the
# same block mask. The dense W is rebuilt here from the package's layout (block i of `data`, i in
# row-major order of block_mask.nonzero(), holds W's block transposed: data[i*32:(i+1)*32].t()),
# not with its to_dense (which goes through the legacy torch.sparse.FloatTensor).
# Bindings (native/block_sparse_native.cpp): blocksparse_matmul_cutlass(dense_a, bool, ptr_b, indices_b,
# data_b, int m, int n, int k, int bs_rows, int bs_cols, dense_out) and blocksparse_matmul_back_cutlass(
# dense_a, bool, dense_b, bool, int m, int n, int k, int bs_rows, int bs_cols, sparse_c, blocks, long).
# Tolerance: fp32 inputs and fp32 (SIMT) accumulation over k <= 256: max error < 1e-4 of max |ref|.
# The package is imported the normal way. `--cpu` runs only the layout reference and its self-checks.
import sys
import traceback

import numpy
import torch

NAME = "pytorch-block-sparse"
BS = 32


def densify(mask, data, shape):
    w = torch.zeros(shape, dtype=torch.float64)
    for i, (r, c) in enumerate(mask.nonzero().tolist()):
        w[r * BS:(r + 1) * BS, c * BS:(c + 1) * BS] = data[i * BS:(i + 1) * BS].double().t()
    return w


def block_data(mask, dense):  # the inverse of densify: the package's data layout from a dense matrix
    return torch.cat([dense[r * BS:(r + 1) * BS, c * BS:(c + 1) * BS].t() for r, c in mask.nonzero().tolist()])


def self_check():
    mask = torch.rand(4, 3) < 0.5
    mask[0, 0] = True
    dense = torch.randn(4 * BS, 3 * BS, dtype=torch.float64)
    w = densify(mask, block_data(mask, dense), dense.shape)
    keep = mask.repeat_interleave(BS, 0).repeat_interleave(BS, 1)
    assert torch.equal(w, dense * keep)


def rel(x, ref):
    return ((x.double().cpu() - ref).abs().max() / ref.abs().max()).item()


def main():
    torch.manual_seed(0)
    numpy.random.seed(0)  # BlockSparseMatrix.randn picks the block positions with numpy
    self_check()
    if "--cpu" in sys.argv:
        return True, "reference (cpu) block layout round trip"
    from pytorch_block_sparse import BlockSparseLinear, BlockSparseMatrix
    errs = {}
    out_f, in_f = 256, 192
    bsm = BlockSparseMatrix.randn((out_f, in_f), 20, block_shape=(BS, BS), device="cuda")
    mask = bsm.block_mask.cpu()
    w = densify(mask, bsm.data.detach().cpu(), (out_f, in_f))
    a = torch.randn(96, in_f, device="cuda")
    errs["a@Wt"] = rel(bsm.reverse_matmul(a, transpose=True), a.double().cpu() @ w.t())
    a2 = torch.randn(64, out_f, device="cuda")
    errs["a@W"] = rel(bsm.reverse_matmul(a2, transpose=False), a2.double().cpu() @ w)
    g = torch.randn(96, out_f, device="cuda")
    keep = mask.repeat_interleave(BS, 0).repeat_interleave(BS, 1)
    gw = bsm.matmul_with_output_sparse_support(g, a)
    errs["gTx"] = rel(densify(mask, gw.detach().cpu(), (out_f, in_f)), (g.double().cpu().t() @ a.double().cpu()) * keep)
    # the nn layer: forward, grad of the input and of the block data
    lin = BlockSparseLinear(in_f, out_f, bias=True, density=0.4)
    with torch.no_grad():
        lin.bias.normal_()
    x = torch.randn(4, 32, in_f, device="cuda", requires_grad=True)  # rows a multiple of 32 as in its tests
    y = lin(x)
    gy = torch.randn_like(y)
    y.backward(gy)
    lmask = lin.weight.block_mask.cpu()
    lw = densify(lmask, lin.weight.data.detach().cpu(), (out_f, in_f))
    x64, gy64 = x.detach().double().cpu().reshape(-1, in_f), gy.double().cpu().reshape(-1, out_f)
    errs["linear"] = rel(y.detach().reshape(-1, out_f), x64 @ lw.t() + lin.bias.detach().double().cpu())
    errs["linear_dx"] = rel(x.grad.reshape(-1, in_f), gy64 @ lw)
    lkeep = lmask.repeat_interleave(BS, 0).repeat_interleave(BS, 1)
    errs["linear_dW"] = rel(densify(lmask, lin.weight.data.grad.cpu(), (out_f, in_f)), (gy64.t() @ x64) * lkeep)
    ok = all(v < 1e-4 for v in errs.values())
    return ok, " ".join("%s %.2e" % kv for kv in errs.items())


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
