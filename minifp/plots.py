"""Figures (matplotlib, the `plots` extra): gradient histograms, loss-scale trajectories, training curves."""
from __future__ import annotations

import numpy as np

from ._formats import as_format, finfo

__all__ = ["plot_histogram", "plot_loss_scale", "plot_training_curves", "plot_swamping", "plot_accumulation",
           "plot_layer_maxima", "plot_bars"]


def _plt():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("minifp's plots need matplotlib: pip install 'minifp[plots]'") from None
    if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline", "inline"):
        matplotlib.use("Agg")                           # files, not windows (and no display needed)
    import matplotlib.pyplot as plt
    return plt


def _finish(fig, path):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def plot_histogram(hist, fmt="float16", scale=1.0, path=None, title="Activation gradients"):
    """log2|value| histogram with fmt's representable range shaded and the loss-scale shift marked."""
    plt = _plt()
    fi = finfo(as_format(fmt))
    e, c = hist.exponents, hist.counts
    used = np.nonzero(c)[0]
    lo, hi = (e[used[0]] - 2, e[used[-1]] + 2) if used.size else (-30, 5)
    lo, hi = min(lo, int(np.log2(fi.smallest_subnormal)) - 2), max(hi, int(np.log2(fi.max)) + 2)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    keep = (e >= lo) & (e <= hi)
    ax.bar(e[keep], c[keep] / max(hist.total, 1), width=0.9, color="tab:blue", label="share of values")
    ax.axvspan(np.log2(fi.smallest_subnormal), np.log2(fi.tiny), color="tab:orange", alpha=0.15,
               label=f"{fmt} subnormals")
    ax.axvspan(np.log2(fi.tiny), np.log2(fi.max), color="tab:green", alpha=0.1, label=f"{fmt} normals")
    ax.axvline(np.log2(fi.smallest_subnormal) - 1 - np.log2(scale), color="tab:red", ls="--",
               label=f"flushed below this with loss scale {scale:g}")
    ax.set_xlabel("log2 |value|")
    ax.set_ylabel("share")
    ax.set_title(f"{title}: {hist.share_flushed(fmt):.1%} flush to zero in {fmt}, "
                 f"{hist.share_flushed(fmt, scale):.1%} with scale {scale:g}")
    ax.legend(fontsize=8)
    return _finish(fig, path)


def plot_loss_scale(history, path=None):
    """Loss scale per step with skipped steps marked (history: GradScaler.history or a list of scales)."""
    plt = _plt()
    scales = [h["scale"] if isinstance(h, dict) else h for h in history]
    skipped = [i for i, h in enumerate(history) if isinstance(h, dict) and h["skipped"]]
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.semilogy(scales, drawstyle="steps-post", label="loss scale")
    ax.plot(skipped, [scales[i] for i in skipped], "rx", label="skipped step")
    ax.set_xlabel("step")
    ax.set_ylabel("loss scale")
    ax.legend()
    return _finish(fig, path)


def plot_training_curves(curves, path=None, ylabel="loss", logy=False):
    """Several runs' curves side by side: {name: values per epoch}; logy: a logarithmic y axis."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for name, values in curves.items():
        ax.plot(range(1, len(values) + 1), values, marker="o", ms=3, label=name)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    ax.legend()
    return _finish(fig, path)


def plot_swamping(path=None):
    """Which updates u survive w + u for w = 1: float16, bfloat16 and float32."""
    import minifp as mf
    plt = _plt()
    ks = np.arange(1, 28)
    fig, ax = plt.subplots(figsize=(7, 3))
    for name in ("float32", "float16", "bfloat16"):
        moved = [(mf.tensor([1.0], dtype=name) + 2.0**-k).item() != 1.0 for k in ks]
        ax.plot(-ks, moved, drawstyle="steps-mid", marker="o", ms=3, label=name)
    ax.set_xlabel("log2(u / w), w = 1")
    ax.set_yticks([0, 1], ["lost", "kept"])
    ax.legend()
    return _finish(fig, path)


def plot_accumulation(rows, path=None, ax=None):
    """Relative error against dot-product length, one line per accumulator: rows of (length, {name: error})."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.5)) if ax is None else (ax.figure, ax)
    n = [row[0] for row in rows]
    for name in rows[0][1]:
        ax.loglog(n, np.maximum([row[1][name] for row in rows], 1e-12), "o-", label=name)
    ax.set_xlabel("length")
    ax.set_ylabel("relative error")
    ax.legend()
    return _finish(fig, path)


def plot_bars(values, ylabel, path=None, ax=None):
    """One bar per entry of {label: value}."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.5)) if ax is None else (ax.figure, ax)
    ax.bar(range(len(values)), list(values.values()))
    ax.set_xticks(range(len(values)), list(values), rotation=15, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    return _finish(fig, path)


def plot_layer_maxima(runs, fmt="float16", path=None):
    """Largest |output| per layer (as a power of two; inf on top) for several runs: {title: {label: rows}},
    rows as minifp._transformer.layer_maxima gives them; one panel per title, fmt's max as a line."""
    plt = _plt()
    top = np.log2(finfo(as_format(fmt)).max)
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 3.8), squeeze=False)
    for ax, (title, series) in zip(axes[0], runs.items()):
        for (label, rows), marker in zip(series.items(), "os^v"):
            names = [name for name, _ in rows]
            values = np.array([v for _, v in rows])
            shown = np.where(np.isinf(values) & (values > 0), top + 3, values)
            ax.plot(range(len(rows)), shown, marker=marker, ms=4, label=label)
            bad = np.isinf(values) & (values > 0)
            ax.plot(np.nonzero(bad)[0], shown[bad], "rx", ms=8)
        ax.axhline(top, color="tab:red", ls="--", lw=1, label=f"{fmt} max")
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
        ax.set_ylabel("log2 max |output|  (inf or NaN: x)")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    return _finish(fig, path)
