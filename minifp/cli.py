"""The `minifp` command: training on the bundled digits, format tables and demos."""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import sys

import minifp as mf
from minifp import _checks
from minifp._digits import MODELS
from minifp.demos import DEMOS

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16", "float16", "bfloat16")
COMPARED = ("float32", "mixed_float16", "mixed_bfloat16")
EPOCHS = {"mlp": 20, "cnn": 15}

__all__ = ["main", "train", "formats_table", "report_table"]


def _integer(lo):
    """An argparse type: an integer >= lo (argparse adds the option's name to the error)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: must be an integer >= {lo}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: must be an integer >= {lo}")
        return value
    return parse


def _learning_rate(text):
    """An argparse type: a finite number >= 0 (nan and inf would train garbage)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: must be a finite number >= 0")
    return value


def formats_table():
    """The table of formats and their limits, one row each."""
    rows = [("format", "bits", "exp", "man", "max", "tiny (min normal)", "min subnormal", "eps", "storage")]
    for fmt in mf.FORMATS.values():
        fi = mf.finfo(fmt)
        rows.append((fmt.name, str(fi.bits), str(fi.exp_bits), str(fi.man_bits), f"{fi.max:.6g}",
                     f"{fi.tiny:.6g}", f"{fi.smallest_subnormal:.6g}", f"{fi.eps:.6g}", fmt.storage.name))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def train(policy, model="mlp", epochs=None, batch_size=32, lr=1e-3, seed=0, verbose=1, fp8=False):
    """Train a digits model of the Keras face under `policy` (compile/fit/evaluate); returns what to report.
    fp8=True: inside minifp.fp8_autocast() (Transformer Engine's default DelayedScaling recipe)."""
    if model not in MODELS:
        raise ValueError(f"train(): unknown model {model!r}; valid models: {', '.join(MODELS)}")
    if policy not in POLICIES:
        raise ValueError(f"train(): unknown policy {policy!r}; valid policies: {', '.join(POLICIES)}")
    if epochs is not None:
        _checks.integer("epochs", epochs, lo=1, where="train(): ")     # the report needs one epoch's figures
    _checks.integer("batch_size", batch_size, lo=1, where="train(): ")
    _checks.number("lr", lr, 0, where="train(): ")
    _checks.integer("seed", seed, lo=0, where="train(): ")
    _checks.flag("fp8", fp8, where="train(): ")
    from minifp import keras
    (x, y), (x_test, y_test) = mf.datasets.load_digits()
    mf.manual_seed(seed)
    net = MODELS[model](policy)
    net.compile(keras.optimizers.Adam(learning_rate=lr), "sparse_categorical_crossentropy", metrics=["accuracy"])
    with mf.fp8_autocast(enabled=fp8):
        history = net.fit(x, y, batch_size=batch_size, epochs=EPOCHS[model] if epochs is None else epochs,
                          verbose=int(bool(verbose)))
        _, accuracy = net.evaluate(x_test, y_test, verbose=0)
    steps = history.steps                  # minifp's per-step extras, beside Keras's per-epoch history
    return {"policy": policy + (" + fp8" if fp8 else ""), "accuracy": float(accuracy),
            # the median: on a fresh install the first steps also compile Numba's kernels (2x the mean there)
            "ms_per_step": 1e3 * statistics.median(steps["time"]),
            "skipped": int(sum(steps["skipped"])) if "skipped" in steps else None,
            "loss_scale": steps["loss_scale"][-1] if "loss_scale" in steps else None,
            "loss": float(history.history["loss"][-1])}


def report_table(rows):
    """One line per run: policy, test accuracy, time per step, skipped steps, final loss scale, final loss."""
    w = max([16] + [len(r["policy"]) + 2 for r in rows])
    lines = [f"{'policy':{w}s}{'test accuracy':>15s}{'ms/step':>10s}{'skipped':>10s}{'loss scale':>12s}"
             f"{'final loss':>12s}"]
    for r in rows:
        skipped = "-" if r["skipped"] is None else str(r["skipped"])
        scale = "-" if r["loss_scale"] is None else f"{r['loss_scale']:g}"
        lines.append(f"{r['policy']:{w}s}{r['accuracy']:>14.2%} {r['ms_per_step']:>9.1f}{skipped:>10s}{scale:>12s}"
                     f"{r['loss']:>12.4f}")
    return "\n".join(lines)


def _check_plot(parser, path):
    """Refuse --plot before the demo runs: a missing folder, a folder as the file, no matplotlib."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        parser.error(f"argument --plot: invalid value {path!r}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        parser.error(f"argument --plot: invalid value {path!r}: a folder; give a file name such as figure.png")
    if importlib.util.find_spec("matplotlib") is None:
        parser.error("argument --plot: figures need matplotlib: pip install 'minifp[plots]'")


def main(argv=None):
    """Run the `minifp` command with these arguments (default: the command line's); returns its exit status."""
    try:
        status = _run(argv)
        sys.stdout.flush()          # here, inside the try: the last buffered lines may meet a closed pipe
        return status
    except BrokenPipeError:
        # The reader has gone (`minifp demo ... | head`): stop quietly, as cat does. Python flushes stdout again
        # at exit, so it now points at devnull (the Python docs' recipe). 141 is 128 + SIGPIPE, the status a
        # shell reports for cat ended by SIGPIPE: scripts under `set -o pipefail` can tell it from a failure.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _run(argv):
    parser = argparse.ArgumentParser(prog="minifp", description=mf.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train a model on the bundled 8x8 digits")
    tr.add_argument("--policy", default="mixed_float16", choices=POLICIES, help="dtype policy (default mixed_float16)")
    tr.add_argument("--compare", action="store_true", help="train under float32, mixed_float16 and mixed_bfloat16 "
                                                           "and print one table")
    tr.add_argument("--model", default="mlp", choices=sorted(MODELS))
    tr.add_argument("--epochs", type=_integer(1), default=None, help="default 20 for mlp, 15 for cnn")
    tr.add_argument("--batch-size", type=_integer(1), default=32)
    tr.add_argument("--lr", type=_learning_rate, default=1e-3)
    tr.add_argument("--seed", type=_integer(0), default=0)
    tr.add_argument("--quiet", action="store_true", help="no progress bars")
    tr.add_argument("--fp8", action="store_true", help="Dense and Conv2D in fp8 with per-tensor delayed scaling "
                                                       "(minifp.fp8_autocast, Transformer Engine's recipe)")
    sub.add_parser("formats", help="print the table of formats and their limits")
    demo = sub.add_parser("demo", help="run a demo of what half precision does")
    demo.add_argument("name", choices=list(DEMOS))
    demo.add_argument("--plot", metavar="FILE", help="also write the demo's figure to FILE (PNG; needs matplotlib)")
    args = parser.parse_args(argv)
    if args.command == "demo" and args.plot:
        _check_plot(demo, args.plot)
    if args.command == "train":
        policies = COMPARED if args.compare else (args.policy,)
        print(f"Training the {args.model} on the digits (1437 train / 360 test images) under "
              f"{', '.join(policies)}")
        rows = [train(p, args.model, args.epochs, args.batch_size, args.lr, args.seed, verbose=not args.quiet,
                      fp8=args.fp8) for p in policies]
        print(report_table(rows))
    elif args.command == "formats":
        print(formats_table())
    else:
        text, figure = DEMOS[args.name]()
        print(text)
        if args.plot:
            if figure is None:
                demo.error(f"argument --plot: demo {args.name} has no figure")
            figure(args.plot)
            print(f"figure written to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
