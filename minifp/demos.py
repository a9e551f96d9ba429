"""Demos of what half precision does, each printing the numbers it measured (`minifp demo NAME`).

Each demo returns (text, figure): text to print, and a function that draws the figure
into a file (used with --plot FILE; needs matplotlib).
"""
from __future__ import annotations

import math

import numpy as np

import minifp as mf

from ._digits import digits_mlp
from .numerics import watch

__all__ = ["DEMOS", "ACCUMULATORS", "FP8_RUNS", "swamping_threshold", "count_up", "beam_data", "beam_regression",
           "loss_scaling_runs", "activation_grad_histogram",
           "digits_sgd", "pure_bf16_losses", "transformer_overflow", "accumulation_errors", "higham_bounds",
           "fp8_training", "h100_differences"]
COMPARE = ("float32", "float16", "bfloat16")


# -- overflow and underflow (the TensorFlow guide's examples) ----------------------------------------


def _square(title, value, note):
    lines = [title, f"  x = {value!r}; y = x ** 2, computed in each format by minifp:"]
    exact = value * value
    for name in COMPARE:
        y = (mf.tensor([value], dtype=name) ** 2).item()
        lines.append(f"  {name:9s} y = {y!r:24s} relative error {abs(y - exact) / exact:.2g}")
    lines.append(note)
    return "\n".join(lines), None


def overflow():
    """256**2 overflows float16 (max 65504) but not bfloat16, which has float32's exponent range."""
    return _square("Overflow (the TensorFlow mixed-precision guide's example):", 256.0,
                   f"  float16 tops out at {mf.finfo('float16').max:g}, so 65536 rounds to inf; bfloat16 keeps "
                   f"float32's 8\n  exponent bits (max {mf.finfo('bfloat16').max:.4g}) and holds 65536 exactly.")


def underflow():
    """1e-5**2 flushes to zero in float16 (smallest subnormal 2**-24) but not in bfloat16."""
    return _square("Underflow (the TensorFlow mixed-precision guide's example):", 1e-5,
                   f"  float16's smallest subnormal is {mf.finfo('float16').smallest_subnormal:.4g} (2**-24), so "
                   f"1e-10 rounds\n  to 0; bfloat16 reaches down to {mf.finfo('bfloat16').tiny:.4g} but keeps only "
                   f"8 significant bits.")


# -- swamping -----------------------------------------------------------------------------------------


def swamping_threshold(fmt, w):
    """The largest update ratio r = 2**-k with w + w*r == w in `fmt` (both stored in fmt)."""
    wt = mf.tensor([w], dtype=fmt)
    for k in range(1, 60):
        if (wt + mf.tensor([wt.item() * 2.0**-k], dtype=fmt)).item() == wt.item():
            return 2.0**-k
    return None


def count_up(fmt, limit=10**6):
    """Add 1 to a zero of `fmt` until the sum stops changing; return where it stopped."""
    total = mf.tensor([0.0], dtype=fmt)
    for _ in range(limit):
        nxt = total + 1
        if nxt.item() == total.item():
            return total.item()
        total = nxt
    return total.item()


def swamping():
    """w + u == w once u is small enough: the update is lost (swamped)."""
    lines = ["Swamping: an update u smaller than half an ulp of the weight w leaves w unchanged.",
             f"  {'format':9s} {'w':>8s}  largest swamped u/w   1 + 1 + ... stops at"]
    data = {}
    for name in ("float16", "bfloat16"):
        stops = count_up(name)
        for w in (1.0, 0.1, 1000.0):
            r = swamping_threshold(name, w)
            data.setdefault(name, []).append((w, r))
            lines.append(f"  {name:9s} {w:8g}  2**{int(np.log2(r)):<16d}  {stops:g}")
    exps = range(mf.float16.emin, 16)
    same = all(swamping_threshold("float16", 2.0**e) == 2.0**-11 for e in exps)
    lines.append(f"  For every float16 weight 2**e, e = {exps.start}..{exps.stop - 1}: u/w <= 2**-11 is swamped: {same}.")
    lines.append("  float32 master weights keep such updates: this is why mixed precision keeps them.")

    def figure(path):
        from .plots import plot_swamping
        plot_swamping(path)
    return "\n".join(lines), figure


