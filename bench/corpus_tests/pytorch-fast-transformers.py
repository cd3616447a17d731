# pytorch-fast-transformers 0.4.0 (import fast_transformers; 7 CPU + 8 CUDA extension modules):
# - causal_product_cuda causal_dot_product / causal_dot_backward (the causal linear-attention kernel,
#   both its NVIDIA lmha path and the generic fallback: two head sizes), through
#   fast_transformers.causal_product.causal_dot_product (autograd);
# - local_product_cuda local_dot_product / local_dot_backward / local_weighted_average /
#   local_weighted_average_backward (local attention), through fast_transformers.local_product;
# - hash_cuda compute_hashes (SIMPLE-LSH hyperplane hashing), through fast_transformers.hashing;
# each against a plain-torch float64 reference written here (masked Q K^T V; the local window
# k = s - l + context//2 with -1e24 outside it or past key_lengths; bit i = x.a_i > a_i[D]) with
# gradients by autograd, and against the package's own CPU kernels (*_cpu, same Python wrappers).
# Imported the normal way. Bindings relied on: causal_dot_product(Q, K, V, product) and
# causal_dot_backward(Q, K, V, grad_out, gQ, gK, gV) (float32, (N,H,L,E)/(N,H,L,M));
# local_dot_product(Q, K, attn_mask (L,S) float, key_lengths (N,) int64, context) with S == L on
# CUDA; local_weighted_average(A (N,H,L,context), V); compute_hashes(X (N,D), A (B,D+1), H int64).
# local_dot's upstream gradient is zero in the slots its forward fills with -1e24 (outside the window
# or past key_lengths), as the softmax that always follows it in the package (attention/
# local_attention.py) makes it: the CUDA local_dot_backward takes key_lengths but does not use them
# and sums over those slots too (the CPU one skips them), a case the package never produces.
# The package's own defect this test finds (0.4.0, the last release): the CUDA key gradient of
# local_dot_product reads the window backwards, slot k where it needs slot context-1-k
# (local_product_cuda.cu's local_dot_backward uses ForwardValueIndexing for the keys, where
# local_weighted_average_backward uses ReverseValueIndexing). On a failure the test says whether
# the GPU's key gradient equals that mirrored sum (computed here in float64).
# `--cpu` runs the reference self-checks and, when the package imports, its CPU kernels.
import os
import sys
import traceback

# This file's name can equal the package's module name: never import it in place of the package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
import torch  # noqa: E402

NAME = "pytorch-fast-transformers"
CPU = "--cpu" in sys.argv
CTX = 7


def ref_causal(Q, K, V):
    L = Q.shape[2]
    A = (Q @ K.transpose(-1, -2)) * torch.tril(torch.ones(L, L, dtype=Q.dtype))
    return A @ V


def window_index(L, S, ctx):
    s = torch.arange(L)[:, None] - ctx // 2 + torch.arange(ctx)[None, :]  # (L, ctx) key per slot
    return s, (s >= 0) & (s < S)


def ref_local_dot(Q, K, mask, key_lengths, ctx):
    N, H, L, _ = Q.shape
    S = K.shape[2]
    full = Q @ K.transpose(-1, -2) + mask  # (N, H, L, S)
    s, valid = window_index(L, S, ctx)
    vals = full.gather(3, s.clamp(0, S - 1).expand(N, H, L, ctx))
    ok = valid[None, None] & (s[None, None] < key_lengths[:, None, None, None])
    return torch.where(ok, vals, torch.full_like(vals, -1e24))


def ref_local_avg(A, V):
    N, H, L, ctx = A.shape
    S = V.shape[2]
    s, valid = window_index(L, S, ctx)
    w = torch.where(valid, A, torch.zeros_like(A))
    g = V[:, :, s.clamp(0, S - 1)]  # (N, H, L, ctx, E)
    return (w[..., None] * g).sum(3)


def ref_hash(X, A):
    D = X.shape[1]
    bits = (X @ A[:, :D].T) > A[:, D]
    return (bits.long() << torch.arange(A.shape[0])).sum(1), (X @ A[:, :D].T - A[:, D]).abs().min(1).values


def grads(f, *xs, masked=False):
    xs = [x.clone().requires_grad_() for x in xs]
    y = f(*xs)
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(y.device, y.dtype)
    if masked:  # no gradient into the slots the forward fills with -1e24 (see the header)
        g = g.masked_fill(y.detach() <= -1e23, 0)
    (y * g).sum().backward()
    return [y.detach()] + [x.grad for x in xs]


def rel(got, want):
    worst = 0.0
    for a, b in zip(got, want):
        a, b = a.double().cpu(), b.double().cpu()
        far = b <= -1e23  # local_dot_product's "outside the window" fill: must match, then left out
        if not torch.equal(a <= -1e23, far):
            return float("inf")
        a, b = a.masked_fill(far, 0), b.masked_fill(far, 0)
        worst = max(worst, (a - b).abs().max().item() / (1e-3 + b.abs().max().item()))
    return worst


def local_dot_grad_out(Q, K, mask, key_lengths):  # the upstream gradient grads() gives local_dot
    y = ref_local_dot(Q, K, mask, key_lengths, CTX)
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return g.masked_fill(y <= -1e23, 0)


def mirrored_key_grad(Q, g):  # sum_k g[l][k] Q[l] over l = s - (C-1)//2 + k: slot k, not C-1-k
    L, C = Q.shape[2], g.shape[3]
    out = torch.zeros_like(Q)
    for s in range(L):
        for k in range(C):
            l = s - (C - 1) // 2 + k
            if 0 <= l < L:
                out[:, :, s] += g[:, :, l, k, None] * Q[:, :, l]
    return out


