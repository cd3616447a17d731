"""Compare every op of the built extension with torch, on CPU and (when present) on the GPU.

GPU tests skip visibly without a GPU (run pytest with -rs to see the reason). Where pytest
is not installed (an offline GPU machine), `python tests/test_ops.py` runs the same tests
through the small stand-in in _pytest_standin.py.
"""
import itertools
import sys

import torch

try:
    import pytest
except ImportError:
    from _pytest_standin import pytest

import fused_ops

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-10, atol=1e-10),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
}

has_gpu = torch.cuda.is_available()
DEVICES = ["cpu", "cuda"]


def need(device):
    if device == "cuda" and not has_gpu:
        pytest.skip("no CUDA GPU visible")


def reference(fn, *tensors):
    """Compute the reference in float64 on the CPU, then cast back to the input dtype."""
    dtype = tensors[0].dtype
    args = [t.detach().cpu().double() for t in tensors]
    return fn(*args).to(dtype)


def check(actual, expected):
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    torch.testing.assert_close(actual.cpu(), expected.cpu(), **TOL[actual.dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_gelu(device, dtype):
    need(device)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(7, 33, generator=g).to(device=device, dtype=dtype)
    b = torch.randn(33, generator=g).to(device=device, dtype=dtype)
    check(fused_ops.bias_gelu(x, b),
          reference(lambda x, b: torch.nn.functional.gelu(x + b), x, b))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_residual(device, dtype):
    need(device)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 5, 129, generator=g).to(device=device, dtype=dtype)
    r = torch.randn(4, 5, 129, generator=g).to(device=device, dtype=dtype)
    check(fused_ops.scale_residual(x, r, 0.75), reference(lambda x, r: x * 0.75 + r, x, r))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm(device, dtype):
    need(device)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(6, 1000, generator=g).to(device=device, dtype=dtype)
    w = torch.rand(1000, generator=g).to(device=device, dtype=dtype)
    expected = reference(
        lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, x, w)
    check(fused_ops.rms_norm(x, w, 1e-6), expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_sum(device, dtype):
    need(device)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 8, 517, generator=g).to(device=device, dtype=dtype)
    actual = fused_ops.row_sum(x)
    expected = reference(lambda x: x.sum(-1), x)
    # A sum of 517 values rounds once more in low precision: scale the tolerance.
    tol = {k: v * 8 for k, v in TOL[dtype].items()}
    torch.testing.assert_close(actual.cpu(), expected.cpu(), **tol)


def test_rejects_mismatched_shapes():
    x = torch.randn(2, 4)
    with pytest.raises(RuntimeError, match="expected a 1-D tensor of size 4"):
        fused_ops.bias_gelu(x, torch.randn(5))
    with pytest.raises(RuntimeError, match="dtypes differ"):
        fused_ops.scale_residual(x, x.double(), 1.0)


def test_runs_on_gpu_and_matches_cpu():
    """The smoke test: the kernel for this GPU's target is in the wheel and runs."""
    need("cuda")
    x = torch.randn(16, 64)
    b = torch.randn(64)
    on_gpu = fused_ops.bias_gelu(x.cuda(), b.cuda())
    torch.cuda.synchronize()
    torch.testing.assert_close(on_gpu.cpu(), fused_ops.bias_gelu(x, b), rtol=1e-5, atol=1e-5)


def _run_without_pytest():
    """Every test_* function over the product of its parameters; exit 1 on a failure."""
    passed = skipped = failed = 0
    for name, fn in sorted(globals().items()):
        if not name.startswith("test_") or not callable(fn):
            continue
        params = getattr(fn, "_params", [])
        names = [n for n, _ in params]
        for values in itertools.product(*[v for _, v in params]):
            label = f"{name}[{'-'.join(str(v) for v in values)}]" if values else name
            try:
                fn(**dict(zip(names, values)))
                passed += 1
            except pytest.SkipException as e:
                skipped += 1
                print(f"SKIPPED {label}: {e}")
            except Exception as e:  # noqa: BLE001 (report every failure, then exit 1)
                failed += 1
                print(f"FAILED {label}: {type(e).__name__}: {e}")
    print(f"{passed} passed, {skipped} skipped, {failed} failed (without pytest)")
    return 1 if failed else 0


if __name__ == "__main__":
    if hasattr(pytest, "main"):
        sys.exit(pytest.main([__file__, "-rs", "-q", "-p", "no:cacheprovider"]))
    sys.exit(_run_without_pytest())
