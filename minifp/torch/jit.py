"""torch.jit: script and trace return what they are given (minifp has no compiler; the Python runs as it is)."""
__all__ = ["script", "trace", "ignore", "unused", "export", "is_scripting", "is_tracing"]


def script(obj=None, *args, **kwargs):
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    return func


def ignore(fn=None, **kwargs):
    return fn if fn is not None else (lambda f: f)


unused = export = ignore


def is_scripting():
    return False


def is_tracing():
    return False