def make():
    torch.manual_seed(0)
    causal = [tuple(torch.randn(2, 3, 70, d, dtype=torch.float64) * 0.5 for d in (e, e, m))
              for e, m in ((32, 32), (24, 40))]
    N, H, L, E = 2, 3, 40, 16
    Q, K, V = (torch.randn(N, H, L, E, dtype=torch.float64) for _ in range(3))
    mask = torch.randn(L, L, dtype=torch.float64) * 0.1
    key_lengths = torch.tensor([L, L - 9])
    A = torch.softmax(torch.randn(N, H, L, CTX, dtype=torch.float64), -1)
    X, P = torch.randn(500, 20, dtype=torch.float64), torch.randn(31, 21, dtype=torch.float64)
    return causal, (Q, K, V, mask, key_lengths, A), (X, P)


def run_all(causal, local, hashing, ft, dev, dt, use_ref):
    cp = ref_causal if use_ref else ft["causal"]
    ld = (lambda q, k: ref_local_dot(q, k, local[3], local[4], CTX)) if use_ref else \
        (lambda q, k: ft["local_dot"](q, k, local[3].to(dev, dt), local[4].to(dev), CTX))
    la = ref_local_avg if use_ref else ft["local_avg"]
    out = {}
    for i, (q, k, v) in enumerate(causal):
        out["causal%d" % i] = grads(cp, q.to(dev, dt), k.to(dev, dt), v.to(dev, dt))
    Q, K, V, _, _, A = local
    out["local_dot"] = grads(ld, Q.to(dev, dt), K.to(dev, dt), masked=True)
    out["local_avg"] = grads(la, A.to(dev, dt), V.to(dev, dt))
    X, P = hashing
    out["hash"] = ref_hash(X, P)[0] if use_ref else ft["hash"](X.to(dev, dt), P.to(dev, dt)).cpu()
    return out


def compare(got, want, margin):
    e = {k: rel(got[k], want[k]) for k in got if k != "hash"}
    near = margin < 1e-4  # points within rounding of a hyperplane may flip
    e["hash_mismatch"] = int(((got["hash"] != want["hash"]) & ~near).sum())
    return e


def main():
    causal, local, hashing = make()
    ref = run_all(causal, local, hashing, None, "cpu", torch.float64, True)
    _, margin = ref_hash(*hashing)
    # self-checks of the references against direct loops
    q, k, v = (t[:1, :1] for t in causal[0])
    direct = torch.stack([sum((q[0, 0, i] @ k[0, 0, j]) * v[0, 0, j] for j in range(i + 1)) for i in range(5)])
    assert (ref_causal(q, k, v)[0, 0, :5] - direct).abs().max().item() < 1e-12
    Q, K, V, mask, kl, A = local
    ld = ref_local_dot(Q, K, mask, kl, CTX)
    l, kk = 2, 0  # slot 0 of query 2 is key -1: outside
    assert ld[0, 0, l, kk].item() == -1e24 and ld[1, 0, 35, 6].item() == -1e24  # key 38 >= length 31
    assert abs(ld[0, 1, 10, 4].item() - (Q[0, 1, 10] @ K[0, 1, 11] + mask[10, 11]).item()) < 1e-12
    la = ref_local_avg(A, V)
    assert (la[1, 2, 0] - sum(A[1, 2, 0, c] * V[1, 2, c - 3] for c in range(3, CTX))).abs().max().item() < 1e-12
    X, P = hashing
    h = ref_hash(X, P)[0]
    assert int(h[7]) == sum(int((X[7] @ P[i, :20]).item() > P[i, 20].item()) << i for i in range(31))
    try:
        from fast_transformers.causal_product import causal_dot_product
        from fast_transformers.local_product import local_dot_product, local_weighted_average
        from fast_transformers.hashing import compute_hashes
    except ImportError as e:
        if CPU:
            return True, "reference (cpu) ok; package not importable here (%s)" % e
        raise
    ft = {"causal": causal_dot_product, "local_dot": local_dot_product, "local_avg": local_weighted_average,
          "hash": compute_hashes}
    e_cpu = compare(run_all(causal, local, hashing, ft, "cpu", torch.float32, False), ref, margin)
    if CPU:
        ok = all(v < 1e-4 for k, v in e_cpu.items() if k != "hash_mismatch") and e_cpu["hash_mismatch"] == 0
        return ok, "reference (cpu) cpu-kernel " + " ".join("%s %.2e" % kv for kv in e_cpu.items())
    import fast_transformers.causal_product as cpm
    assert cpm.causal_dot_product_cuda is not None, "causal_product_cuda did not import"
    got = run_all(causal, local, hashing, ft, "cuda", torch.float32, False)
    e_gpu = compare(got, ref, margin)
    ok = all(v < 1e-4 for e in (e_gpu, e_cpu) for k, v in e.items() if k != "hash_mismatch") and \
        e_gpu["hash_mismatch"] == 0 and e_cpu["hash_mismatch"] == 0
    note = ""
    if e_gpu["local_dot"] >= 1e-4:
        mirrored = rel([got["local_dot"][2]], [mirrored_key_grad(Q, local_dot_grad_out(Q, K, mask, kl))])
        note = " (the GPU's key gradient vs the slot-mirrored sum: %.2e)" % mirrored
    return ok, "gpu " + " ".join("%s %.2e" % kv for kv in e_gpu.items()) + note + \
        " | cpu-kernel max %.2e (rel, out+grads)" % max(v for k, v in e_cpu.items() if k != "hash_mismatch")


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
