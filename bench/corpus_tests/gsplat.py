# gsplat 1.5.3 (nerfstudio-project/gsplat): the CUDA kernels of gsplat.csrc through the package's
# wrappers (gsplat.cuda._wrapper), against the package's own pure-torch implementations
# (gsplat.cuda._torch_impl) and a brute-force torch rasterizer written here (float64, every pixel
# against every projected Gaussian in depth order, gsplat's rules: pixel centre +0.5,
# alpha = min(0.999, opacity * exp(-sigma)), skip alpha < 1/255, stop before T would drop to 1e-4):
#   quat_scale_to_covar_preci vs _quat_scale_to_covar_preci;
#   fully_fused_projection (pinhole, from quats/scales) vs _fully_fused_projection (radii within 1
#     pixel, means2d / depths / conics);
#   isect_tiles / isect_offset_encode vs _isect_tiles / _isect_offset_encode (identical tile counts,
#     intersection ids, flatten ids, tile offsets);
#   rasterize_to_pixels (after isect_offset_encode) and its backward vs the brute-force render and
#     autograd through it (gradients for means2d, conics, colors, opacities);
#   spherical_harmonics (degree 3) and its backward vs _spherical_harmonics + autograd.
# Imported the normal way (`import gsplat`; _backend needs rich, which the GPU machine has). Its
# _backend falls back to a JIT build when `from gsplat import csrc` fails: the test asserts that
# the compiled gsplat.csrc is the module in use. The package has no CPU kernels.
# Tolerances (fp32 kernels, fast math): projections and SH 1e-4 relative, radii 1 pixel,
# rendered colours/alphas 2e-4 absolute, gradients 1e-3 of their largest magnitude.
# `--cpu` runs only the brute-force rasterizer's self-checks.
import math
import os
import sys
import traceback

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402

NAME = "gsplat"
CPU_ONLY = "--cpu" in sys.argv
W, H, TILE = 70, 48, 16


def render_ref(means2d, conics, colors, opac, depths, valid, bg):
    """brute force for one image: means2d (N,2), conics (N,3), colors (N,ch), opac (N,),
    depths (N,), valid (N,) bool, bg (ch,) -> (H, W, ch), (H, W, 1)"""
    idx = torch.nonzero(valid).flatten()
    idx = idx[torch.argsort(depths[idx], stable=True)]
    ys, xs = torch.meshgrid(torch.arange(H, dtype=means2d.dtype), torch.arange(W, dtype=means2d.dtype),
                            indexing="ij")
    p = torch.stack([xs + 0.5, ys + 0.5], -1).reshape(-1, 1, 2)  # (P, 1, 2)
    d = means2d[idx][None] - p  # (P, n, 2)
    a, b, c = conics[idx, 0], conics[idx, 1], conics[idx, 2]
    sigma = 0.5 * (a * d[..., 0] ** 2 + c * d[..., 1] ** 2) + b * d[..., 0] * d[..., 1]
    alpha = torch.clamp(opac[idx] * torch.exp(-sigma), max=0.999)
    skip = (sigma < 0) | (alpha < 1.0 / 255.0)
    alpha = torch.where(skip, torch.zeros_like(alpha), alpha)
    one_minus = 1 - alpha
    t_excl = torch.cumprod(torch.cat([torch.ones_like(one_minus[:, :1]), one_minus[:, :-1]], 1), 1)
    done = (t_excl * one_minus <= 1e-4) & ~skip
    keep = (torch.cumsum(done.int(), 1) == 0).to(alpha.dtype)  # the stopping Gaussian is left out
    vis = alpha * t_excl * keep
    acc = vis.sum(1, keepdim=True)
    img = vis @ colors[idx] + (1 - acc) * bg[None]
    return img.reshape(H, W, -1), acc.reshape(H, W, 1)


