# fused-ssim 1.0.0 (rahul-goel/fused-ssim): the CUDA kernels fused_ssim_cuda.fusedssim /
# fusedssim_backward (2D) and fusedssim3d / fusedssim_backward3d (3D), through the package's
# fused_ssim / fused_ssim3d / FusedSSIMMap, against a plain-torch SSIM in float64 with the same
# window (11 taps, Gaussian sigma 1.5, zero padding 5, C1 = 0.01^2, C2 = 0.03^2, map clamped to
# [-1, 1]) and autograd through it for the gradient with respect to img1. The package has no CPU
# kernel. Imported the normal way (`import fused_ssim`; its __init__ picks fused_ssim_cuda when
# torch.cuda.is_available()).
# Bindings relied on (ext.cpp / ssim.h): fusedssim(float C1, float C2, img1 (B,C,H,W), img2, bool
# train) -> (ssim_map, dm_dmu1, dm_dsigma1_sq, dm_dsigma12); fusedssim_backward(C1, C2, img1, img2,
# dL_dmap, dm_dmu1, dm_dsigma1_sq, dm_dsigma12) -> dL_dimg1; the 3D pair takes (B,C,D,H,W).
# Tolerances: fp32 kernels built with --use_fast_math: map 1e-4 absolute, gradient 1e-3 of its
# largest magnitude. `--cpu` runs only the reference and its self-checks.
import os
import sys
import traceback

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NAME = "fused-ssim"
CPU_ONLY = "--cpu" in sys.argv
C1, C2 = 0.01 ** 2, 0.03 ** 2
CGAUSS = [0.001028380123898387, 0.0075987582094967365, 0.036000773310661316, 0.10936068743467331,
          0.21300552785396576, 0.26601171493530273]  # ssim.cu's cGauss, first half (symmetric)


def gauss1d():
    x = torch.arange(11, dtype=torch.float64) - 5
    g = torch.exp(-x * x / (2 * 1.5 ** 2))
    return g / g.sum()


def ssim_map_ref(a, b):  # (B, C, H, W) or (B, C, D, H, W); float64; zero padding ("same")
    g = gauss1d()
    nd = a.dim() - 2
    C = a.shape[1]
    w = g
    for _ in range(nd - 1):
        w = w[..., None] * g
    w = w.expand(C, 1, *([11] * nd)).contiguous()
    conv = F.conv2d if nd == 2 else F.conv3d

    def blur(x):
        return conv(x, w, padding=5, groups=C)

    mu1, mu2 = blur(a), blur(b)
    s1 = (blur(a * a) - mu1 * mu1).clamp(min=0)
    s2 = (blur(b * b) - mu2 * mu2).clamp(min=0)
    s12 = blur(a * b) - mu1 * mu2
    m = ((2 * mu1 * mu2 + C1) * (2 * s12 + C2)) / ((mu1 * mu1 + mu2 * mu2 + C1) * (s1 + s2 + C2))
    return m.clamp(-1, 1)


def case(shape, seed):
    torch.manual_seed(seed)
    a = torch.rand(shape)
    b = (a + 0.2 * torch.randn(shape)).clamp(0, 1)  # correlated: SSIM well inside (-1, 1)
    wmap = torch.rand(shape)
    return a, b, wmap


def ref_loss_and_grad(a, b, wmap):
    x = a.double().requires_grad_()
    m = ssim_map_ref(x, b.double())
    (m * wmap.double()).sum().backward()
    return m.detach(), x.grad


def main():
    g = gauss1d()
    assert (g[:6] - torch.tensor(CGAUSS, dtype=torch.float64)).abs().max() < 1e-7
    a = torch.rand(1, 2, 20, 20, dtype=torch.float64)
    assert (ssim_map_ref(a, a) - 1).abs().max() < 1e-12  # identical images: SSIM 1
    cases = [("2d", (2, 3, 37, 45)), ("3d", (1, 2, 13, 18, 21))]
    refs = {k: (case(s, i),) + (ref_loss_and_grad(*case(s, i)),) for i, (k, s) in enumerate(cases)}
    if CPU_ONLY:
        return True, "reference (cpu) ssim 2d %.4f 3d %.4f (no cpu kernel in the package)" % (
            refs["2d"][1][0].mean().item(), refs["3d"][1][0].mean().item())

    import fused_ssim
    msgs, ok = [], True
    for k, _ in cases:
        (a, b, wmap), (m_ref, g_ref) = refs[k]
        x = a.cuda().clone().requires_grad_()
        nd = 3 if k == "3d" else 2
        m = fused_ssim.FusedSSIMMap.apply(C1, C2, x, b.cuda(), "same", True, nd)
        (m * wmap.cuda()).sum().backward()
        e_map = (m.detach().cpu().double() - m_ref).abs().max().item()
        e_grad = ((x.grad.cpu().double() - g_ref).abs().max() / g_ref.abs().max()).item()
        fn = fused_ssim.fused_ssim3d if nd == 3 else fused_ssim.fused_ssim
        e_valid = abs(fn(a.cuda(), b.cuda(), padding="valid", train=False).item()
                      - m_ref[(..., ) + (slice(5, -5),) * nd].mean().item())
        ok = ok and e_map < 1e-4 and e_grad < 1e-3 and e_valid < 1e-5
        msgs.append("%s map %.2e grad_rel %.2e valid_mean %.2e" % (k, e_map, e_grad, e_valid))
    return ok, " ".join(msgs)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