# -- the gradient histogram ---------------------------------------------------------------------------


def gradient_histogram(steps=20, seed=0):
    """Activation-gradient histogram of the digits MLP (float32 training, last `steps` steps watched)."""
    (x, y), _ = mf.datasets.load_digits()
    mf.manual_seed(seed)
    model = digits_mlp("float32")
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=32, epochs=5, verbose=0)
    with watch(model, histograms=True) as report:
        for b in range(steps):
            model.train_on_batch(x[b * 32:(b + 1) * 32], y[b * 32:(b + 1) * 32])
    total = mf.numerics.Histogram()
    for (layer, kind), h in report.histograms.items():
        if kind == "activation_grad":
            total.counts += h.counts
            total.zeros += h.zeros
    return total


def histogram():
    """How much of the activation gradients float16 flushes to zero, by loss scale (and bfloat16)."""
    h = gradient_histogram()
    lines = ["Activation gradients of the digits MLP (Micikevicius et al. 2018, Figure 3):",
             f"  {h.total} values; the share that rounding would flush to zero:"]
    for scale in (1, 8, 1024, 32768):
        lines.append(f"  float16,  loss scale {scale:>5d}: {h.share_flushed(mf.float16, scale):7.2%}   "
                     f"(overflow {h.share_overflow(mf.float16, scale):.2%})")
    lines.append(f"  bfloat16, loss scale     1: {h.share_flushed(mf.bfloat16):7.2%}")

    def figure(path):
        from .plots import plot_histogram
        plot_histogram(h, mf.float16, scale=1024, path=path)
    return "\n".join(lines), figure


# -- loss scaling ---------------------------------------------------------------------------------------


def beam_data(n, seed, noise=1e-5):
    """n load cases of a simply supported steel beam (1 m span, 40 mm square section, E = 200 GPa): point loads
    in kN (standard normal, up or down) at 16 stations, and the deflections in metres (~1 mm) at 64 gauges,
    computed by Euler-Bernoulli theory and read with `noise` metres (10 um) of gauge noise."""
    rng = np.random.default_rng(seed)
    span, young, inertia = 1.0, 200e9, 0.04**4 / 12
    x = (np.arange(64) + 0.5) / 64 * span
    a = (np.arange(16) + 0.5) / 16 * span
    X, A = np.meshgrid(x, a)                       # influence of a unit load at a on the deflection at x
    B = span - A
    flexibility = np.where(X <= A, B * X * (span**2 - B**2 - X**2),
                           A * (span - X) * (span**2 - A**2 - (span - X)**2)) / (6 * span * young * inertia)
    loads = rng.standard_normal((n, 16))
    deflections = loads * 1e3 @ flexibility + noise * rng.standard_normal((n, 64))
    return loads.astype(np.float32), deflections.astype(np.float32)


def beam_regression(dtype=None, scaled=False, epochs=25, seed=0, batch_size=256, lr=1.0):
    """Learn the beam's flexibility matrix from measured load cases: nn.Linear(16, 64) with PyTorch's default init,
    SGD with momentum, nn.MSELoss (mean) on the deflections in metres, on the PyTorch face.

    Nothing is scaled by hand: the deflections are ~1e-3 m, and the mean over 256 x 64 = 16384 numbers makes
    dL/dy = 2 (y - t) / 16384, which falls below float16's smallest subnormal 2**-24 once the fit is better than
    ~0.2 mm, so under float16 autocast the output gradients flush to zero and training stalls.
    dtype: None (float32) or the autocast dtype (torch.float16, torch.bfloat16); scaled: use torch.amp.GradScaler
    (dynamic, starting at 2**16). Returns (test RMSE in metres per epoch, loss scale per step, a monitor report with
    histograms of the last step).
    """
    import warnings

    from . import torch
    x, w = beam_data(4096, 100)
    xt, wt = beam_data(1024, 101)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    rmse, scales = [], []
    with warnings.catch_warnings():             # "no GPU here, cuda is emulated": said once, not news here
        warnings.simplefilter("ignore")
        model = torch.nn.Linear(16, 64).to("cuda")
        xt, wt = torch.tensor(xt).to("cuda"), torch.tensor(wt).to("cuda")
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        scaler = torch.amp.GradScaler("cuda", enabled=scaled)
        loss_fn = torch.nn.MSELoss()
        autocast = dict(device_type="cuda", dtype=dtype or torch.float16, enabled=dtype is not None)
        for epoch in range(epochs):
            order = rng.permutation(len(x))
            for b in range(0, len(x), batch_size):
                last = epoch == epochs - 1 and b + batch_size >= len(x)
                i = order[b:b + batch_size]
                xb, wb = torch.tensor(x[i]).to("cuda"), torch.tensor(w[i]).to("cuda")
                with watch(model, histograms=True) if last else _nothing() as report:
                    with torch.autocast(**autocast):
                        loss = loss_fn(model(xb), wb)
                    opt.zero_grad()
                    scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                scales.append(scaler.get_scale() if scaled else 1.0)
            with torch.no_grad(), torch.autocast(**autocast):
                rmse.append(math.sqrt(float(loss_fn(model(xt), wt).item())))
    return rmse, scales, report


