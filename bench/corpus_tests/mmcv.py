# mmcv 2.2.0 (open-mmlab/mmcv, MMCV_WITH_OPS=1): CUDA kernels of the one big extension mmcv._ext,
# called through its registered functions with the argument order of mmcv/ops/*.py, against
# torchvision.ops / plain torch in float64 on the CPU (autograd for the gradients) and, where mmcv
# has one, its own CPU kernel on the same inputs:
#   roi_align_forward / roi_align_backward (avg pool, aligned=True, sampling_ratio 2) vs
#     torchvision.ops.roi_align + autograd, and mmcv's CPU roi_align;
#   nms (offset 0) vs torchvision.ops.nms (same kept indices in the same order), and mmcv's CPU nms;
#   modulated_deform_conv_forward / _backward (DCNv2: offset (dy, dx) pairs, mask, bias, 2 groups,
#     2 deformable groups) vs torchvision.ops.deform_conv2d + autograd, and mmcv's CPU kernel;
#   sigmoid_focal_loss_forward / _backward (with and without class weights) vs the focal-loss formula
#     + autograd;
#   ms_deform_attn_forward / _backward (2 levels) vs mmcv's own multi_scale_deformable_attn_pytorch
#     (copied here: grid_sample, align_corners=False) + autograd.
# Loaded by its file (mmcv/_ext*.so under the path) with importlib.util.spec_from_file_location:
# `import mmcv` needs mmengine, which the GPU machine lacks.
# Bindings relied on (mmcv/ops/csrc/pytorch/pybind.cpp): roi_align_forward(input, rois, output,
# argmax_y, argmax_x, aligned_height, aligned_width, spatial_scale, sampling_ratio, pool_mode (0 max,
# 1 avg), aligned); roi_align_backward(grad_output, rois, argmax_y, argmax_x, grad_input, ...same);
# nms(boxes, scores, iou_threshold, offset) -> kept indices; modulated_deform_conv_forward(input,
# weight, bias, ones, offset, mask, output, columns, kernel_h, kernel_w, stride_h, stride_w, pad_h,
# pad_w, dilation_h, dilation_w, group, deformable_group, with_bias); modulated_deform_conv_backward(
# input, weight, bias, ones, offset, mask, columns, grad_input, grad_weight, grad_bias, grad_offset,
# grad_mask, grad_output, kernel_h, ..., with_bias); sigmoid_focal_loss_forward(input, target int64,
# weight, output, gamma, alpha) and _backward(input, target, weight, grad_input, gamma, alpha);
# ms_deform_attn_forward(value, spatial_shapes, level_start_index, sampling_locations,
# attention_weights, im2col_step) -> output; ms_deform_attn_backward(value, ..., attention_weights,
# grad_output, grad_value, grad_sampling_loc, grad_attn_weight, im2col_step).
# Tolerance: fp32 kernels, 1e-4 of the largest magnitude (outputs and gradients; 1e-3 for the
# deformable gradients, whose fp32 atomics sum many terms).
# `--cpu` runs the references, their self-checks and (when the extension loads here) mmcv's CPU kernels.
import glob
import importlib.util
import os
import sys
import traceback

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NAME = "mmcv"
CPU_ONLY = "--cpu" in sys.argv


