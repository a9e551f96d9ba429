"""The `minifp` command: format tables and demos."""
from __future__ import annotations

import argparse
import sys

import minifp as mf

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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="minifp", description=mf.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("formats", help="print the table of formats and their limits")
    demo = sub.add_parser("demo", help="run a demo of what half precision does")
    demo.add_argument("name", choices=sorted(DEMOS))
    args = parser.parse_args(argv)
    if args.command == "formats":
        print(formats_table())
    else:
        print(DEMOS[args.name]())
    return 0


if __name__ == "__main__":
    sys.exit(main())