def self_check():
    dt = torch.float64
    m = torch.tensor([[10.5, 20.5], [10.5, 20.5]], dtype=dt)
    con = torch.tensor([[0.5, 0.0, 0.5], [0.5, 0.0, 0.5]], dtype=dt)
    col = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=dt)
    op = torch.tensor([0.6, 0.5], dtype=dt)
    img, acc = render_ref(m, con, col, op, torch.tensor([2.0, 1.0], dtype=dt), torch.ones(2, dtype=torch.bool),
                          torch.zeros(2, dtype=dt))
    # at the centre pixel: the nearer (second) Gaussian first: 0.5, then 0.6 * 0.5 of the first
    assert torch.allclose(img[20, 10], torch.tensor([0.3, 0.5], dtype=dt)) and abs(acc[20, 10, 0] - 0.8) < 1e-12
    d2 = 3.0 ** 2 + 1.0 ** 2  # pixel (x=13, y=21) is 3 right and 1 down of the centre (10.5, 20.5)
    assert abs(img[21, 13, 1].item() - 0.5 * math.exp(-0.25 * d2)) < 1e-12
    far = img[0, 69]
    assert far.abs().max() == 0  # alpha below 1/255: skipped
    # early stop: after 0.999 and 0.8, T = 2e-4; the third (0.6) would take it to 8e-5 <= 1e-4: left out
    m3 = torch.tensor([[5.5, 5.5]] * 3, dtype=dt)
    c3 = torch.tensor([[1.0, 0.0, 1.0]] * 3, dtype=dt)
    im3, acc3 = render_ref(m3, c3, torch.eye(3, dtype=dt), torch.tensor([0.999, 0.8, 0.6], dtype=dt),
                           torch.tensor([1.0, 2.0, 3.0], dtype=dt), torch.ones(3, dtype=torch.bool),
                           torch.zeros(3, dtype=dt))
    assert abs(im3[5, 5, 0] - 0.999) < 1e-12 and abs(im3[5, 5, 1] - 0.001 * 0.8) < 1e-12 and im3[5, 5, 2] == 0


def scene():
    torch.manual_seed(0)
    N, C = 60, 2
    means = torch.cat([torch.rand(N, 2) * 2.4 - 1.2, torch.rand(N, 1) * 3 + 3], 1)
    quats = torch.nn.functional.normalize(torch.randn(N, 4), dim=-1)
    scales = torch.exp(torch.rand(N, 3) * math.log(6.0)) * 0.05
    opac = torch.rand(N) * 0.7 + 0.2
    viewmats = torch.eye(4).repeat(C, 1, 1)
    ang = 0.15
    viewmats[1, :3, :3] = torch.tensor([[math.cos(ang), 0, math.sin(ang)], [0, 1, 0],
                                        [-math.sin(ang), 0, math.cos(ang)]])
    viewmats[1, :3, 3] = torch.tensor([-0.3, 0.1, 0.4])
    Ks = torch.tensor([[60.0, 0, W / 2], [0, 60.0, H / 2], [0, 0, 1]]).repeat(C, 1, 1)
    colors = torch.rand(C, N, 3)
    bgs = torch.rand(C, 3)
    return N, C, means, quats, scales, opac, viewmats, Ks, colors, bgs


def rel(a, b):
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    return ((a - b).abs().max() / b.abs().max().clamp(min=1e-12)).item()


