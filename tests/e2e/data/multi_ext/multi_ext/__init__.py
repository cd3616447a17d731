"""tailor e2e fixture: three extension modules (_a, _b with CUDA; _c host only)."""