def activation_grad_histogram(report, layer=None):
    """The log2 histogram of the activation gradients in a report kept with histograms=True (of one layer's
    output, or of all)."""
    total = mf.numerics.Histogram()
    for (name, kind), h in report.histograms.items():
        if kind == "activation_grad" and layer in (None, name):
            total.counts += h.counts
            total.powers += h.powers
            total.zeros += h.zeros
    return total


def loss_scaling_runs(seed=0, epochs=25):
    """The four runs of the loss-scaling demo: {name: beam_regression(...)}."""
    from . import torch
    runs = {"float32": (None, False), "float16, no scaling": (torch.float16, False),
            "float16, GradScaler": (torch.float16, True), "bfloat16, no scaling": (torch.bfloat16, False)}
    return {name: beam_regression(*args, epochs=epochs, seed=seed) for name, args in runs.items()}


def loss_scaling():
    """float16 training stalls on an MSE loss whose gradients underflow by themselves; GradScaler fixes it."""
    results = loss_scaling_runs()
    h32 = activation_grad_histogram(results["float32"][2], "Linear")
    lines = ["Loss scaling: fitting a steel beam's deflections (metres, ~1 mm; gauges read to 10 um) to its loads with",
             "nn.Linear(16, 64), SGD and nn.MSELoss, batch 256: dL/dy = 2 (y - t) / (256 * 64), ~1e-9 at the fit.",
             f"  {'run':22s} {'test RMSE':>10s}   {'gradient underflows (last step)':s}"]
    for name, (rmse, _, report) in results.items():
        flushed = report.total("underflow", "backward")
        lines.append(f"  {name:22s} {rmse[-1] * 1e6:7.1f} um   {flushed:5d} of the 256 x 64 output gradients")
    lines.append(f"  float32's output gradients (last step): float16 would flush "
                 f"{h32.share_flushed(mf.float16):.1%} of them; times 2**16, {h32.share_flushed(mf.float16, 2**16):.1%}")
    lines.append(f"  GradScaler: started at 2**16, ended at {results['float16, GradScaler'][1][-1]:g}")

    def figure(path):
        from .plots import plot_training_curves
        plot_training_curves({k: [r * 1e6 for r in v[0]] for k, v in results.items()}, path,
                             ylabel="test RMSE (um)", logy=True)
    return "\n".join(lines), figure


# -- where float16 overflows in a transformer -------------------------------------------------------------


