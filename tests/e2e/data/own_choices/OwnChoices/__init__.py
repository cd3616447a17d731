from OwnChoices._kernels import count  # noqa: F401