def load_ext():
    so = [f for p in sys.path for f in glob.glob(os.path.join(p or ".", "mmcv", "_ext*.so"))]
    if not so:
        raise ImportError("mmcv/_ext*.so not found on the path")
    spec = importlib.util.spec_from_file_location("_ext", so[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rel(a, b):
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    return ((a - b).abs().max() / b.abs().max()).item()


def msda_pytorch(value, shapes, locs, attn):  # mmcv.ops.multi_scale_deform_attn, copied
    bs, _, heads, dims = value.shape
    _, nq, heads, levels, points, _ = locs.shape
    value_list = value.split([int(h) * int(w) for h, w in shapes], dim=1)
    grids = 2 * locs - 1
    sampled = []
    for lvl, (h, w) in enumerate(shapes):
        v = value_list[lvl].flatten(2).transpose(1, 2).reshape(bs * heads, dims, int(h), int(w))
        g = grids[:, :, :, lvl].transpose(1, 2).flatten(0, 1)
        sampled.append(F.grid_sample(v, g, mode="bilinear", padding_mode="zeros", align_corners=False))
    attn = attn.transpose(1, 2).reshape(bs * heads, 1, nq, levels * points)
    out = (torch.stack(sampled, dim=-2).flatten(-2) * attn).sum(-1).view(bs, heads * dims, nq)
    return out.transpose(1, 2).contiguous()


def focal_ref(x, t, gamma, alpha, weight=None):  # elementwise sigmoid focal loss, (N, C)
    p = torch.sigmoid(x)
    onehot = F.one_hot(t, x.shape[1] + 1)[:, :x.shape[1]].to(x.dtype)
    loss = -alpha * onehot * (1 - p) ** gamma * torch.log(p) \
        - (1 - alpha) * (1 - onehot) * p ** gamma * torch.log(1 - p)
    if weight is not None:
        loss = loss * weight[t][:, None]
    return loss


def inputs():
    torch.manual_seed(0)
    d = {}
    d["feat"] = torch.randn(2, 8, 24, 28)
    xy1 = torch.rand(20, 2) * torch.tensor([80.0, 70.0])
    wh = torch.rand(20, 2) * 30 + 4
    d["rois"] = torch.cat([torch.randint(0, 2, (20, 1)).float(), xy1, xy1 + wh], 1)  # image scale 1/4
    d["g_roi"] = torch.randn(20, 8, 7, 7)
    b = torch.rand(300, 2) * 100
    d["boxes"] = torch.cat([b, b + torch.rand(300, 2) * 40 + 5], 1)
    d["scores"] = torch.rand(300)
    d["dc_in"] = torch.randn(2, 8, 12, 13)
    d["dc_w"] = torch.randn(6, 4, 3, 3) * 0.2  # 2 groups
    d["dc_b"] = torch.randn(6)
    d["dc_off"] = torch.randn(2, 2 * 2 * 9, 12, 13) * 1.5  # 2 deformable groups, stride 1, pad 1
    d["dc_mask"] = torch.rand(2, 2 * 9, 12, 13)
    d["dc_g"] = torch.randn(2, 6, 12, 13)
    d["fl_x"] = torch.randn(40, 5) * 2
    d["fl_t"] = torch.randint(0, 6, (40,))  # 5 = background
    d["fl_t_w"] = torch.randint(0, 5, (40,))
    d["fl_w"] = torch.rand(5) + 0.5
    d["shapes"] = torch.tensor([[10, 12], [5, 6]])
    d["value"] = torch.randn(2, 150, 4, 8)
    d["locs"] = torch.rand(2, 17, 4, 2, 3, 2) * 1.1 - 0.05
    d["attn"] = torch.softmax(torch.randn(2, 17, 4, 6), -1).view(2, 17, 4, 2, 3)
    d["g_msda"] = torch.randn(2, 17, 32)
    return d


def references(d, tvo):  # tvo: torchvision.ops, or None where torchvision is absent (--cpu only)
    r = {}
    if tvo is not None:
        f = d["feat"].double().requires_grad_()
        out = tvo.roi_align(f, d["rois"].double(), (7, 7), spatial_scale=0.25, sampling_ratio=2, aligned=True)
        out.backward(d["g_roi"].double())
        r["roi"], r["roi_grad"] = out.detach(), f.grad
        r["nms"] = tvo.nms(d["boxes"].double(), d["scores"].double(), 0.5)
        xs = [d[k].double().requires_grad_() for k in ("dc_in", "dc_off", "dc_mask", "dc_w", "dc_b")]
        out = tvo.deform_conv2d(xs[0], xs[1], xs[3], xs[4], padding=1, mask=xs[2])
        out.backward(d["dc_g"].double())
        r["dc"], r["dc_grads"] = out.detach(), [x.grad for x in xs]
    for key, t, w in (("fl", "fl_t", None), ("fl_w", "fl_t_w", d["fl_w"].double())):
        x = d["fl_x"].double().requires_grad_()
        loss = focal_ref(x, d[t], 2.0, 0.25, w)
        loss.sum().backward()
        r[key], r[key + "_grad"] = loss.detach(), x.grad
    xs = [d[k].double().requires_grad_() for k in ("value", "locs", "attn")]
    out = msda_pytorch(xs[0], d["shapes"], xs[1], xs[2])
    out.backward(d["g_msda"].double())
    r["msda"], r["msda_grads"] = out.detach(), [x.grad for x in xs]
    return r


def self_checks(d, r, tvo):
    if tvo is not None:
        # deform_conv2d with zero offsets and unit masks is conv2d
        x, w = d["dc_in"].double(), d["dc_w"].double()
        z = tvo.deform_conv2d(x, torch.zeros_like(d["dc_off"]).double(), w, None, padding=1,
                              mask=torch.ones_like(d["dc_mask"]).double())
        assert (z - F.conv2d(x, w, padding=1, groups=2)).abs().max() < 1e-10
        assert 20 < len(r["nms"]) < 300
    # focal loss with gamma 0, alpha 0.5 is half the binary cross entropy
    x = d["fl_x"].double()
    t = F.one_hot(d["fl_t"], 6)[:, :5].double()
    bce = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    assert (focal_ref(x, d["fl_t"], 0.0, 0.5) - 0.5 * bce).abs().max() < 1e-12
    # multi-scale deformable attention sampling a pixel centre returns that pixel
    v = d["value"].double()
    loc = torch.zeros(2, 1, 4, 2, 3, 2, dtype=torch.float64)
    loc[..., 0] = (3 + 0.5) / 12
    loc[..., 1] = (2 + 0.5) / 10
    a = torch.zeros(2, 1, 4, 2, 3, dtype=torch.float64)
    a[:, :, :, 0, 0] = 1.0
    o = msda_pytorch(v, d["shapes"], loc, a)
    assert (o[:, 0] - v[:, 2 * 12 + 3].reshape(2, 32)).abs().max() < 1e-12


def run_ext(ext, d, dev):  # the mmcv kernels on one device; returns the outputs and gradients
    o = {}
    feat = d["feat"].to(dev)
    rois = d["rois"].to(dev)
    out = feat.new_zeros(20, 8, 7, 7)
    ay, ax = feat.new_zeros(0), feat.new_zeros(0)
    ext.roi_align_forward(feat, rois, out, ay, ax, aligned_height=7, aligned_width=7, spatial_scale=0.25,
                          sampling_ratio=2, pool_mode=1, aligned=True)
    gin = torch.zeros_like(feat)
    ext.roi_align_backward(d["g_roi"].to(dev), rois, ay, ax, gin, aligned_height=7, aligned_width=7,
                           spatial_scale=0.25, sampling_ratio=2, pool_mode=1, aligned=True)
    o["roi"], o["roi_grad"] = out, gin
    o["nms"] = ext.nms(d["boxes"].to(dev), d["scores"].to(dev), iou_threshold=0.5, offset=0)
    x, w, b = d["dc_in"].to(dev), d["dc_w"].to(dev), d["dc_b"].to(dev)
    off, mask = d["dc_off"].to(dev), d["dc_mask"].to(dev)
    bufs = [x.new_empty(0), x.new_empty(0)]
    out = x.new_empty(2, 6, 12, 13)
    kw = dict(kernel_h=3, kernel_w=3, stride_h=1, stride_w=1, pad_h=1, pad_w=1, dilation_h=1, dilation_w=1,
              group=2, deformable_group=2, with_bias=True)
    ext.modulated_deform_conv_forward(x, w, b, bufs[0], off, mask, out, bufs[1], **kw)
    grads = [torch.zeros_like(t) for t in (x, off, mask, w, b)]
    ext.modulated_deform_conv_backward(x, w, b, bufs[0], off, mask, bufs[1], grads[0], grads[3], grads[4],
                                       grads[1], grads[2], d["dc_g"].to(dev).contiguous(), **kw)
    o["dc"], o["dc_grads"] = out, grads
    return o


def run_cuda_only(ext, d):
    o = {}
    dev = "cuda"
    for key, t, w in (("fl", "fl_t", None), ("fl_w", "fl_t_w", d["fl_w"])):
        x = d["fl_x"].to(dev)
        wt = w.to(dev) if w is not None else x.new_empty(0)
        out = torch.zeros_like(x)
        ext.sigmoid_focal_loss_forward(x, d[t].to(dev), wt, out, gamma=2.0, alpha=0.25)
        g = torch.zeros_like(x)
        ext.sigmoid_focal_loss_backward(x, d[t].to(dev), wt, g, gamma=2.0, alpha=0.25)
        o[key], o[key + "_grad"] = out, g
    value, locs, attn = d["value"].to(dev), d["locs"].to(dev), d["attn"].to(dev)
    shapes = d["shapes"].to(dev)
    start = torch.cat([shapes.new_zeros(1), (shapes[:, 0] * shapes[:, 1]).cumsum(0)[:-1]])
    o["msda"] = ext.ms_deform_attn_forward(value, shapes, start, locs, attn, im2col_step=64)
    grads = [torch.zeros_like(t) for t in (value, locs, attn)]
    ext.ms_deform_attn_backward(value, shapes, start, locs, attn, d["g_msda"].to(dev).contiguous(),
                                grads[0], grads[1], grads[2], im2col_step=64)
    o["msda_grads"] = grads
    return o


def compare(o, r, errs, tag):
    errs[tag + "roi"], errs[tag + "roi_grad"] = rel(o["roi"], r["roi"]), rel(o["roi_grad"], r["roi_grad"])
    errs[tag + "dc"] = rel(o["dc"], r["dc"])
    for name, a, b in zip(("input", "offset", "mask", "weight", "bias"), o["dc_grads"], r["dc_grads"]):
        errs[tag + "dc_grad_" + name] = rel(a, b)
    nms_same = o["nms"].cpu().long().tolist() == r["nms"].tolist()
    return nms_same


def tolerance(k):
    return 1e-3 if "dc_grad" in k or "msda_grads" in k else 1e-4


def main():
    d = inputs()
    try:
        import torchvision.ops as tvo
    except ImportError:
        if not CPU_ONLY:
            raise
        tvo = None
    r = references(d, tvo)
    self_checks(d, r, tvo)
    if tvo is None:
        return True, "reference (cpu) focal/msda ok; torchvision absent: roi_align/nms/deform_conv references not run"
    msgs = []
    try:
        ext = load_ext()
    except ImportError as e:
        if not CPU_ONLY:
            raise
        return True, "reference (cpu) ok, nms keeps %d; mmcv cpu kernels not checked (%s)" % (len(r["nms"]), e)
    errs = {}
    nms_cpu = compare(run_ext(ext, d, "cpu"), r, errs, "cpu_")
    if CPU_ONLY:
        ok = nms_cpu and all(v < tolerance(k) for k, v in errs.items())
        return ok, "reference (cpu) nms_same %s " % nms_cpu + " ".join("%s %.1e" % kv for kv in errs.items())
    nms_gpu = compare(run_ext(ext, d, "cuda"), r, errs, "")
    o = run_cuda_only(ext, d)
    for k in ("fl", "fl_grad", "fl_w", "fl_w_grad", "msda"):
        errs[k] = rel(o[k], r[k])
    for name, a, b in zip(("value", "loc", "attn"), o["msda_grads"], r["msda_grads"]):
        errs["msda_grads_" + name] = rel(a, b)
    ok = nms_cpu and nms_gpu and all(v < tolerance(k) for k, v in errs.items())
    msgs.append("nms_same cpu %s cuda %s (keeps %d)" % (nms_cpu, nms_gpu, len(r["nms"])))
    return ok, " ".join(msgs) + " " + " ".join("%s %.1e" % kv for kv in errs.items())


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
