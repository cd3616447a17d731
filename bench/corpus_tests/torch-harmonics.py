# torch-harmonics 0.8.1 (import torch_harmonics; compiled: top-level disco_helpers and
# attention_helpers, torch_harmonics.disco._C and torch_harmonics.attention._C, which register the
# torch.library ops disco_kernels::forward/backward and attention_kernels::forward/backward with
# CPU and CUDA implementations). Tested on the GPU (optimized_kernel=True modules on CUDA tensors):
# - DiscreteContinuousConvS2 (disco_kernels::forward = disco_cuda_fwd, its autograd backward =
#   disco_cuda_bwd) in float64 and float32, output and gradients of input and weight;
# - DiscreteContinuousConvTransposeS2 (the same two kernels the other way round);
# - NeighborhoodAttentionS2 (attention_kernels::forward / backward, s2_attention_*_cuda), float32,
#   output and gradients of q, k, v and all parameters;
# each against the package's own torch path for the same module (optimized_kernel=False: sparse
# bmm over rolled inputs, _neighborhood_s2_attention_torch) on the CPU with the same state_dict,
# and the package's C++ CPU kernels (optimized_kernel=True on CPU tensors) against that path too.
# The torch path of the convolution is itself checked against a dense einsum written here from
# the module's psi (y[b,c,k,t,p] = sum_{t',j} psi[k,t,t',j] x[b,c,t',(j + p*nlon_in/nlon_out) % nlon_in]).
# Imported the normal way. Op schemas relied on (disco_interface.cpp / attention_interface.cpp
# TORCH_LIBRARY): forward(inp, roff_idx, ker_idx, row_idx, col_idx, vals, int kernel_size,
# int nlat_out, int nlon_out); attention forward(kx, vx, qy, quad_weights, col_idx, row_off,
# int nlon_in, int nlat_out, int nlon_out). Tolerances as the package's own tests: 1e-9 float64,
# 1e-4 float32 (relative to the largest reference value), attention 1e-3 (their rtol).
# `--cpu` runs the dense self-check and the CPU kernels when the package imports.
import os
import sys
import traceback

# This file's name can equal the package's module name: never import it in place of the package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
import torch  # noqa: E402

NAME = "torch-harmonics"
CPU = "--cpu" in sys.argv
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def dense_conv_ref(conv, x):
    # independent reference for DiscreteContinuousConvS2 (groups=1) from its sparse psi
    K, nlat_out, nlon_out = conv.kernel_size, conv.nlat_out, conv.nlon_out
    nlat_in, nlon_in = conv.nlat_in, conv.nlon_in
    psi = torch.sparse_coo_tensor(conv.psi_idx, conv.psi_vals.double(), size=(K, nlat_out, nlat_in * nlon_in))
    psi = psi.to_dense().reshape(K, nlat_out, nlat_in, nlon_in)
    pscale = nlon_in // nlon_out
    y = torch.stack([torch.einsum("ktij,bcij->bckt", psi, torch.roll(x, -pscale * p, dims=-1))
                     for p in range(nlon_out)], -1)
    out = torch.einsum("bckxy,ock->boxy", y, conv.weight.double())
    return out + conv.bias.double().reshape(1, -1, 1, 1)


def fwd_bwd(module, inputs, g):
    module.zero_grad()
    xs = [x.clone().requires_grad_() for x in inputs]
    y = module(*xs)
    y.backward(g.to(y.device, y.dtype))
    return [y.detach()] + [x.grad for x in xs] + [p.grad for _, p in sorted(module.named_parameters())]


def rel(got, want):
    # relative to the tensor's largest value, absolute below 1 (k_bias's gradient is zero in exact
    # arithmetic: softmax does not see a bias added to every key)
    return max((a.double().cpu() - b.double().cpu()).abs().max().item() / max(1.0, b.double().abs().max().item())
               for a, b in zip(got, want))


