# torchmcubes 0.1.0 (tatsy/torchmcubes): the CUDA kernels torchmcubes_module.mcubes_cuda (marching
# cubes) and grid_interp_cuda (trilinear sampling) against the package's own CPU kernels
# (mcubes_cpu, grid_interp_cpu) and plain-torch checks: on a sphere SDF (off-centre, non-cubic grid
# so an axis mix-up shows) every vertex lies where the trilinearly interpolated volume equals the
# threshold, the vertices lie on exactly the grid edges whose ends straddle the threshold, each
# mesh with the vertices of one edge merged is closed (V - E + F = 2), and the GPU triangles are
# the CPU triangles (matched by centroid, any vertex order). grid_interp against a plain-torch trilinear interpolation.
# Imported the normal way (`import torchmcubes`, which loads the top-level torchmcubes_module).
# Bindings relied on (cxx/mcubes.cpp): mcubes_cpu/mcubes_cuda(vol (Nz,Ny,Nx) float32 contiguous,
# float threshold) -> [verts (V,3) float32 as (x,y,z) = (index 2, 1, 0), faces (F,3) int32];
# grid_interp_cpu/cuda(vol (C,Nz,Ny,Nx), points (Np,3) as (x,y,z)) -> (Np,C).
# `--cpu` runs the references and (when the package imports here) the CPU kernels.
import os
import sys
import traceback

# this file's folder holds a file named like the package: keep it off the import path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import torch  # noqa: E402

NAME = "torchmcubes"
CPU_ONLY = "--cpu" in sys.argv
SHAPE = (28, 32, 36)  # (Nz, Ny, Nx)
CENTER = (17.3, 15.6, 13.2)  # (x, y, z)
RADIUS = 9.4


