"""minifp's random numbers: one seeded generator (initialisers, dropout, shuffling, stochastic rounding) and
the streams of integer seeds. Both are values that can be saved and restored (get_state / set_state)."""
import numbers
import threading

import numpy as np

_generator = [np.random.default_rng(0)]
_streams: dict = {}         # int seed -> its Generator, which advances from call to call
# Guards _streams: threads first naming one seed together must share one stream, not start one each (and draw
# the same numbers). Drawing needs no lock of ours: a Generator holds its bit generator's lock for each draw.
_streams_lock = threading.Lock()


def _seed(seed, what="seed"):
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {seed!r}")
    return int(seed)


def manual_seed(seed):
    """Seed minifp's generator (weight initialisation, dropout, shuffling) and restart every integer-seed stream."""
    _generator[0] = np.random.default_rng(_seed(seed))
    with _streams_lock:
        _streams.clear()


def rng():
    """minifp's numpy Generator."""
    return _generator[0]


def generator(seed=None):
    """The Generator that `seed` names: None is minifp's own, a Generator is itself, and an integer is the
    stream of that seed, started by the first call that names it and advanced by every later one, so that
    a loop passing the same integer draws new numbers each time, as a Generator would."""
    if seed is None:
        return rng()
    if isinstance(seed, np.random.Generator):
        return seed
    seed = _seed(seed, "rng")
    with _streams_lock:
        stream = _streams.get(seed)
        if stream is None:
            stream = _streams[seed] = np.random.default_rng(seed)
    return stream


def get_state():
    """minifp's random state as plain data (JSON-ready): the generator's and every stream's bit-generator state."""
    with _streams_lock:
        streams = dict(_streams)
    return {"generator": _generator[0].bit_generator.state,
            "streams": {str(k): g.bit_generator.state for k, g in streams.items()}}


def set_state(state):
    """Restore what get_state() returned; checks it whole before changing anything."""
    try:
        main = _restored(state["generator"])
        streams = {_seed(int(k), "stream seed"): _restored(v) for k, v in state["streams"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"state is not a minifp random state (a dict of 'generator' and 'streams' as "
                         f"get_state() returns): {e}") from None
    _generator[0] = main
    with _streams_lock:
        _streams.clear()
        _streams.update(streams)


def _restored(bit_state):
    g = np.random.default_rng()
    if bit_state.get("bit_generator") != type(g.bit_generator).__name__:
        raise ValueError(f"bit generator {bit_state.get('bit_generator')!r} is not {type(g.bit_generator).__name__}")
    g.bit_generator.state = bit_state
    return g


def new_stream(seed):
    """A Generator of its own, seeded with the non-negative integer `seed`: independent of minifp's generator and
    of the integer-seed streams (the same seed gives the same numbers), for a face's generator objects."""
    return np.random.default_rng(_seed(seed))


STREAM_STATE_BYTES = 37     # PCG64's 128-bit state and increment, the cached-half flag and the cached 32 bits


def stream_state(stream):
    """A stream's whole state as STREAM_STATE_BYTES uint8 values (what set_stream_state takes back)."""
    s = stream.bit_generator.state
    raw = (s["state"]["state"].to_bytes(16, "little") + s["state"]["inc"].to_bytes(16, "little")
           + bytes([int(s["has_uint32"])]) + int(s["uinteger"]).to_bytes(4, "little"))
    return np.frombuffer(raw, dtype=np.uint8).copy()


def set_stream_state(stream, data):
    """Put back into `stream` the state stream_state() gave (checked: STREAM_STATE_BYTES uint8 values)."""
    data = np.asarray(data)
    if data.dtype != np.uint8 or data.shape != (STREAM_STATE_BYTES,) or data[32] > 1:
        raise ValueError(f"a stream's state is {STREAM_STATE_BYTES} uint8 values as stream_state() gives, got "
                         f"{data.dtype} of shape {data.shape}")
    raw = data.tobytes()
    stream.bit_generator.state = {"bit_generator": "PCG64",
                                  "state": {"state": int.from_bytes(raw[:16], "little"),
                                            "inc": int.from_bytes(raw[16:32], "little")},
                                  "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:], "little")}
