"""The few pytest features test_ops.py uses, for machines without pytest (see its docstring)."""
import contextlib
import re


class _Mark:
    @staticmethod
    def parametrize(name, values):
        def decorate(fn):
            fn._params = [(name, list(values))] + getattr(fn, "_params", [])
            return fn
        return decorate


class _Pytest:
    mark = _Mark()

    class SkipException(Exception):
        pass

    def skip(self, reason):
        raise self.SkipException(reason)

    @contextlib.contextmanager
    def raises(self, exc, match=None):
        try:
            yield
        except exc as e:
            if match is not None and not re.search(match, str(e)):
                raise AssertionError(f"{exc.__name__} raised, but {match!r} not in {str(e)!r}")
            return
        raise AssertionError(f"{exc.__name__} not raised")


pytest = _Pytest()