def sphere_sdf():
    z, y, x = torch.meshgrid(*[torch.arange(n, dtype=torch.float64) for n in SHAPE], indexing="ij")
    cx, cy, cz = CENTER
    return (((x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2).sqrt() - RADIUS).float().contiguous()


def trilinear(vol, pts):  # vol (C, Nz, Ny, Nx), pts (Np, 3) as (x, y, z) inside the grid; float64
    v = vol.double()
    p = pts.double()
    i0 = p.floor().long()
    f = p - i0
    C, Nz, Ny, Nx = v.shape
    x0, y0, z0 = i0[:, 0].clamp(0, Nx - 1), i0[:, 1].clamp(0, Ny - 1), i0[:, 2].clamp(0, Nz - 1)
    x1, y1, z1 = (x0 + 1).clamp(max=Nx - 1), (y0 + 1).clamp(max=Ny - 1), (z0 + 1).clamp(max=Nz - 1)
    fx, fy, fz = f[:, 0], f[:, 1], f[:, 2]
    out = 0
    for zz, wz in ((z0, 1 - fz), (z1, fz)):
        for yy, wy in ((y0, 1 - fy), (y1, fy)):
            for xx, wx in ((x0, 1 - fx), (x1, fx)):
                out = out + v[:, zz, yy, xx] * (wz * wy * wx)
    return out.T  # (Np, C)


def crossing_edges(vol, iso):  # grid edges whose two ends lie on different sides (val < iso)
    b = vol < iso
    return sum(int((b.narrow(d, 0, b.shape[d] - 1) != b.narrow(d, 1, b.shape[d] - 1)).sum())
               for d in range(3))


def edge_keys(v):
    """the grid edge each vertex lies on: two coordinates are whole numbers, the third is not.
    (Two cells interpolate a shared edge from opposite ends, so its vertex can differ in the last
    bit: the package's CPU kernel then keeps both copies. The edge is exact.)"""
    base = torch.floor(v.double())
    frac = v.double() - base
    axis = torch.where(frac.amax(1) > 0, frac.argmax(1), torch.full_like(frac[:, 0], 3, dtype=torch.long))
    b = base.long() + 1
    return ((b[:, 2] * 4096 + b[:, 1]) * 4096 + b[:, 0]) * 4 + axis


def mesh_checks(verts, faces, vol, iso):
    """plain-torch checks of one mesh: the volume at each vertex, unique vertices (by grid edge),
    the Euler characteristic of the mesh with the vertices of one edge merged (2: a closed sphere)."""
    used = verts[faces.long().flatten()]
    on_surface = (trilinear(vol[None], used)[:, 0] - iso).abs().max().item()
    keys, merged = torch.unique(edge_keys(used), return_inverse=True)
    f = merged.reshape(-1, 3)
    edges = torch.cat([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]).sort(1).values
    euler = keys.numel() - torch.unique(edges, dim=0).shape[0] + f.shape[0]
    return on_surface, keys.numel(), euler


def tri_match(va, fa, vb, fb):  # max vertex distance between matched triangles (any vertex order)
    ta = va[fa.long()].double()  # (F, 3, 3)
    tb = vb[fb.long()].double()
    if ta.shape != tb.shape:
        return float("inf")
    nn = torch.cdist(ta.mean(1), tb.mean(1)).argmin(1)
    if torch.unique(nn).numel() != nn.numel():
        return float("inf")
    tb = tb[nn]
    perms = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    d = torch.stack([(ta - tb[:, list(p)]).abs().amax((1, 2)) for p in perms]).amin(0)
    return d.max().item()


def main():
    vol = sphere_sdf()
    iso = 0.0
    n_cross = crossing_edges(vol, iso)
    # reference self-checks: trilinear is exact for a linear function; the SDF is a sphere
    torch.manual_seed(0)
    lin = torch.zeros(1, *SHAPE)
    z, y, x = torch.meshgrid(*[torch.arange(n, dtype=torch.float32) for n in SHAPE], indexing="ij")
    lin[0] = 0.5 * x - 0.25 * y + 2.0 * z + 1.0
    pts = torch.rand(500, 3) * torch.tensor([SHAPE[2] - 1, SHAPE[1] - 1, SHAPE[0] - 1.0])
    exact = 0.5 * pts[:, 0] - 0.25 * pts[:, 1] + 2.0 * pts[:, 2] + 1.0
    assert (trilinear(lin, pts)[:, 0] - exact.double()).abs().max() < 1e-4
    assert n_cross > 1000 and abs(vol[13, 16, 17].item() - (0.29 ** 0.5 - RADIUS)) < 1e-5
    assert abs(vol[13, 16, 27].item() - (94.29 ** 0.5 - RADIUS)) < 1e-5  # x is the last index
    msgs = ["crossing_edges %d" % n_cross]
    try:
        import torchmcubes
    except ImportError as e:
        if not CPU_ONLY:
            raise
        return True, "reference (cpu) ok %s; cpu kernel not checked (not importable: %s)" % (msgs[0], e)

    # the CPU kernels
    vc, fc = torchmcubes.marching_cubes(vol, iso)
    on_c, uniq_c, euler_c = mesh_checks(vc, fc, vol, iso)
    F = fc.shape[0]
    feat = torch.randn(3, *SHAPE)
    gi_c = torchmcubes.grid_interp(feat, pts.contiguous())
    e_gi_c = (gi_c.double() - trilinear(feat, pts)).abs().max().item()
    ok = on_c < 1e-4 and uniq_c == n_cross and euler_c == 2 and e_gi_c < 1e-5
    msgs.append("cpu: V %d (unique edges %d) F %d euler %d on_surface %.1e grid_interp %.1e"
                % (vc.shape[0], uniq_c, F, euler_c, on_c, e_gi_c))
    if CPU_ONLY:
        return ok, "reference (cpu) " + " ".join(msgs)

    vg, fg = torchmcubes.marching_cubes(vol.cuda(), iso)
    vg, fg = vg.cpu(), fg.cpu()
    on_g, uniq_g, euler_g = mesh_checks(vg, fg, vol, iso)
    match = tri_match(vg, fg, vc, fc)
    gi_g = torchmcubes.grid_interp(feat.cuda(), pts.cuda().contiguous()).cpu()
    e_gi_g = (gi_g.double() - trilinear(feat, pts)).abs().max().item()
    ok_g = (on_g < 1e-4 and uniq_g == n_cross and euler_g == 2 and fg.shape[0] == F and match < 1e-4
            and e_gi_g < 1e-5)
    msgs.append("cuda: F %d unique_edges %d euler %d on_surface %.1e tri_match_vs_cpu %.1e grid_interp %.1e"
                % (fg.shape[0], uniq_g, euler_g, on_g, match, e_gi_g))
    return ok and ok_g, " ".join(msgs)


if __name__ == "__main__":
    try:
        ok, msg = main()
    except Exception as e:  # an exception is a failure
        traceback.print_exc()
        ok, msg = False, "exception %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print("%s %s %s" % ("PASS" if ok else "FAIL", NAME, msg))
    sys.exit(0 if ok else 1)
