# megablocks (databricks, 0.7.0): the CUDA ops of its compiled top-level module megablocks_ops (the
# cub-based routing primitives MoE dispatch is built from): inclusive/exclusive_cumsum, histogram,
# sort (radix key/value sort), indices (block-sparse topology column indices) and
# replicate_forward/replicate_backward, against plain torch (cumsum, bincount, stable sort,
# repeat_interleave, segment sums) and a loop reference for indices.
# `import megablocks` needs stanford-stk, which the machine lacks, so megablocks_ops is imported
# directly (it is a top-level module of the wheel; the package's own ops/*.py wrappers import it the
# same way). Bindings (csrc/ops.cu and the headers it includes):
#   exclusive_cumsum(Tensor x, int dim, Tensor out) / inclusive_cumsum(...): x, out 2-D int16/32/64, dim == 1
#   histogram(Tensor x, int num_bins) -> int32 (rows, num_bins); bins [0, num_bins) of width 1
#   sort(Tensor x, int end_bit, Tensor x_out, Tensor iota_out): 1-D, iota_out same dtype as x
#   indices(Tensor padded_bins int32, int block_size, int rows, int cols, Tensor out int16 (rows*cols))
#   replicate_forward(Tensor x (b, bins) half/int16/int32, Tensor bins int32 (inclusive ends), Tensor out (b, n))
#   replicate_backward(Tensor grad half (b, n), Tensor bins, Tensor out half (b, bins))
# Integer ops must match exactly; replicate_backward (fp16 segment sums) within 1e-2 of the fp64 sums.
# `--cpu` runs only the references and their self-checks.
import sys
import traceback

import torch

NAME = "megablocks"


def indices_ref(padded_bins, block_size, rows, cols):
    out = torch.zeros(rows * cols, dtype=torch.int16)
    start = 0
    for b, end in enumerate(padded_bins.tolist()):
        for r in range(start // block_size, end // block_size):
            out[r * cols:(r + 1) * cols] = torch.arange(cols) + b * cols
        start = end
    return out


def inputs():
    torch.manual_seed(0)
    experts = 8
    top = torch.randint(0, experts, (1000,), dtype=torch.int32)  # routing choices
    counts = torch.bincount(top, minlength=experts)
    bins = torch.cumsum(counts, 0).int()
    block = 16
    padded = torch.cumsum((counts + block - 1) // block * block, 0).int()
    return experts, top, counts, bins, block, padded


def self_check(experts, top, counts, bins, block, padded):
    assert counts.sum() == top.numel() and (counts > 0).all()
    s, i = torch.sort(top, stable=True)
    assert torch.equal(top[i], s)
    rows = int(padded[-1]) // block
    idx = indices_ref(padded, block, rows, 4)
    # every block row carries its expert's columns: the rows of expert b hold b*cols..b*cols+cols-1
    assert int(idx.max()) == (experts - 1) * 4 + 3 and idx.numel() == rows * 4
    rep = torch.repeat_interleave(torch.arange(experts), counts)
    assert torch.equal(rep[bins.long() - 1], torch.arange(experts))


def main():
    experts, top, counts, bins, block, padded = inputs()
    self_check(experts, top, counts, bins, block, padded)
    if "--cpu" in sys.argv:
        return True, "reference (cpu) sort/bincount/indices/replicate self-checks"
    import megablocks_ops as ops
    d = "cuda"
    bad = []
    # cumsums over a batch of rows, each dtype the kernel takes
    for dt in (torch.int16, torch.int32, torch.int64):
        x = torch.randint(0, 5, (3, 257), dtype=dt)
        for fn, ref in (("inclusive_cumsum", torch.cumsum(x, 1)),
                        ("exclusive_cumsum", torch.cumsum(x, 1) - x)):
            out = torch.empty_like(x, device=d)
            getattr(ops, fn)(x.to(d), 1, out)
            if not torch.equal(out.cpu(), ref.to(dt)):
                bad.append("%s/%s" % (fn, dt))
    # histogram of the routing choices (1-D and batched)
    h = ops.histogram(top.to(d), experts)
    if not torch.equal(h.cpu().long(), counts):
        bad.append("histogram")
    hb = ops.histogram(top.view(4, 250).to(d), experts)
    ref_hb = torch.stack([torch.bincount(r, minlength=experts) for r in top.view(4, 250)])
    if not torch.equal(hb.cpu().long(), ref_hb):
        bad.append("histogram2d")
    # radix sort on the low 3 bits (end_bit = log2(experts), as megablocks calls it): stable
    for dt in (torch.int32, torch.int64):
        x = top.to(dt)
        x_out, iota = torch.empty_like(x, device=d), torch.empty_like(x, device=d)
        ops.sort(x.to(d), 3, x_out, iota)
        s, i = torch.sort(x, stable=True)
        if not (torch.equal(x_out.cpu(), s) and torch.equal(iota.cpu(), i.to(dt))):
            bad.append("sort/%s" % dt)
    # topology column indices
    rows, cols = int(padded[-1]) // block, 4
    out = torch.empty(rows * cols, dtype=torch.int16, device=d)
    ops.indices(padded.to(d), block, rows, cols, out)
    if not torch.equal(out.cpu(), indices_ref(padded, block, rows, cols)):
        bad.append("indices")
    # replicate forward (half and int32) and backward (fp16 segment sums)
    n = int(bins[-1])
    xh = torch.randn(2, experts).half()
    for x in (xh, torch.randint(-9, 9, (2, experts), dtype=torch.int32)):
        out = torch.empty(2, n, dtype=x.dtype, device=d)
        ops.replicate_forward(x.to(d), bins.to(d), out)
        if not torch.equal(out.cpu(), torch.repeat_interleave(x, counts, dim=1)):
            bad.append("replicate_forward/%s" % x.dtype)
    g = torch.randn(2, n).half()
    gout = torch.empty(2, experts, dtype=torch.half, device=d)
    ops.replicate_backward(g.to(d), bins.to(d), gout)
    seg = torch.zeros(2, experts, dtype=torch.float64).index_add_(
        1, torch.repeat_interleave(torch.arange(experts), counts), g.double())
    err = ((gout.cpu().double() - seg).abs().max() / seg.abs().max()).item()
    if not err < 1e-2:
        bad.append("replicate_backward")
    ok = not bad
    return ok, "cumsum/histogram/sort/indices/replicate exact%s, replicate_backward rel %.2e" % (
        "" if ok else " except " + ",".join(bad), err)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