def build(th):
    torch.manual_seed(0)
    conv_kw = dict(kernel_shape=3, basis_type="piecewise linear", basis_norm_mode="mean")
    cases = {}
    # (module class, args, inputs shape(s))
    ref = th.DiscreteContinuousConvS2(4, 3, (16, 32), (8, 16), theta_cutoff=4 * torch.pi / 15,
                                      optimized_kernel=False, **conv_kw)
    opt = th.DiscreteContinuousConvS2(4, 3, (16, 32), (8, 16), theta_cutoff=4 * torch.pi / 15,
                                      optimized_kernel=True, **conv_kw)
    cases["conv"] = (ref, opt, [torch.randn(2, 4, 16, 32)])
    ref = th.DiscreteContinuousConvTransposeS2(4, 3, (8, 16), (16, 32), theta_cutoff=4 * torch.pi / 15,
                                               optimized_kernel=False, **conv_kw)
    opt = th.DiscreteContinuousConvTransposeS2(4, 3, (8, 16), (16, 32), theta_cutoff=4 * torch.pi / 15,
                                               optimized_kernel=True, **conv_kw)
    cases["tconv"] = (ref, opt, [torch.randn(2, 4, 8, 16)])
    att = dict(in_channels=8, out_channels=8, num_heads=2, in_shape=(12, 24), out_shape=(12, 24), bias=True)
    ref = th.NeighborhoodAttentionS2(optimized_kernel=False, **att)
    opt = th.NeighborhoodAttentionS2(optimized_kernel=True, **att)
    cases["attn"] = (ref, opt, [torch.randn(2, 8, 12, 24) for _ in range(3)])  # q, k, v
    for name, (ref, opt, xs) in cases.items():
        with torch.no_grad():
            for p in ref.parameters():
                p.add_(0.1 * torch.randn_like(p))  # nonzero biases
        opt.load_state_dict(ref.state_dict())
        assert opt.optimized_kernel and not ref.optimized_kernel, name
    return cases


def main():
    try:
        import torch_harmonics as th
        from disco_helpers import cuda_kernels_is_available
        from attention_helpers import cuda_kernels_is_available as attn_cuda
    except ImportError as e:
        if CPU:
            return True, "reference (cpu) skipped: package not importable here (%s)" % e
        raise
    cases = build(th)
    res = {}
    for name, (ref, opt, xs) in cases.items():
        dt = torch.float32 if name == "attn" else torch.float64
        ref = ref.to(dt)
        xs = [x.to(dt) for x in xs]
        with torch.no_grad():
            g = torch.randn_like(ref(*xs))
        want = fwd_bwd(ref, xs, g)
        res[name] = (want, g, xs, dt)
    # self-check: the package's torch path of the convolution against the dense einsum here
    ref = cases["conv"][0]
    x = res["conv"][2][0]
    e_dense = (ref(x).detach() - dense_conv_ref(ref, x)).abs().max().item()
    assert e_dense < 1e-10, e_dense
    e_cpu = {}
    for name, (ref, opt, xs) in cases.items():
        want, g, xs, dt = res[name]
        e_cpu[name] = rel(fwd_bwd(opt.to(dt), xs, g), want)
    tol = {"conv": 1e-9, "tconv": 1e-9, "attn": 1e-3}
    cpu_ok = all(e_cpu[k] < tol[k] for k in e_cpu)
    if CPU:
        return cpu_ok, "reference (cpu) dense %.2e cpu-kernel vs torch path %s" % (
            e_dense, " ".join("%s %.2e" % kv for kv in e_cpu.items()))
    assert cuda_kernels_is_available() and attn_cuda(), "built without CUDA kernels"
    e_gpu = {}
    for name, (ref, opt, xs) in cases.items():
        want, g, xs, dt = res[name]
        opt = opt.cuda()
        e_gpu[name] = rel(fwd_bwd(opt.to(dt), [x.cuda() for x in xs], g), want)
        if name != "attn":  # float32 too
            e_gpu[name + "32"] = rel(fwd_bwd(opt.float(), [x.float().cuda() for x in xs], g), want)
    tol.update({"conv32": 1e-4, "tconv32": 1e-4})
    ok = cpu_ok and all(e_gpu[k] < tol[k] for k in e_gpu)
    return ok, "gpu vs torch path %s | cpu-kernel %s | dense %.2e (rel, out+grads)" % (
        " ".join("%s %.2e" % kv for kv in e_gpu.items()), " ".join("%s %.2e" % kv for kv in e_cpu.items()), e_dense)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
