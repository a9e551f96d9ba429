"""Variable paths as Keras 3 makes them: the names of the scopes open where each variable is made (a Sequential's,
a subclassed model's, a wrapper's, keras.name_scope's), recorded from real Keras by tools/record_keras_paths.py."""
import json
import sys
from pathlib import Path

import pytest

import minifp.keras as keras

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_keras_paths import CASES  # noqa: E402

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "paths.json").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_paths_as_keras_makes_them(name):
    keras.backend.clear_session()
    assert CASES[name](keras) == FIXTURE["cases"][name]


def test_the_two_directions_of_a_bidirectional_layer_have_paths_of_their_own():
    keras.backend.clear_session()
    paths = CASES["recurrent"](keras)
    assert len(set(paths)) == len(paths)


@pytest.mark.parametrize("bad", ["a/b", 3])
def test_a_scope_name_must_be_a_string_without_a_slash(bad):
    kind, message = FIXTURE["errors"][repr(bad)]
    with pytest.raises(ValueError) as e:
        keras.name_scope(bad)
    assert (type(e.value).__name__, str(e.value)) == (kind, message)


def test_a_scope_closes_after_an_error_and_threads_keep_their_own():
    import threading
    keras.backend.clear_session()
    with pytest.raises(RuntimeError):
        with keras.name_scope("failed"):
            raise RuntimeError
    seen = {}

    def make():
        seen["thread"] = keras.Variable([0.0], name="t").path
    with keras.name_scope("main"):
        worker = threading.Thread(target=make)
        worker.start()
        worker.join()
        seen["main"] = keras.Variable([0.0], name="m").path
    assert seen == {"thread": "t", "main": "main/m"}