def transformer_overflow():
    """Attention logits, softmax without max subtraction, layer-norm variance: the monitor names each overflow."""
    from . import _transformer
    lines = ["Where float16 overflows in a transformer (one forward pass of a tiny pre-norm block, monitor on):"]
    runs = {}
    for case, (_, mode, note) in _transformer.CASES.items():
        naive, _ = _transformer.run_case(case, _transformer.NAIVE)
        fixed, _ = _transformer.run_case(case, _transformer.FIXED)
        where = "under autocast(float16)" if mode == "autocast" else "in pure float16 (model.half())"
        lines += [f"  {case} ({where}): {note}",
                  f"    naive: first overflow: {naive.first_overflow}",
                  f"    fixed: {fixed.total('overflow')} overflows, {fixed.total('nan')} NaNs"]
        runs[f"{case}: {where}"] = {"naive": _transformer.layer_maxima(naive), "fixed": _transformer.layer_maxima(fixed)}
    lines.append("  Fixes: scale q by 1/sqrt(d) before q @ k^T; subtract the max before exp (nn.Softmax does); "
                 "layer-norm\n  statistics in float32 (nn.LayerNorm does, and autocast runs it in float32).")

    def figure(path):
        from .plots import plot_layer_maxima
        plot_layer_maxima(runs, path=path)
    return "\n".join(lines), figure


# -- master weights ------------------------------------------------------------------------------------


def digits_sgd(policy, update_rounding="nearest", epochs=5, lr=3e-4, seed=0):
    """Training losses per epoch of the digits MLP under a Keras policy, by plain SGD with this update rounding."""
    from . import keras
    (x, y), _ = mf.datasets.load_digits()
    mf.manual_seed(seed)
    model = digits_mlp(policy)
    model.compile(keras.optimizers.SGD(learning_rate=lr, update_rounding=update_rounding),
                  "sparse_categorical_crossentropy")
    return model.fit(x, y, batch_size=32, epochs=epochs, verbose=0).history["loss"]


def master_weights(epochs=5, lr=3e-4):
    """Pure float16/bfloat16 weights stall at a small learning rate; float32 master weights keep learning, and
    so do pure bfloat16 weights updated with stochastic rounding or Kahan summation."""
    lines = [f"Master weights: SGD(lr={lr:g}) on the digits MLP for {epochs} epochs.",
             f"  {'policy':16s} {'weights':>8s} {'update':>10s} {'first loss':>11s} {'last loss':>10s} {'change':>9s}"]
    curves = {}
    runs = [(p, "nearest") for p in ("mixed_float16", "float16", "mixed_bfloat16", "bfloat16")]
    for policy, rounding in runs + [("bfloat16", "stochastic"), ("bfloat16", "kahan")]:
        loss = digits_sgd(policy, rounding, epochs, lr)
        curves[policy if rounding == "nearest" else f"{policy}, {rounding}"] = loss
        weights = "float32" if policy.startswith("mixed_") else policy      # the policy's variable dtype
        lines.append(f"  {policy:16s} {weights:>8s} {rounding:>10s} {loss[0]:11.4f} {loss[-1]:10.4f} "
                     f"{loss[-1] - loss[0]:9.4f}")
    lines.append("  Updates smaller than half an ulp of a half-precision weight are lost; float32 keeps them, and so")
    lines.append("  do stochastic rounding (unbiased) and Kahan summation (a compensation buffer) in bfloat16 itself.")

    def figure(path):
        from .plots import plot_training_curves
        plot_training_curves(curves, path, ylabel="training loss")
    return "\n".join(lines), figure


PURE_BF16 = (("float32 master weights", "mixed_bfloat16", "nearest"), ("bfloat16, nearest", "bfloat16", "nearest"),
             ("bfloat16, stochastic", "bfloat16", "stochastic"), ("bfloat16, kahan", "bfloat16", "kahan"))


def pure_bf16_losses(epochs=20, lr=3e-3, seed=0):
    """{run name: training loss per epoch} of the digits MLP for each entry of PURE_BF16 (SGD, same seed)."""
    return {name: digits_sgd(policy, rounding, epochs, lr, seed) for name, policy, rounding in PURE_BF16}


def pure_bf16(epochs=20, lr=3e-3):
    """Pure bfloat16 weights: nearest rounding stalls; stochastic rounding and Kahan summation train like float32
    master weights (Zamirai et al. 2020)."""
    curves = pure_bf16_losses(epochs, lr)
    master = curves["float32 master weights"]
    lines = [f"Pure bfloat16 weights: SGD(lr={lr:g}, update_rounding=...) on the digits MLP for {epochs} epochs.",
             f"  {'run':24s} {'first loss':>11s} {'last loss':>10s} {'change':>9s} {'vs master':>10s}"]
    for name, loss in curves.items():
        change = loss[-1] - loss[0]
        lines.append(f"  {name:24s} {loss[0]:11.4f} {loss[-1]:10.4f} {change:9.4f} "
                     f"{change / (master[-1] - master[0]):10.1%}")
    lines.append("  keras.optimizers.SGD(..., update_rounding=\"kahan\") or torch.optim.SGD(..., "
                 "update_rounding=\"stochastic\").")

    def figure(path):
        from .plots import plot_training_curves
        plot_training_curves(curves, path, ylabel="training loss")
    return "\n".join(lines), figure


