# extension-cpp (pytorch/extension-cpp, module extension_cpp): the torch.library ops
# extension_cpp::mymuladd / mymul / myadd_out, CUDA kernels (csrc/cuda/muladd.cu) against a*b+c,
# a*b, a+b in plain torch (float64) and against the package's own CPU kernels (csrc/muladd.cpp),
# plus mymuladd's gradient (ops.py registers autograd through mymul) against the analytic one.
# Imported the normal way (`import extension_cpp` loads _C, whose TORCH_LIBRARY registers the ops).
# Schemas relied on (muladd.cpp TORCH_LIBRARY): "mymuladd(Tensor a, Tensor b, float c) -> Tensor",
# "mymul(Tensor a, Tensor b) -> Tensor", "myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()";
# float32 only. `--cpu` runs the reference and, when the package imports, its CPU kernels.
import os
import sys
import traceback

# This file's name can equal the package's module name: never import it in place of the package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]
import torch  # noqa: E402

NAME = "extension-cpp"
CPU = "--cpu" in sys.argv


def ref(a, b, c):
    return (a.double() * b.double() + c), a.double() * b.double(), a.double() + b.double()


def run_ops(ext, a, b, c):
    muladd = ext.ops.mymuladd(a, b, c)
    mul = torch.ops.extension_cpp.mymul.default(a, b)
    out = torch.empty_like(a)
    ext.ops.myadd_out(a, b, out)
    return muladd, mul, out


def max_err(got, want):
    return max((g.double().cpu() - w.cpu()).abs().max().item() for g, w in zip(got, want))


def main():
    torch.manual_seed(0)
    a, b = torch.randn(1000, 37), torch.randn(1000, 37)
    c = 3.25
    want = ref(a, b, c)
    # self-check of the reference: (a*b+c) - c - a*b is zero in float64 up to rounding
    assert (want[0] - c - want[1]).abs().max().item() < 1e-12
    try:
        import extension_cpp
    except ImportError as e:
        if CPU:
            return True, "reference (cpu) ok; package not importable here (%s)" % e
        raise
    err_cpu = max_err(run_ops(extension_cpp, a, b, c), want)
    if CPU:
        return err_cpu < 1e-5, "reference (cpu) cpu-kernel err %.2e" % err_cpu
    assert torch._C._dispatch_has_kernel_for_dispatch_key("extension_cpp::mymuladd", "CUDA"), \
        "no CUDA kernel registered for extension_cpp::mymuladd (built without CUDA?)"
    ag, bg = a.cuda().requires_grad_(), b.cuda().requires_grad_()
    got = run_ops(extension_cpp, ag.detach(), bg.detach(), c)
    err_gpu = max_err(got, want)
    y = extension_cpp.ops.mymuladd(ag, bg, c)
    g = torch.randn_like(y)
    y.backward(g)  # backward runs mymul on the GPU
    err_grad = max((ag.grad - g * bg.detach()).abs().max().item(),
                   (bg.grad - g * ag.detach()).abs().max().item())
    ok = err_gpu < 1e-5 and err_cpu < 1e-5 and err_grad < 1e-5
    return ok, "gpu %.2e cpu-kernel %.2e grad %.2e" % (err_gpu, err_cpu, err_grad)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
