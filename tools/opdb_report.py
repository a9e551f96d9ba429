"""Run PyTorch's op-database samples through minifp.torch and write docs/torch_coverage.md (no PyTorch needed).

    python tools/opdb_report.py             # print the pass rates, rewrite docs/torch_coverage.md
    python tools/opdb_report.py --update    # also rewrite tests/fixtures/pytorch/opdb/passing.txt (the ratchet)
    python tools/opdb_report.py --missing 30    # also print the 30 missing names that fail the most samples
    python tools/opdb_report.py --failures 20   # ... and the 20 commonest failures of the names minifp has

The samples come from tools/record_opdb.py; tests/torch/test_opdb.py checks that every sample listed in
passing.txt still passes and that the docs show the rates measured now.
"""
import argparse
import collections
import importlib.util
import json
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "torch_coverage.md"
_spec = importlib.util.spec_from_file_location("opdb_samples", ROOT / "tests" / "torch" / "opdb_samples.py")
opdb_samples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(opdb_samples)
PASSING = opdb_samples.FIXTURES / "passing.txt"
EXCLUSIONS = json.loads((ROOT / "tools" / "opdb_exclusions.json").read_text())


def measure(ns):
    """{sample id (and id + "/grad"): [problems]} for every recorded sample run through namespace ns."""
    meta, buffers = opdb_samples.load()
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rec in meta["samples"]:
            s = opdb_samples.Sample(rec, meta["ops"][rec["op"]], buffers)
            results[s.id] = opdb_samples.run_forward(s, ns)
            if "grads" in rec:
                results[s.id + "/grad"] = opdb_samples.run_gradient(s, ns)
    return meta, results


def rates(results):
    """((passed, total) of forward samples, (passed, total) of gradient samples)."""
    fwd = [not p for k, p in results.items() if not k.endswith("/grad")]
    grad = [not p for k, p in results.items() if k.endswith("/grad")]
    return (sum(fwd), len(fwd)), (sum(grad), len(grad))


def rate_line(results):
    """The one line of the docs that states the measured pass rates (tests/torch/test_opdb.py compares it)."""
    (f, nf), (g, ng) = rates(results)
    return (f"**Pass rate: {f} of {nf} in-scope samples ({100 * f / nf:.1f}%) for values, dtypes, shapes and raises; "
            f"{g} of {ng} ({100 * g / ng:.1f}%) for gradients.**")


def public_name(call):
    """A call's name as PyTorch code spells it: torch.X, Tensor.X or torch.nn.functional.X."""
    return call["name"] if call["kind"] == "function" else f"Tensor.{call['name']}"


def attrs(v):
    """The torch attributes (dtypes, memory formats) a recorded value names."""
    if isinstance(v, list):
        return [a for x in v for a in attrs(x)]
    if not isinstance(v, dict):
        return []
    return [v["attr"]] if "attr" in v else [a for x in v.values() for a in attrs(x)]


def missing(meta, ns):
    """Counter {missing public name: samples that need it}: the functions and methods called, and the torch
    attributes (dtypes, memory formats) passed."""
    count = collections.Counter(public_name(r["call"]) for r in meta["samples"]
                                if not opdb_samples.has_name(ns, r["call"]))
    count.update(f"torch.{a}" for r in meta["samples"] for a in set(attrs(r["call"])) if not hasattr(ns, a))
    return count


def failures(meta, results, ns):
    """[(failure with its numbers blanked, [ids])], commonest first, of the samples whose names ns has."""
    by_why = collections.defaultdict(list)
    for rec in meta["samples"]:
        if opdb_samples.has_name(ns, rec["call"]):
            for key in (rec["id"], rec["id"] + "/grad"):
                if results.get(key):
                    by_why[re.sub(r"\b\d[\d.e+-]*", "N", results[key][0])[:120]].append(key)
    return sorted(by_why.items(), key=lambda kv: -len(kv[1]))


def table(rows, head):
    """A Markdown table."""
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                     + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def per_op(meta, results):
    """Rows: op, call, forward passed/total, gradient passed/total."""
    counts = collections.defaultdict(lambda: [0, 0, 0, 0])
    for rec in meta["samples"]:
        c = counts[rec["op"]]
        c[0] += not results[rec["id"]]
        c[1] += 1
        if rec["id"] + "/grad" in results:
            c[2] += not results[rec["id"] + "/grad"]
            c[3] += 1
    return [(f"`{op['name']}`", f"`{op['call']}`" if op["call"] else "-",
             f"{c[0]}/{c[1]}", f"{c[2]}/{c[3]}" if c[3] else "-")
            for i, op in enumerate(meta["ops"]) for c in [counts[i]]]


