# DCNv4 1.0.0.post2 (OpenGVLab/DCNv4): the CUDA kernels DCNv4.ext.dcnv4_forward and dcnv4_backward,
# through the package's DCNv4Function (which picks the kernel's d_stride / block size), against a
# plain-torch deformable convolution in float64 written from dcnv4_im2col_cuda.cuh (the package
# ships no pytorch reference): channels-last value (B, H, W, G*D); per output pixel and group g the
# offset_mask row holds, at g*K*3, K (x, y) offset pairs (kernel points with the w index outer,
# the h index inner, the centre skipped when remove_center) then K un-normalised masks (no
# softmax); sample at w = p0_w - c_w*scale + (i*dil + dx)*scale, h likewise
# (p0 = c - pad + o*stride, c = dil*(k-1)/2), bilinear with zero padding, times the mask, summed.
# Gradients with respect to the input and to offset_mask against autograd through the reference.
# Two configurations: 3x3 with the centre and offset_scale 1.0; remove_center (K=8), scale 0.5.
# Imported the normal way (`import DCNv4`; the package has no CPU kernel).
# Bindings relied on (src/dcnv4.h): dcnv4_forward(value, p_offset, kh, kw, sh, sw, ph, pw, dh, dw,
# group, group_channels, float offset_scale, im2col_step, remove_center, d_stride, block_thread,
# bool softmax) -> (B, Ho, Wo, G*D); dcnv4_backward(value, p_offset, kh, ..., offset_scale,
# im2col_step, grad_output, remove_center, d_stride, block_thread, softmax) -> [grad_value,
# grad_offset_mask]. Tolerance: fp32 kernels, 1e-4 of the largest magnitude (outputs, gradients).
# `--cpu` runs only the reference and its self-checks.
import math
import os
import sys
import traceback

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402

NAME = "DCNv4"
CPU_ONLY = "--cpu" in sys.argv
B, H, W, G, D = 2, 10, 10, 4, 16  # group_channels a multiple of 16 (the module asserts it)
KS, STRIDE, PAD, DIL = 3, 1, 1, 1


def bilinear(value, h, w):  # value (B, H, W, G, D); h, w (B, Ho, Wo, G) -> (B, Ho, Wo, G, D)
    Bn, Hn, Wn, Gn, _ = value.shape
    h0, w0 = torch.floor(h), torch.floor(w)
    lh, lw = h - h0, w - w0
    bi = torch.arange(Bn)[:, None, None, None]
    gi = torch.arange(Gn)[None, None, None, :]
    out = 0
    for dh, wh in ((0, 1 - lh), (1, lh)):
        for dw, ww in ((0, 1 - lw), (1, lw)):
            hi, wi = h0 + dh, w0 + dw
            valid = (hi >= 0) & (hi < Hn) & (wi >= 0) & (wi < Wn)
            v = value[bi, hi.clamp(0, Hn - 1).long(), wi.clamp(0, Wn - 1).long(), gi]
            out = out + v * (wh * ww * valid)[..., None]
    return out


def dcnv4_ref(value, offm, remove_center, scale):  # value (B,H,W,G*D), offm (B,Ho,Wo,P); float64
    Bn, Hn, Wn, _ = value.shape
    v = value.reshape(Bn, Hn, Wn, G, D)
    Ho = (Hn + 2 * PAD - (DIL * (KS - 1) + 1)) // STRIDE + 1
    Wo = (Wn + 2 * PAD - (DIL * (KS - 1) + 1)) // STRIDE + 1
    K = KS * KS - remove_center
    c = (DIL * (KS - 1)) >> 1
    oh = torch.arange(Ho, dtype=value.dtype)[None, :, None, None]
    ow = torch.arange(Wo, dtype=value.dtype)[None, None, :, None]
    p0_h = c - PAD + oh * STRIDE - c * scale
    p0_w = c - PAD + ow * STRIDE - c * scale
    gsl = offm[..., :G * K * 3].reshape(Bn, Ho, Wo, G, K * 3)
    out = 0
    k = 0
    for i in range(KS):  # w index outer
        for j in range(KS):  # h index inner
            if remove_center and i == KS // 2 and j == KS // 2:
                continue
            w_im = p0_w + (i * DIL + gsl[..., 2 * k]) * scale
            h_im = p0_h + (j * DIL + gsl[..., 2 * k + 1]) * scale
            inside = ((h_im > -1) & (w_im > -1) & (h_im < Hn) & (w_im < Wn)).to(value.dtype)
            out = out + bilinear(v, h_im, w_im) * (gsl[..., 2 * K + k] * inside)[..., None]
            k += 1
    return out.reshape(Bn, Ho, Wo, G * D)


