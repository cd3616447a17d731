# TEST FIXTURE: the few torch.cuda functions tailor's verification calls.
import ctypes
import os

from torch import version as _version


def get_arch_list():
    return list(_version.arch_list)


def _library():
    return ctypes.CDLL(os.path.join(os.path.dirname(os.path.dirname(__file__)), "lib", "libtorch_cuda.so"))


def is_available():
    try:
        return _library() is not None and ctypes.CDLL("libcuda.so.1") is not None
    except OSError:
        return False


def _fixture_smoke():
    rc = _library().tailor_fixture_smoke()
    if rc != 0:
        raise RuntimeError("fixture GPU smoke test failed with code {}".format(rc))
