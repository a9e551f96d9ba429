"""The faces stand on the engine's public API alone: they import no private module of the engine and no underscore
name from it, and touch no underscore attribute that an engine class defines (read from their sources)."""
import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import minifp
from minifp import engine

ROOT = Path(minifp.__file__).parent
FACES = ("torch", "keras", "tf")
SOURCES = sorted(p for face in FACES for p in (ROOT / face).rglob("*.py"))


def _engine_private_attributes():
    """The underscore attributes that the engine's public classes define (slots, methods, class attributes)."""
    names = set()
    for value in vars(engine).values():
        if inspect.isclass(value) and value.__module__.startswith("minifp.") and \
                value.__module__.split(".")[1] not in FACES:
            for cls in value.__mro__:
                if cls.__module__.startswith("minifp."):
                    names |= {n for n in vars(cls) if n.startswith("_") and not n.startswith("__")}
                    names |= {n for n in getattr(cls, "__slots__", ()) if n.startswith("_") and not n.startswith("__")}
    return names


PRIVATE = _engine_private_attributes()


def _module_of(path, node):
    """The absolute module an ImportFrom names."""
    if not node.level:
        return node.module or ""
    package = ["minifp", *path.relative_to(ROOT).parts[:-1]]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _violations(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            parts = _module_of(path, node).split(".")
            names = [a.name for a in node.names]
            if parts[0] != "minifp" or len(parts) > 1 and parts[1] in FACES:
                continue            # another package, or the faces' own modules
            if any(p.startswith("_") for p in parts[1:]):
                yield node.lineno, f"imports from the engine's private module {'.'.join(parts)}"
            elif any(n.startswith("_") for n in names):
                yield node.lineno, f"imports an underscore name from {'.'.join(parts)}: {names}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "minifp" and len(parts) > 1 and parts[1] not in FACES and \
                        any(p.startswith("_") for p in parts[1:]):
                    yield node.lineno, f"imports the engine's private module {alias.name}"
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE:
            yield node.lineno, f"touches .{node.attr}, an underscore attribute of an engine class"


def test_the_rule_knows_the_engines_private_attributes():
    assert {"_data", "_node", "_wrap", "_like", "_float32"} <= PRIVATE


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_faces_use_the_public_engine_api_only(path):
    found = [f"{path.relative_to(ROOT)}:{line}: {what}" for line, what in _violations(path)]
    assert not found, "\n".join(found)


def test_the_rule_catches_what_it_forbids(tmp_path):
    face = ROOT / "torch" / "_probe_for_the_rule.py"       # a path inside a face, for the relative imports
    source = ("from .._tensor import Tensor\nfrom ..engine import _private\nimport minifp._rounding\n"
              "def f(t):\n    return t._data, t._node, t.shape\n")
    tree_path = tmp_path / "probe.py"
    tree_path.write_text(source)
    found = list(_violations_of(source, face))
    assert [line for line, _ in found] == [1, 2, 3, 5, 5]


def _violations_of(source, as_path):
    """_violations of `source` as if it stood at `as_path`."""
    class Fake(type(as_path)):
        def read_text(self):
            return source
    return _violations(Fake(as_path))


def test_a_function_node_passes_its_outputs_gradients_to_backward_once():
    seen = []

    def backward(g_sum, g_twice):
        seen.append((g_sum, g_twice))
        return engine.tensor(np.full(2, g_sum.float32() * np.float32(3.0), np.float32)), None

    w = engine.tensor([1.0, 2.0], dtype="bfloat16", requires_grad=True)
    with engine.no_grad():
        total, twice = engine.apply("sum", w), engine.apply("mul", w, 2.0)
    engine.function_node([total, twice], [w, 7], backward)
    assert total.requires_grad and engine.made_by(twice) == "function"
    engine.backward(engine.apply("mul", total, 1.0 / 3.0))
    [(g_sum, g_twice)] = seen              # once, and None for the output no gradient reached
    # the gradient of a bfloat16 output is bfloat16: 1/3 rounded there
    assert g_twice is None and g_sum.fmt is engine.bfloat16 and g_sum.float32() == np.float32(0.333984375)
    # backward's float32 gradient, 1.00195..., rounded into w's format (bfloat16) as any gradient is
    want = engine.round_to(np.full(2, np.float32(0.333984375) * np.float32(3.0), np.float32), engine.bfloat16)
    assert np.array_equal(engine.storage(w.grad), want)