def case(remove_center, scale, seed):
    torch.manual_seed(seed)
    K = KS * KS - remove_center
    P = int(math.ceil(G * K * 3 / 8) * 8)
    value = torch.randn(B, H, W, G * D)
    offm = torch.zeros(B, H, W, P)
    o = offm[..., :G * K * 3].view(B, H, W, G, K * 3)
    o[..., :2 * K] = torch.randn(B, H, W, G, 2 * K) * 1.5  # some samples leave the image
    o[..., 2 * K:] = torch.rand(B, H, W, G, K)
    gout = torch.randn(B, H, W, G * D)
    return value, offm, gout


def ref_with_grads(value, offm, gout, remove_center, scale):
    vr, orr = value.double().requires_grad_(), offm.double().requires_grad_()
    out = dcnv4_ref(vr, orr, remove_center, scale)
    out.backward(gout.double())
    return out.detach(), vr.grad, orr.grad


def self_check():
    # zero offsets, unit masks, scale 1: a 3x3 box sum with zero padding (a plain conv2d)
    value, offm, _ = case(0, 1.0, 5)
    offm.zero_()
    offm[..., :G * 27].view(B, H, W, G, 27)[..., 18:] = 1.0
    out = dcnv4_ref(value.double(), offm.double(), 0, 1.0)
    x = value.double().permute(0, 3, 1, 2)
    box = torch.nn.functional.conv2d(x, torch.ones(G * D, 1, 3, 3, dtype=torch.float64), padding=1, groups=G * D)
    assert (out - box.permute(0, 2, 3, 1)).abs().max() < 1e-12
    # an integer offset shifts the sample: dx=+1 at every point gives the box sum one pixel right
    o = offm[..., :G * 27].view(B, H, W, G, 27)
    o[..., 0:18:2] = 1.0
    shifted = dcnv4_ref(value.double(), offm.double(), 0, 1.0)
    assert (shifted[:, :, :-1] - out[:, :, 1:]).abs().max() < 1e-12

def main():
    self_check()
    configs = [(0, 1.0, 0), (1, 0.5, 1)]
    refs = [(case(rc, sc, sd), ref_with_grads(*case(rc, sc, sd), rc, sc)) for rc, sc, sd in configs]
    if CPU_ONLY:
        return True, "reference (cpu) ok, output scale %.2f (no cpu kernel in the package)" % refs[0][1][0].abs().max()

    from DCNv4 import DCNv4Function
    msgs, ok = [], True
    for (rc, sc, _), ((value, offm, gout), (o_ref, gv_ref, go_ref)) in zip(configs, refs):
        v = value.cuda().clone().requires_grad_()
        om = offm.cuda().clone().requires_grad_()
        out = DCNv4Function.apply(v, om, KS, KS, STRIDE, STRIDE, PAD, PAD, DIL, DIL, G, D, sc, 256, rc)
        out.backward(gout.cuda())
        e_o = (out.detach().cpu().double() - o_ref).abs().max().item() / o_ref.abs().max().item()
        e_gv = (v.grad.cpu().double() - gv_ref).abs().max().item() / gv_ref.abs().max().item()
        e_go = (om.grad.cpu().double() - go_ref).abs().max().item() / go_ref.abs().max().item()
        ok = ok and e_o < 1e-4 and e_gv < 1e-4 and e_go < 1e-4
        msgs.append("remove_center=%d scale=%.1f out %.1e grad_value %.1e grad_offset_mask %.1e"
                    % (rc, sc, e_o, e_gv, e_go))
    return ok, "; ".join(msgs)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