# -- accumulation ----------------------------------------------------------------------------------------


# minifp.accumulate's arguments for each accumulator the demo compares
ACCUMULATORS = {"float32 (BLAS)": {}, "float16 chain": {"fmt": "float16"}, "bfloat16 chain": {"fmt": "bfloat16"},
                "float16 pairwise": {"fmt": "float16", "order": "pairwise"}}


def accumulation_errors(lengths=(64, 256, 1024, 4096, 16384, 65536), seed=0, accumulators=ACCUMULATORS):
    """Relative error of a dot product of uniform [0, 1) float16 values against its exact value, by length,
    for each accumulator: rows of (length, {accumulator: error})."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in lengths:
        # float16 values held in float32 tensors: the result keeps what the accumulator made of the sum
        a = mf.tensor(rng.random(n), dtype="float16").astype("float32")
        b = mf.tensor(rng.random(n), dtype="float16").astype("float32")
        exact = math.fsum(a.numpy().astype(np.float64) * b.numpy().astype(np.float64))   # exact products
        errors = {}
        for name, kwargs in accumulators.items():
            with mf.accumulate(**kwargs):
                errors[name] = abs(mf.matmul(a, b).item() - exact) / exact
        rows.append((n, errors))
    return rows


def higham_bounds(n, fmt):
    """Higham's bounds on the relative error of a sum of n positive terms accumulated in fmt, rounding after
    every addition: sequential gamma_n (the first product is rounded too) and pairwise gamma_ceil(log2 n), with
    gamma_k = k u / (1 - k u) (Higham, "Accuracy and Stability of Numerical Algorithms", 2002, sections 4.2-4.3)."""
    u = 2.0 ** -(mf.finfo(fmt).man_bits + 1)
    gamma = lambda k: k * u / (1 - k * u) if k * u < 1 else math.inf       # noqa: E731
    return gamma(n), gamma(math.ceil(math.log2(n)))


def accumulation():
    """Accumulating in float16 or bfloat16 loses the sum as it grows (pairwise far less); float32 does not."""
    rows = accumulation_errors()
    names = list(rows[0][1])
    lines = ["Accumulation: a dot product of uniform [0, 1) float16 vectors under minifp.accumulate(...), "
             "relative error vs exact:", "  " + f"{'length':>7s}" + "".join(f" {name:>17s}" for name in names)
             + f" {'gamma_n float16':>16s}"]
    lines += ["  " + f"{n:7d}" + "".join(f" {errors[name]:17.2e}" for name in names)
              + f" {higham_bounds(n, mf.float16)[0]:16.2e}" for n, errors in rows]
    lines.append("  The float16 chain stalls once an addend falls below half an ulp of the sum (from 2048 on for "
                 "terms near 1); pairwise sums add numbers of like size.")

    def figure(path):
        from .plots import plot_accumulation
        plot_accumulation(rows, path)
    return "\n".join(lines), figure


# -- fp8 with per-tensor scaling --------------------------------------------------------------------------

FP8_RUNS = {
    "bfloat16 autocast": None,
    "e4m3 autocast (no scales)": "autocast",
    "fp8 E4M3, scale 1": mf.DelayedScaling(fp8_format=mf.Fp8Format.E4M3,
                                           scaling_factor_compute_algo=lambda amax, scale, fp8_max, recipe: scale),
    "fp8 E4M3, delayed scaling": mf.DelayedScaling(fp8_format=mf.Fp8Format.E4M3),
    "fp8 HYBRID, scale 1": mf.DelayedScaling(scaling_factor_compute_algo=lambda amax, scale, fp8_max, recipe: scale),
    "fp8 HYBRID, delayed scaling": mf.DelayedScaling(),
}


def fp8_training(run, epochs=20, batch_size=256, lr=0.5, seed=0, histograms=False, watched=4):
    """The digits MLP on the PyTorch face (SGD, batch 256: gradients of a mean loss are small) under one of
    FP8_RUNS: torch.autocast to bfloat16, or to float8_e4m3fn (today's fp8: GEMM outputs rounded to e4m3, no
    scales), or bfloat16 autocast with minifp.fp8_autocast(recipe) around the forward, as with Transformer Engine.
    Returns (test accuracy, mean training loss per epoch, the monitor's report of step `watched`, counted from 0:
    by then the delayed scales have been updated from the steps before)."""
    import warnings
    from . import torch
    from .torch import nn
    recipe = FP8_RUNS[run]
    (x, y), (xt, yt) = mf.datasets.load_digits()
    torch.manual_seed(seed)
    with warnings.catch_warnings():             # "no GPU here, cuda is emulated": said once, not news here
        warnings.simplefilter("ignore")
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                              nn.Linear(64, 10)).to("cuda")
        xs, ys, xt = torch.tensor(x).to("cuda"), torch.tensor(y.astype(np.int64)).to("cuda"), \
            torch.tensor(xt).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    dtype = torch.float8_e4m3fn if recipe == "autocast" else torch.bfloat16
    scaled = isinstance(recipe, mf.DelayedScaling)
    losses, report = [], None

    def forward(xb):
        with torch.autocast("cuda", dtype=dtype), mf.fp8_autocast(enabled=scaled, recipe=recipe if scaled else None):
            return model(xb)
    for epoch in range(epochs):
        total = 0.0
        for b in range(0, len(x), batch_size):
            last = epoch * -(-len(x) // batch_size) + b // batch_size == watched
            with watch(model, histograms=histograms) if last else _nothing() as seen:
                loss = loss_fn(forward(xs[b:b + batch_size]), ys[b:b + batch_size])
                opt.zero_grad()
                loss.backward()
            report = seen if last else report
            opt.step()
            total += float(loss) * len(ys[b:b + batch_size])
        losses.append(total / len(x))
    with torch.no_grad():
        accuracy = float(np.mean(forward(xt).argmax(-1).numpy() == yt))
    return accuracy, losses, report


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def fp8():
    """fp8 training needs per-tensor scales where gradients fall below e4m3's range; e5m2 gradients reach further."""
    results = {name: fp8_training(name) for name in FP8_RUNS}
    lines = ["fp8 training: the digits MLP (PyTorch face, SGD lr 0.5, batch 256, 20 epochs), GEMM inputs in fp8.",
             f"  {'run':28s} {'test acc.':>9s} {'last loss':>9s} {'gradients flushed to 0 (step 5)':>31s}"]
    for name, (acc, losses, report) in results.items():
        lines.append(f"  {name:28s} {acc:9.2%} {losses[-1]:9.4f} {_flushed(report):>31s}")
    lines.append("  e4m3 reaches down to 2**-9; gradients of a mean loss sit below it and flush unless scaled. "
                 "e5m2\n  reaches 2**-16, so HYBRID (e5m2 gradients) trains here even at scale 1.")

    def figure(path):
        from .plots import plot_training_curves
        plot_training_curves({k: v[1] for k, v in results.items()}, path, ylabel="training loss")
    return "\n".join(lines), figure