def render(meta, results, ns):
    """docs/torch_coverage.md's text."""
    miss = missing(meta, ns)
    names = sorted({public_name(r["call"]) for r in meta["samples"]}
                   | {f"torch.{a}" for r in meta["samples"] for a in attrs(r["call"])})
    have = [n for n in names if n not in miss]
    excl = collections.defaultdict(list)
    for e in meta["excluded"]:
        excl[(e["category"], e["reason"])].append(f"`{e['op']}`")
    return "\n\n".join([
        "# minifp.torch against PyTorch's op database",
        "Generated by `python tools/opdb_report.py` from the samples that `tools/record_opdb.py` recorded from "
        f"PyTorch {meta['torch_version']}'s own op database (`torch.testing._internal.common_methods_invocations"
        f".op_db`): up to {meta['max_samples']} float32 CPU samples per op (int64 for the ops PyTorch runs on "
        f"integers only; tensors of at most "
        f"{meta['max_elements']} elements, or its smallest sample where none is that small) and up to "
        f"{meta['max_errors']} of its error inputs. Samples whose values are random (another seed gives others) "
        "are compared by shape and dtype. A sample passes "
        "when minifp.torch, called the same way, gives the same values (within the op's own float32 tolerance "
        "in op_db, else torch.testing's rtol 1.3e-6, atol 1e-5), dtypes and shapes, and raises where PyTorch "
        "raises (an exception of the same built-in class, and not minifp's NotImplementedError for PyTorch's "
        "RuntimeError; a sample whose function or method minifp.torch lacks fails). Dtypes compare by name through "
        "minifp.torch (`torch.float64` is minifp's float64, which is float32: minifp has no float64). Gradients are "
        "those of sum(out * a fixed random cotangent). tests/torch/test_opdb.py keeps every "
        "sample listed in tests/fixtures/pytorch/opdb/passing.txt passing, and this page current.",
        rate_line(results),
        f"{len(meta['ops'])} ops in scope, {len(meta['excluded'])} excluded (below). Samples PyTorch's op_db "
        "gives that the fixtures cannot hold (complex numbers, option objects) are not counted: "
        + ", ".join(f"`{u['op']}` ({u['samples']}: {u['why']})" for u in meta["unrecordable"]) + ".",
        "## Names", f"minifp.torch has {len(have)} of the {len(names)} names the op database's samples call or pass. "
        "Missing, with the number of samples that call each:",
        ", ".join(f"`{n}` ({k})" for n, k in sorted(miss.items(), key=lambda kv: (-kv[1], kv[0]))),
        "Present: " + ", ".join(f"`{n}`" for n in have) + ".",
        "## Per op", table(per_op(meta, results), ("op_db op", "called as", "forward", "gradients")),
        "## Excluded", "Categories of `tools/opdb_exclusions.json`, each with its reason (ops PyTorch has neither "
        "a float32 nor an int64 CPU kernel for are excluded by the recorder). Ops whose values are random or "
        "uninitialised stay in scope, compared by shape, dtype and raises only: "
        + "; ".join(f"{r['reason']}: " + ", ".join(f"`{o}`" for o in r["ops"]) for r in EXCLUSIONS["shape_only"])
        + ".",
        table([(c, r, ", ".join(ops)) for (c, r), ops in excl.items()], ("category", "reason", "ops")),
        "## Beyond the op database", BEYOND,
    ]) + "\n"


# What the face covers that op_db's samples do not reach, each with the fixture that checks it against PyTorch.
BEYOND = ("`torch.func` (`minifp/torch/func.py`): `functional_call` (tie_weights, strict, sequences of dicts), "
          "`stack_module_state`, `replace_all_batch_norm_modules_`, `grad`, `grad_and_value`, `vjp`, `jvp`, "
          "`linearize`, `jacrev`, `jacfwd`, `hessian` (argnums, has_aux, pytrees of inputs and outputs) and `vmap` "
          "(also `torch.vmap`: in_dims, out_dims, randomness, chunk_size accepted), with PyTorch's errors for bad "
          "input. vmap is a loop over the mapped dimension (its values are those of per-slice kernels, its speed a "
          "loop's; over an empty dimension func runs once on zeros, for the outputs' shapes), jacfwd and jvp are "
          "reverse mode (column by column, the double-backward trick). Checked by tests/torch/test_func.py against tests/fixtures/pytorch/func.json "
          "(tools/record_torch_func.py: the per-sample-gradients, model-ensembling, Jacobians and neural-tangent-"
          "kernel tutorials' programs at small sizes).")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="rewrite passing.txt with the samples that pass now")
    ap.add_argument("--missing", type=int, default=0, help="print the N missing names failing the most samples")
    ap.add_argument("--failures", type=int, default=0,
                    help="print the N commonest failures of the samples whose names minifp.torch has")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import minifp.torch as ns
    meta, results = measure(ns)
    DOCS.write_text(render(meta, results, ns))
    print(rate_line(results).strip("*"))
    if args.update:
        PASSING.write_text("".join(f"{k}\n" for k, p in results.items() if not p))
        print(f"{PASSING.relative_to(ROOT)}: {sum(not p for p in results.values())} ids")
    for name, n in missing(meta, ns).most_common(args.missing):
        print(f"{n:5d}  {name}")
    for why, ids in failures(meta, results, ns)[:args.failures]:
        print(f"{len(ids):5d}  {why}  ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''})")


if __name__ == "__main__":
    main()
