"""Record real TensorFlow's GradientTape (nested, persistent, jacobian, batch_jacobian) and tf.norm on a table of
cases into tests/fixtures/tf/tapes.json; tests/tf/test_tapes_recorded.py runs the same case functions with minifp.tf
and compares.

    PYTHONPATH=<where TensorFlow 2.21 is installed> /work/torchenv/bin/python tools/record_tf_tapes.py

(recorded with tensorflow 2.21 on CPU; the fixture's "tensorflow" entry says which).

Each case is a function of the `tf` module returning {name: tensor or None} on fixed float32 inputs written here;
recorded per output: values, shape and dtype (None stays None). A case that raises is recorded as the exception's
type and message.
"""
import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tf" / "tapes.json"

X3 = [[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]]                          # a batch of 2 examples of 3 features
W = [[0.25, -0.5, 1.0, 0.125], [0.75, 0.5, -0.25, -1.0], [-0.375, 0.25, 0.5, 0.625]]
B = [0.1, -0.2, 0.3, 0.0]


def _nested(tf, f, x):
    """f(x) and its first and second derivatives by two nested tapes (x a variable)."""
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = f(x)
        d1 = t1.gradient(y, x)
    return {"y": y, "d1": d1, "d2": t2.gradient(d1, x)}


def _third(tf, f, x0):
    """f and three derivatives of a watched constant by three nested tapes."""
    x = tf.constant(x0)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = f(x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    return {"y": y, "d1": d1, "d2": d2, "d3": t3.gradient(d2, x)}


def cube_variable(tf):
    return _nested(tf, lambda x: x ** 3, tf.Variable(1.5))


def cube_product_vector(tf):
    return _nested(tf, lambda x: x * x * x, tf.Variable([0.5, -2.0, 3.0]))


def cube_third(tf):
    return _third(tf, lambda x: x * x * x, [0.5, -2.0, 3.0, 1.25])


def sin_third(tf):
    return _third(tf, tf.math.sin, [0.5, -2.0, 3.0, 1.25])


def tanh_third(tf):
    return _third(tf, tf.tanh, [0.5, -2.0, 0.0, 1.25])


def dense_second(tf):
    """d2/dx2 of sum(tanh(x @ W + b)): elementwise second derivatives of a Dense-style layer."""
    w, b = tf.constant(W), tf.constant(B)
    x = tf.Variable(X3)
    return _nested(tf, lambda x: tf.reduce_sum(tf.tanh(tf.matmul(x, w) + b)), x)


def input_gradient_regularisation(tf):
    """The guide's gradient of the norm of an input gradient, with respect to the layer's variables."""
    w, b = tf.Variable(W), tf.Variable(B)
    x = tf.constant(X3)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            t1.watch(x)
            y = tf.nn.relu(tf.matmul(x, w) + b)
            out = tf.reduce_sum(y ** 2)
        g1 = t1.gradient(out, x)
        g1_mag = tf.norm(g1)
    dw, db = t2.gradient(g1_mag, [w, b])
    return {"g1": g1, "g1_mag": g1_mag, "dw": dw, "db": db}


def jacobian_vector(tf):
    """The Jacobian of a vector function of a vector, and of a layer's output with respect to its kernel."""
    x = tf.Variable([0.5, -1.0, 2.0])
    w = tf.Variable(W)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.sigmoid(x) * x
        z = tf.tanh(tf.matmul(tf.reshape(x, [1, 3]), w))
    return {"y": y, "dy_dx": tape.jacobian(y, x), "dz_dw": tape.jacobian(z, w), "dz_dx": tape.jacobian(z, x)}


def hessian(tf):
    """The guide's Hessian: the jacobian of a gradient, taken on an outer tape."""
    x = tf.Variable([0.5, -1.0, 2.0])
    w = tf.constant(W)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = tf.reduce_sum(tf.tanh(tf.matmul(tf.reshape(x, [1, 3]), w)) ** 2)
        g = t1.gradient(y, x)
    return {"g": g, "h": t2.jacobian(g, x)}


def batch_jacobian_layer(tf):
    x = tf.constant(X3)
    w = tf.constant(W)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.tanh(tf.matmul(x, w))
    return {"y": y, "j": tape.batch_jacobian(y, x)}


def batch_jacobian_elementwise(tf):
    x = tf.constant(X3)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
    return {"j": tape.batch_jacobian(y, x), "full": tape.jacobian(y, x)}


def persistent_reuse(tf):
    x = tf.constant([1.5, -2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    return {"dz_dx": tape.gradient(z, x), "dy_dx": tape.gradient(y, x), "dz_dy": tape.gradient(z, y),
            "again": tape.gradient(z, x)}


def watch_accessed_false(tf):
    a, b = tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * a + b * b
    da, db = tape.gradient(y, [a, b])
    return {"da": da, "db": db, "watched": len(tape.watched_variables())}


def watched_variables(tf):
    """The variables a tape watched (not constants), kept after a non-persistent tape's gradient."""
    a, n = tf.Variable(1.0), tf.Variable(4.0, trainable=False)
    c = tf.constant(3.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([a, c, n])
        y = a * c + n * n
    before = tape.watched_variables()
    da, dc, dn = tape.gradient(y, [a, c, n])
    after = tape.watched_variables()
    return {"before": len(before), "after": len(after), "first": before[0], "second": before[1], "da": da, "dc": dc,
            "dn": dn}


def watched_variables_accessed(tf):
    """A default tape also lists the trainable variables read in its block (minifp: a known difference)."""
    a, b, n = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(4.0, trainable=False)
    with tf.GradientTape() as tape:
        y = a * b + n
    return {"n": len(tape.watched_variables())}


def stop_recording(tf):
    x = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
        with tape.stop_recording():
            z = x * x * x
        w = y + 1.0
    return {"dy": tape.gradient(y, x), "dz": tape.gradient(z, x), "dw": tape.gradient(w, x)}


def unconnected(tf):
    x, u = tf.Variable([1.0, 2.0]), tf.Variable([[3.0, 4.0, 5.0]])
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(x * x)
    zero = tf.UnconnectedGradients.ZERO
    return {"none": tape.gradient(y, u), "zero": tape.gradient(y, u, unconnected_gradients=zero),
            "zero_str": tape.gradient(y, [x, u], unconnected_gradients="zero")[1],
            "jac_none": tape.jacobian(x * 2.0, u), "jac_zero": tape.jacobian(x * 2.0, u, unconnected_gradients=zero)}


def variables_and_constants(tf):
    v = tf.Variable([[1.0, -2.0], [0.5, 4.0]])
    c = tf.constant([[3.0, 0.25], [-1.0, 2.0]])
    n = tf.constant([1.0, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(c)
        y = tf.reduce_sum(tf.matmul(v, c) * v) + tf.reduce_sum(n)
    dv, dc, dn = tape.gradient(y, [v, c, n])
    return {"dv": dv, "dc": dc, "dn": dn}


def output_gradients(tf):
    x = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        y = x * x
    return {"g": tape.gradient(y, x, output_gradients=tf.constant([1.0, 0.5, -2.0]))}


def error_twice(tf):
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    return {"g": tape.gradient(y, x)}


def error_batch_rank_target(tf):
    x = tf.constant(X3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x, axis=1)
    return {"j": tape.batch_jacobian(y, x)}


def error_batch_rank_source(tf):
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reshape(x, [2, 1]) * 2.0
    return {"j": tape.batch_jacobian(y, x)}


def error_batch_size(tf):
    x = tf.constant(X3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.matmul(tf.constant([[1.0, 1.0]]), x)
    return {"j": tape.batch_jacobian(y, x)}


def jacobian_not_watched(tf):
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = x * x
    return {"j": tape.jacobian(y, x)}


def error_watch_number(tf):
    with tf.GradientTape() as tape:
        tape.watch(3.0)
    return {}


TAPES = [cube_variable, cube_product_vector, cube_third, sin_third, tanh_third, dense_second,
         input_gradient_regularisation, jacobian_vector, hessian, batch_jacobian_layer, batch_jacobian_elementwise,
         persistent_reuse, watch_accessed_false, watched_variables,
         watched_variables_accessed, stop_recording, unconnected, variables_and_constants,
         output_gradients, error_twice, error_batch_rank_target, error_batch_rank_source, error_batch_size,
         jacobian_not_watched, error_watch_number]

NORM_X = [[3.0, -4.0, 0.5], [1.0, 2.0, -2.0]]
# tf.norm cases: (ord, axis, keepdims) on NORM_X, recording the norm and the gradient of its sum
NORMS = [("euclidean", None, None), ("euclidean", None, True), ("fro", (0, 1), None), (2, None, None),
         ("euclidean", 1, None), ("euclidean", 0, True), ("euclidean", -1, False), (1, None, None), (1, 0, None),
         (1, (0, 1), None), (1, (1, 0), True), (np.inf, None, None), (np.inf, 1, None), (np.inf, (0, 1), None),
         (np.inf, (-1, -2), None), (3, None, None), (3, 1, True), (0.5, 0, None), (2.5, [0, 1], None),
         ("fro", None, None), ("euclidean", [0, 1], None),
         # refused
         (0, None, None), (-1, 1, None), (3, (0, 1), None), ("nuc", (0, 1), None), (1, (0, 0), None),
         (1, (0, 1, 2), None), (2, 1.0, None)]


def norm_case(tf, ord, axis, keepdims):
    x = tf.Variable(NORM_X)
    with tf.GradientTape() as tape:
        n = tf.norm(x, ord=ord, axis=axis, keepdims=keepdims)
        s = tf.reduce_sum(n)
    return {"norm": n, "grad": tape.gradient(s, x)}


def norm_zero(tf):
    """The Euclidean norm of zeros and its gradient (0/0 in the chain rule: NaN), and of a single axis."""
    x = tf.Variable([[0.0, 0.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        n = tf.norm(x, axis=1)
    return {"norm": n, "grad": tape.gradient(n, x)}


def norm_name(ord, axis, keepdims):
    return f"norm_{ord}_{axis}_{keepdims}".replace(" ", "")


def run(fn, *args):
    """{output: {value, shape, dtype} or None} of a case, or {error, message}."""
    try:
        out = fn(*args)
    except Exception as e:          # noqa: BLE001  (any error is what is recorded)
        return {"error": type(e).__name__, "message": str(e)}
    return {k: encode(v) for k, v in out.items()}


def encode(v):
    if v is None or isinstance(v, int):
        return v
    a = np.asarray(v.numpy())
    return {"value": a.tolist(), "shape": list(a.shape), "dtype": v.dtype.name}


def main():
    import tensorflow as tf
    fixture = {"tensorflow": tf.__version__, "tapes": {fn.__name__: run(fn, tf) for fn in TAPES},
               "norms": {norm_name(*c): run(norm_case, tf, *c) for c in NORMS}}
    fixture["tapes"]["norm_zero"] = run(norm_zero, tf)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixture, indent=1, allow_nan=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
