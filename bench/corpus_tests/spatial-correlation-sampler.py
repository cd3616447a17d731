# spatial-correlation-sampler 0.5.0 (import spatial_correlation_sampler; the compiled module is the
# top-level spatial_correlation_sampler_backend): spatial_correlation_sample forward and backward,
# i.e. correlation_cuda_forward and correlation_cuda_backward_kernel_input1/2
# (Correlation_Module/correlation_cuda_kernel.cu), against
# (1) a plain-torch float64 reference written here from correlation.cpp's definition
#     out[n,ph,pw,h,w] = sum_c,i,j in1[n,c,u+i*dil,v+j*dil] * in2[n,c,u+i*dil+su,v+j*dil+sv]
#     (u = h*stride - pad, su = (ph - (patch-1)/2) * dilation_patch; zero outside), gradients
#     by autograd through it, and
# (2) the package's own CPU kernels (correlation_cpp_forward/backward, same binding) in float32.
# Imported the normal way. Binding relied on (correlation_sampler.cpp PYBIND11_MODULE):
# forward(input1, input2, kH, kW, patchH, patchW, padH, padW, dilationH, dilationW,
# dilation_patchH, dilation_patchW, dH, dW) and backward(input1, input2, grad_output, same ints),
# dispatching on the device (float/double on CPU; + half/bf16 on CUDA). Patch sizes are odd:
# the CPU and CUDA kernels round the patch radius differently for even ones.
# `--cpu` runs the reference self-checks and, when the package imports, its CPU kernel.
import os
import sys
import traceback

# This file's name can equal the package's module name: never import it in place of the package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NAME = "spatial-correlation-sampler"
CPU = "--cpu" in sys.argv
# (kernel_size, patch_size, stride, padding, dilation, dilation_patch)
CONFIGS = [(1, 5, 1, 0, 1, 2), (3, 3, 2, 1, 1, 1), (3, 5, 1, 2, 2, 1)]


def ref_corr(in1, in2, k, patch, stride, pad, dil, dpatch):
    N, C, H, W = in1.shape
    oH = (H + 2 * pad - ((k - 1) * dil + 1)) // stride + 1
    oW = (W + 2 * pad - ((k - 1) * dil + 1)) // stride + 1
    rad = (patch - 1) // 2
    M = pad + rad * dpatch + k * dil + 1  # zero margin wide enough for every read
    p1, p2 = F.pad(in1, (M, M, M, M)), F.pad(in2, (M, M, M, M))
    out = in1.new_zeros(N, patch, patch, oH, oW)
    rows = []
    for ph in range(patch):
        cols = []
        for pw in range(patch):
            su, sv = (ph - rad) * dpatch, (pw - rad) * dpatch
            acc = in1.new_zeros(N, oH, oW)
            for i in range(k):
                for j in range(k):
                    r1, c1 = M - pad + i * dil, M - pad + j * dil
                    a = p1[:, :, r1:r1 + stride * (oH - 1) + 1:stride, c1:c1 + stride * (oW - 1) + 1:stride]
                    b = p2[:, :, r1 + su:r1 + su + stride * (oH - 1) + 1:stride,
                           c1 + sv:c1 + sv + stride * (oW - 1) + 1:stride]
                    acc = acc + (a * b).sum(1)
            cols.append(acc)
        rows.append(torch.stack(cols, 1))
    out = torch.stack(rows, 1)
    return out


def run_ref(in1, in2, g, cfg):
    a, b = in1.clone().requires_grad_(), in2.clone().requires_grad_()
    y = ref_corr(a, b, *cfg)
    y.backward(g)
    return y.detach(), a.grad, b.grad


def run_pkg(fn, in1, in2, g, cfg):
    a, b = in1.clone().requires_grad_(), in2.clone().requires_grad_()
    k, patch, stride, pad, dil, dpatch = cfg
    y = fn(a, b, kernel_size=k, patch_size=patch, stride=stride, padding=pad, dilation=dil,
           dilation_patch=dpatch)
    y.backward(g)
    return y.detach(), a.grad, b.grad


def err(got, want):
    return max((x.double().cpu() - y.cpu()).abs().max().item() / (1 + y.abs().max().item())
               for x, y in zip(got, want))


def main():
    torch.manual_seed(0)
    cases = []
    for cfg in CONFIGS:
        in1 = torch.randn(2, 6, 11, 13, dtype=torch.float64)
        in2 = torch.randn(2, 6, 11, 13, dtype=torch.float64)
        want = ref_corr(in1, in2, *cfg)
        g = torch.randn_like(want)
        cases.append((cfg, in1, in2, g, run_ref(in1, in2, g, cfg)))
    # self-check of the reference: one output element by a direct loop
    cfg, in1, in2, _, (want, _, _) = cases[1]
    k, patch, stride, pad, dil, dpatch = cfg
    n, ph, pw, h, w = 1, 0, 2, 3, 4
    u, v, su, sv = h * stride - pad, w * stride - pad, (ph - 1) * dpatch, (pw - 1) * dpatch
    direct = 0.0
    for i in range(k):
        for j in range(k):
            y1, x1, y2, x2 = u + i * dil, v + j * dil, u + i * dil + su, v + j * dil + sv
            if 0 <= y1 < 11 and 0 <= x1 < 13 and 0 <= y2 < 11 and 0 <= x2 < 13:
                direct += (in1[n, :, y1, x1] * in2[n, :, y2, x2]).sum().item()
    assert abs(direct - want[n, ph, pw, h, w].item()) < 1e-10
    try:
        from spatial_correlation_sampler import spatial_correlation_sample
    except ImportError as e:
        if CPU:
            return True, "reference (cpu) ok; package not importable here (%s)" % e
        raise
    e_cpu = max(err(run_pkg(spatial_correlation_sample, a.float(), b.float(), g.float(), c), r)
                for c, a, b, g, r in cases)
    if CPU:
        return e_cpu < 1e-5, "reference (cpu) cpu-kernel vs ref %.2e (fwd+bwd)" % e_cpu
    e64 = max(err(run_pkg(spatial_correlation_sample, a.cuda(), b.cuda(), g.cuda(), c), r)
              for c, a, b, g, r in cases)
    e32 = max(err(run_pkg(spatial_correlation_sample, a.float().cuda(), b.float().cuda(), g.float().cuda(), c),
                  run_pkg(spatial_correlation_sample, a.float(), b.float(), g.float(), c))
              for c, a, b, g, r in cases)
    ok = e64 < 1e-10 and e32 < 1e-5 and e_cpu < 1e-5
    return ok, "gpu64 vs ref %.2e gpu32 vs cpu-kernel %.2e cpu-kernel vs ref %.2e (fwd+bwd, rel)" % (e64, e32, e_cpu)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