def main():
    self_check()
    if CPU_ONLY:
        return True, "reference (cpu) brute-force rasterizer self-checks ok (no cpu kernel in the package)"

    import gsplat
    import gsplat.csrc
    from gsplat.cuda import _backend
    from gsplat.cuda import _torch_impl as ti
    from gsplat.cuda._wrapper import (fully_fused_projection, isect_offset_encode, isect_tiles,
                                      quat_scale_to_covar_preci, rasterize_to_pixels, spherical_harmonics)
    assert _backend._C is gsplat.csrc, "gsplat is not using its compiled gsplat.csrc"
    dev = "cuda"
    N, C, means, quats, scales, opac, viewmats, Ks, colors, bgs = [
        x.to(dev) if torch.is_tensor(x) else x for x in scene()]
    errs = {}
    cov, pre = quat_scale_to_covar_preci(quats, scales)
    cov_t, pre_t = ti._quat_scale_to_covar_preci(quats, scales)
    errs["covar"], errs["preci"] = rel(cov, cov_t), rel(pre, pre_t)

    radii, m2d, depths, conics, _ = fully_fused_projection(means, None, quats, scales, viewmats, Ks, W, H)
    radii_t, m2d_t, depths_t, conics_t, _ = ti._fully_fused_projection(means, cov_t, viewmats, Ks, W, H)
    v = (radii > 0).all(-1) & (radii_t > 0).all(-1)
    n_valid = int(v.sum())
    radii_diff = int((radii - radii_t).abs().max())
    errs["means2d"], errs["depths"] = rel(m2d[v], m2d_t[v]), rel(depths[v], depths_t[v])
    errs["conics"] = rel(conics[v], conics_t[v])

    tw, th = math.ceil(W / TILE), math.ceil(H / TILE)
    tpg, isect_ids, flatten_ids = isect_tiles(m2d, radii, depths, TILE, tw, th)
    tpg_t, isect_ids_t, flatten_ids_t = ti._isect_tiles(m2d, radii, depths, TILE, tw, th)
    isect_same = (torch.equal(tpg.long(), tpg_t.long()) and torch.equal(isect_ids, isect_ids_t)
                  and torch.equal(flatten_ids.long(), flatten_ids_t.long()))
    offsets = isect_offset_encode(isect_ids, C, tw, th)
    isect_same = isect_same and torch.equal(offsets.long(), ti._isect_offset_encode(isect_ids, C, tw, th).long())

    # rasterization of the CUDA projection, forward and backward, against the brute force
    opac_c = opac[None].repeat(C, 1).contiguous()
    ins = [t.detach().clone().requires_grad_() for t in (m2d, conics, colors, opac_c)]
    img, alphas = rasterize_to_pixels(ins[0], ins[1], ins[2], ins[3], W, H, TILE, offsets, flatten_ids,
                                      backgrounds=bgs)
    torch.manual_seed(3)
    g_img, g_a = torch.randn(C, H, W, 3), torch.randn(C, H, W, 1)
    ((img * g_img.to(dev)).sum() + (alphas * g_a.to(dev)).sum()).backward()
    refs = [t.detach().cpu().double().requires_grad_() for t in (m2d, conics, colors, opac_c)]
    err_img = err_a = 0.0
    loss = 0
    for c in range(C):
        valid_c = (radii[c] > 0).all(-1).cpu()
        ri, ra = render_ref(refs[0][c], refs[1][c], refs[2][c], refs[3][c], depths[c].detach().cpu().double(),
                            valid_c, bgs[c].cpu().double())
        err_img = max(err_img, (img[c].detach().cpu().double() - ri.detach()).abs().max().item())
        err_a = max(err_a, (alphas[c].detach().cpu().double() - ra.detach()).abs().max().item())
        loss = loss + (ri * g_img[c].double()).sum() + (ra * g_a[c].double()).sum()
    loss.backward()
    for name, a, b in zip(("means2d", "conics", "colors", "opacities"), ins, refs):
        errs["grad_" + name] = rel(a.grad.cpu(), b.grad)

    # spherical harmonics, degree 3
    torch.manual_seed(4)
    dirs = torch.randn(50, 3, device=dev, requires_grad=True)
    coeffs = torch.randn(50, 16, 3, device=dev, requires_grad=True)
    sh = spherical_harmonics(3, dirs, coeffs)
    g_sh = torch.randn(50, 3, device=dev)
    sh.backward(g_sh)
    d_t, c_t = dirs.detach().double().requires_grad_(), coeffs.detach().double().requires_grad_()
    sh_t = ti._spherical_harmonics(3, d_t, c_t)
    sh_t.backward(g_sh.double())
    errs["sh"], errs["grad_sh_coeffs"], errs["grad_sh_dirs"] = (rel(sh, sh_t), rel(coeffs.grad, c_t.grad),
                                                                rel(dirs.grad, d_t.grad))

    ok = (all(e < (1e-3 if k.startswith("grad") else 1e-4) for k, e in errs.items()) and radii_diff <= 1
          and n_valid > 60 and isect_same and err_img < 2e-4 and err_a < 2e-4)
    return ok, ("valid %d radii_diff %d isect_same %s image %.1e alpha %.1e " % (
        n_valid, radii_diff, isect_same, err_img, err_a) + " ".join("%s %.1e" % kv for kv in errs.items()))


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
