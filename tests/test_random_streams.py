"""The engine's independent streams (new_stream) and their state as bytes (stream_state, set_stream_state)."""
import numpy as np
import pytest

from minifp import engine


def test_a_new_stream_repeats_its_seed_and_leaves_the_global_generator_alone():
    engine.manual_seed(0)
    expected = engine.rng().random(3).tolist()
    engine.manual_seed(0)
    a = engine.new_stream(9).random(5)
    assert engine.rng().random(3).tolist() == expected
    assert engine.new_stream(9).random(5).tolist() == a.tolist()
    assert engine.new_stream(10).random(5).tolist() != a.tolist()
    with pytest.raises(ValueError, match="non-negative integer"):
        engine.new_stream(-1)


def test_stream_state_round_trips_every_kind_of_draw():
    s = engine.new_stream(3)
    s.integers(0, 7, size=3, dtype=np.int32)        # may leave a cached half word: part of the state
    state = engine.stream_state(s)
    assert state.dtype == np.uint8 and state.shape == (engine.STREAM_STATE_BYTES,)
    after = [s.standard_normal(4).tolist(), s.integers(0, 9, 5, dtype=np.int32).tolist()]
    engine.set_stream_state(s, state)
    assert [s.standard_normal(4).tolist(), s.integers(0, 9, 5, dtype=np.int32).tolist()] == after


@pytest.mark.parametrize("bad", [np.zeros(3, np.uint8), np.zeros(37, np.int64), np.full(37, 2, np.uint8)])
def test_set_stream_state_checks_before_changing_anything(bad):
    s = engine.new_stream(4)
    before = engine.stream_state(s).tolist()
    with pytest.raises(ValueError, match="37 uint8 values"):
        engine.set_stream_state(s, bad)
    assert engine.stream_state(s).tolist() == before
