# A GPU smoke test of the built torch: a matrix product on the first GPU (or the test
# fixture's own kernel). Run by src/workflow/torch_build.cpp when the host has a GPU.
import torch
smoke = getattr(torch.cuda, "_fixture_smoke", None)
if smoke is not None:
    smoke()
else:
    x = torch.randn(256, 256, device="cuda")
    y = (x @ x).sum().item()
    torch.cuda.synchronize()
print("GPU smoke test: ok on", torch.cuda.get_device_name(0) if hasattr(torch.cuda, "get_device_name") else "GPU")
