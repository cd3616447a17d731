# TEST FIXTURE standing in for PyTorch (see tests/torch_fixture/README.md).
from torch import version
from torch import cuda

__version__ = version.__version__
