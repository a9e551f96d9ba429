"""The `minifp` command: training on the bundled digits, format tables and demos."""
from __future__ import annotations

import argparse
import sys

import minifp as mf
from minifp.models import MODELS

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16", "float16", "bfloat16")
COMPARED = ("float32", "mixed_float16", "mixed_bfloat16")

DEMO_FORMATS = ("float32", "float16", "bfloat16")


def formats_table():
    """The table of formats and their limits, one row each."""
    rows = [("format", "bits", "exp", "man", "max", "tiny (min normal)", "min subnormal", "eps", "storage")]
    for fmt in mf.FORMATS.values():
        fi = mf.finfo(fmt)
        rows.append((fmt.name, str(fi.bits), str(fi.exp_bits), str(fi.man_bits), f"{fi.max:.6g}",
                     f"{fi.tiny:.6g}", f"{fi.smallest_subnormal:.6g}", f"{fi.eps:.6g}", fmt.storage.name))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def _square_demo(title, value, note):
    lines = [title, f"  x = {value!r}; y = x ** 2, computed in each format by minifp:"]
    exact = value * value
    for name in DEMO_FORMATS:
        y = (mf.tensor([value], dtype=name) ** 2).item()
        error = abs(y - exact) / exact
        lines.append(f"  {name:9s} y = {y!r:24s} relative error {error:.2g}")
    lines.append(note)
    return "\n".join(lines)


def demo_overflow():
    """256**2 overflows float16 (max 65504) but not bfloat16, which has float32's exponent range."""
    return _square_demo(
        "Overflow (the TensorFlow mixed-precision guide's example):", 256.0,
        f"  float16 tops out at {mf.finfo('float16').max:g}, so 65536 rounds to inf; bfloat16 keeps float32's 8\n"
        f"  exponent bits (max {mf.finfo('bfloat16').max:.4g}) and holds 65536 exactly.")


def demo_underflow():
    """1e-5**2 flushes to zero in float16 (smallest subnormal 2**-24) but not in bfloat16."""
    return _square_demo(
        "Underflow (the TensorFlow mixed-precision guide's example):", 1e-5,
        f"  float16's smallest subnormal is {mf.finfo('float16').smallest_subnormal:.4g} (2**-24), so 1e-10 rounds\n"
        f"  to 0; bfloat16 reaches down to {mf.finfo('bfloat16').tiny:.4g} but keeps only 8 significant bits.")


DEMOS = {"overflow": demo_overflow, "underflow": demo_underflow}


def train(policy, model="mlp", epochs=None, batch_size=32, lr=1e-3, seed=0, verbose=1):
    """Train a digits model under `policy`; returns a dict of what to report."""
    (x, y), (x_test, y_test) = mf.datasets.load_digits()
    mf.manual_seed(seed)
    net = MODELS[model](policy)
    net.compile(mf.optim.Adam(lr=lr), "sparse_categorical_crossentropy", ["accuracy"])
    history = net.fit(x, y, batch_size=batch_size, epochs=epochs or {"mlp": 20, "cnn": 15}[model], verbose=verbose)
    _, accuracy = net.evaluate(x_test, y_test)
    h = history.history
    steps = len(h["time_per_step"])
    return {"policy": policy, "accuracy": accuracy, "ms_per_step": 1e3 * sum(h["time_per_step"]) / steps,
            "skipped": sum(h.get("skipped_steps", [])) if "skipped_steps" in h else None,
            "loss_scale": h["loss_scale"][-1] if "loss_scale" in h else None, "loss": h["loss"][-1]}


def report_table(rows):
    """One line per run: policy, test accuracy, time per step, skipped steps, final loss scale, final loss."""
    lines = [f"{'policy':16s}{'test accuracy':>15s}{'ms/step':>10s}{'skipped':>10s}{'loss scale':>12s}"
             f"{'final loss':>12s}"]
    for r in rows:
        skipped = "-" if r["skipped"] is None else str(r["skipped"])
        scale = "-" if r["loss_scale"] is None else f"{r['loss_scale']:g}"
        lines.append(f"{r['policy']:16s}{r['accuracy']:>14.2%} {r['ms_per_step']:>9.1f}{skipped:>10s}{scale:>12s}"
                     f"{r['loss']:>12.4f}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="minifp", description=mf.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train a model on the bundled 8x8 digits")
    tr.add_argument("--policy", default="mixed_float16", choices=POLICIES, help="dtype policy (default mixed_float16)")
    tr.add_argument("--compare", action="store_true", help="train under float32, mixed_float16 and mixed_bfloat16 "
                                                           "and print one table")
    tr.add_argument("--model", default="mlp", choices=sorted(MODELS))
    tr.add_argument("--epochs", type=int, default=None, help="default 20 for mlp, 15 for cnn")
    tr.add_argument("--batch-size", type=int, default=32)
    tr.add_argument("--lr", type=float, default=1e-3)
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--quiet", action="store_true", help="no progress bars")
    sub.add_parser("formats", help="print the table of formats and their limits")
    demo = sub.add_parser("demo", help="run a demo of what half precision does")
    demo.add_argument("name", choices=sorted(DEMOS))
    args = parser.parse_args(argv)
    if args.command == "train":
        policies = COMPARED if args.compare else (args.policy,)
        print(f"Training the {args.model} on the digits (1437 train / 360 test images) under "
              f"{', '.join(policies)}")
        rows = [train(p, args.model, args.epochs, args.batch_size, args.lr, args.seed, verbose=not args.quiet)
                for p in policies]
        print(report_table(rows))
    elif args.command == "formats":
        print(formats_table())
    else:
        print(DEMOS[args.name]())
    return 0


if __name__ == "__main__":
    sys.exit(main())