def _flushed(report):
    """The share of the GEMMs' output gradients that quantising flushed to zero (without the recipe: of all the
    backward's roundings)."""
    if report.fp8:
        stats = [s for (_, role), s in report.fp8.items() if role == "grad_output"]
        return f"{sum(s.underflow for s in stats) / max(sum(s.total for s in stats), 1):.1%} of grad_output"
    rows = [r for r in report.rows() if r[2] == "backward"]
    return f"{sum(r[4] for r in rows) / max(sum(r[7] for r in rows), 1):.1%} of all grads"


# -- what the H100 does that one rounding would not ----------------------------------------------------------


def _h100_conv_bias(torch, rng):
    """An autocast float16 conv2d with a bias: cuDNN rounds the convolution to half, then adds the bias."""
    x = torch.tensor(rng.standard_normal((8, 16, 16, 16)).astype(np.float32), device="cuda")
    conv = torch.nn.Conv2d(16, 32, 3, padding=1).to("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        return conv(x)


def _h100_attention(torch, rng):
    """float16 attention: cuDNN's flash kernel rounds the probabilities to half before multiplying by V."""
    q, k, v = (torch.tensor(rng.standard_normal((2, 4, 128, 64)).astype(np.float32), device="cuda").half()
               for _ in range(3))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def _h100_split_k(torch, rng):
    """A float16 GEMM with k = 4096: cuBLAS cuts k in three, chains each on the tensor cores, adds the partials."""
    a, b = (torch.tensor(rng.standard_normal(shape).astype(np.float32), device="cuda").half()
            for shape in ((64, 4096), (4096, 64)))
    return torch.mm(a, b)


def _h100_batch_norm(torch, rng):
    """BatchNorm2d on bfloat16 input: the native kernel's weight-gradient sums keep bfloat16 partials."""
    x = torch.tensor(rng.standard_normal((16, 8, 8, 8)).astype(np.float32) + 3, device="cuda").bfloat16()
    bn = torch.nn.BatchNorm2d(8).to("cuda")
    g = torch.tensor(rng.standard_normal((16, 8, 8, 8)).astype(np.float32), device="cuda").bfloat16()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        bn(x).backward(g)
    return bn.weight.grad


def _cases():
    """{case: (function of the face and a NumPy generator, the Device emulated cuda runs it as)}."""
    from .engine import CUBLAS, H100
    return {"conv2d + bias (cuDNN)": (_h100_conv_bias, H100),
            "attention (cuDNN flash)": (_h100_attention, H100),
            "GEMM, k = 4096 (cuBLAS split-K)": (_h100_split_k, H100.with_gemm(CUBLAS)),
            "batch norm weight grad (bfloat16)": (_h100_batch_norm, H100)}


def h100_differences(seed=0):
    """{case: (share of values the H100 emulation and the ideal device give differently, largest difference
    relative to the largest value)}: each case run on emulated cuda as the H100, then as the ideal device."""
    import warnings

    from . import torch
    from .engine import IDEAL, device_numerics, set_device_numerics
    warnings.filterwarnings("ignore", message="minifp: no GPU here")
    before, out = device_numerics("cuda"), {}
    try:
        for name, (case, device) in _cases().items():
            runs = []
            for numerics in (device, IDEAL):
                set_device_numerics("cuda", numerics)
                torch.manual_seed(seed)
                runs.append(case(torch, np.random.default_rng(seed)).detach().float().cpu().numpy())
            h100, ideal = runs
            gap = np.max(np.abs(h100 - ideal)) / max(float(np.max(np.abs(ideal))), np.finfo(np.float32).tiny)
            out[name] = (float(np.mean(h100 != ideal)), float(gap))
    finally:
        set_device_numerics("cuda", before)
    return out


def h100():
    """Where the H100's kernels round differently from one rounding per op, and by how much."""
    rows = h100_differences()
    lines = ["Emulated cuda as the H100 (PyTorch 2.11's kernels) against the ideal device (one rounding per op):",
             f"  {'case':36s} {'values that differ':>18s} {'largest gap / largest value':>28s}"]
    lines += [f"  {name:36s} {share:18.1%} {gap:28.1e}" for name, (share, gap) in rows.items()]
    lines.append("  Both are right answers to different questions: the ideal device is the best one rounding can "
                 "give, the H100 device is what the GPU holds.")

    def figure(path):
        from .plots import plot_bars
        plot_bars({name: 100 * share for name, (share, _) in rows.items()}, "values that differ (%)", path)
    return "\n".join(lines), figure


DEMOS = {"overflow": overflow, "underflow": underflow, "swamping": swamping, "histogram": histogram,
         "loss-scaling": loss_scaling, "master-weights": master_weights, "pure-bf16": pure_bf16,
         "accumulation": accumulation, "transformer-overflow": transformer_overflow, "fp8": fp8,
         "h100": h100}
