# sam2 1.1.0 (facebookresearch/sam2): the CUDA kernel sam2._C.get_connected_componnets (sic:
# the binding's spelling), 8-connected component labelling and per-pixel component areas of
# (N, 1, H, W) uint8 masks, used by sam2.utils.misc.fill_holes_in_mask_scores, against a plain-torch
# labelling (label propagation by 3x3 max pooling inside the foreground until it stops changing)
# compared up to renaming of labels, and areas from torch.bincount. The package has no CPU kernel.
# Loaded by its file (sam2/_C*.so under the path) with importlib.util.spec_from_file_location:
# `import sam2` needs hydra-core and iopath, which the GPU machine lacks.
# Binding relied on (sam2/csrc/connected_components.cu): get_connected_componnets(uint8 CUDA
# (N,1,H,W), H and W even) -> [labels int32 (0 background, else root index + 1), counts int32].
# `--cpu` runs only the reference and its self-checks.
import glob
import importlib.util
import os
import sys
import traceback

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NAME = "sam2"
CPU_ONLY = "--cpu" in sys.argv


def cc_ref(mask):  # (N, 1, H, W) bool -> int64 labels (0 background), 8-connectivity
    N, _, H, W = mask.shape
    ids = torch.arange(1, H * W + 1, dtype=torch.float64).reshape(1, 1, H, W).expand(N, 1, H, W)
    lab = torch.where(mask, ids, torch.zeros(()).double())
    while True:
        nxt = torch.where(mask, F.max_pool2d(lab, 3, stride=1, padding=1), lab)
        if torch.equal(nxt, lab):
            return lab.long()
        lab = nxt


def areas_ref(lab):
    out = torch.zeros_like(lab)
    for n in range(lab.shape[0]):
        cnt = torch.bincount(lab[n].flatten())
        out[n] = torch.where(lab[n] > 0, cnt[lab[n]], 0)
    return out


def same_partition(a, b, mask):  # labels equal up to a bijective renaming on the foreground
    bad = 0
    for n in range(a.shape[0]):
        fa, fb = a[n][mask[n]], b[n][mask[n]]
        pairs = torch.unique(torch.stack([fa, fb]), dim=1).shape[1]
        ua, ub = torch.unique(fa).numel(), torch.unique(fb).numel()
        bad += int(not (pairs == ua == ub)) + int((b[n][~mask[n]] != 0).sum())
    return bad


def masks():
    torch.manual_seed(0)
    N, H, W = 4, 64, 96
    noise = torch.randn(N, 1, H // 4, W // 4)
    smooth = F.interpolate(noise, size=(H, W), mode="bilinear", align_corners=False)
    m = smooth > 0.6  # blobs of many sizes
    m[1] = torch.rand(1, H, W) > 0.55  # salt and pepper: many small components, diagonal contacts
    m[2] = False
    idx = torch.arange(H)[:, None] - torch.arange(W)[None, :]
    m[2, 0] = (idx % 7 == 0)  # diagonal lines: each one component only under 8-connectivity
    m[3] = True
    m[3, 0, :, 40] = False  # two halves
    return m


def main():
    m = masks()
    ref = cc_ref(m)
    # self-checks: a diagonal line is one component (8-connectivity), the halves are two
    lines = ref[2][m[2]]
    assert torch.unique(lines).numel() == len({i for i in range(-95, 64) if i % 7 == 0})
    assert torch.unique(ref[3][m[3]]).numel() == 2
    area = areas_ref(ref)
    assert int(area[3, 0, 0, 0]) == 64 * 40 and int(area[3, 0, 0, 95]) == 64 * 55
    ncomp = [torch.unique(ref[n][m[n]]).numel() for n in range(m.shape[0])]
    if CPU_ONLY:
        return True, "reference (cpu) components %s (no cpu kernel in the package)" % ncomp
    ext = load_ext()
    lab, cnt = ext.get_connected_componnets(m.to(torch.uint8).cuda().contiguous())
    ok_types = lab.dtype == torch.int32 and cnt.dtype == torch.int32 and lab.shape == m.shape
    lab, cnt = lab.cpu().long(), cnt.cpu().long()
    bad = same_partition(ref, lab, m)
    e_area = int((cnt != area).sum())
    ok = ok_types and bad == 0 and e_area == 0
    return ok, "components %s partition_mismatch %d area_mismatch %d" % (ncomp, bad, e_area)


def load_ext():
    so = [f for p in sys.path for f in glob.glob(os.path.join(p or ".", "sam2", "_C*.so"))]
    if not so:
        raise RuntimeError("sam2/_C*.so not found on the path")
    spec = importlib.util.spec_from_file_location("_C", so[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
