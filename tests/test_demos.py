"""The demos print what they measure; the swamping thresholds hold for every float16 weight exponent."""
import pytest

import minifp as mf
from minifp import cli, demos


@pytest.mark.parametrize("e", range(mf.float16.emin, 16))
def test_float16_swamping_threshold_for_every_exponent(e):
    w = 2.0**e
    assert demos.swamping_threshold("float16", w) == 2.0**-11
    h = mf.tensor([w], dtype="float16")
    assert (h + mf.tensor([w * 2.0**-11], dtype="float16")).item() == w
    assert (h + mf.tensor([w * 2.0**-10], dtype="float16")).item() > w


@pytest.mark.parametrize("e", [-126, -20, 0, 20, 127])
def test_bfloat16_swamping_threshold(e):
    assert demos.swamping_threshold("bfloat16", 2.0**e) == 2.0**-8


def test_counting_up_stops():
    assert demos.count_up("float16") == 2048.0 and demos.count_up("bfloat16") == 256.0


def test_swamping_demo_prints_the_thresholds(capsys, tmp_path):
    cli.main(["demo", "swamping", "--plot", str(tmp_path / "s.png")])
    out = capsys.readouterr().out
    assert "float16          1  2**-11               2048" in out
    assert "bfloat16         1  2**-8                256" in out
    assert "e = -14..15: u/w <= 2**-11 is swamped: True" in out
    assert (tmp_path / "s.png").stat().st_size > 10_000


def test_accumulation_demo():
    (_, small), (_, big) = demos.accumulation_errors(lengths=(64, 16384))
    assert big["float16 chain"] > 100 * small["float16 chain"] and big["float16 chain"] > 0.1   # the sum stalls
    assert big["float32 (BLAS)"] < 1e-6 and small["float32 (BLAS)"] < 1e-6
    assert big["float16 pairwise"] < 1e-2 < big["bfloat16 chain"]


def test_histogram_demo_shares_fall_with_the_scale():
    h = demos.gradient_histogram(steps=5)
    shares = [h.share_flushed(mf.float16, s) for s in (1, 8, 1024, 32768)]
    assert shares == sorted(shares, reverse=True) and h.share_flushed(mf.bfloat16) == 0.0
    assert h.total > 10_000


def test_master_weights_demo(capsys):
    text, figure = demos.master_weights(epochs=2)
    rows = {line.split()[0]: float(line.split()[-1]) for line in text.splitlines()[2:6]}
    assert rows["mixed_float16"] < 2 * rows["float16"] < 0 and rows["mixed_bfloat16"] < 2 * rows["bfloat16"] < 0


@pytest.mark.parametrize("name", ["overflow", "underflow", "accumulation"])
def test_every_quick_demo_runs(name, capsys):
    cli.main(["demo", name])
    assert capsys.readouterr().out.strip()


def test_transformer_overflow_demo_names_each_overflow(capsys, tmp_path):
    cli.main(["demo", "transformer-overflow", "--plot", str(tmp_path / "t.png")])
    out = capsys.readouterr().out
    for line in ("naive: first overflow: matmul in layer attn.scores, forward: 395 values",
                 "naive: first overflow: exp in layer attn.softmax, forward: 710 values",
                 "naive: first overflow: mul in layer ln1, forward: 73 values"):
        assert line in out
    assert out.count("fixed: 0 overflows, 0 NaNs") == 3 and (tmp_path / "t.png").stat().st_size > 10_000


def test_loss_scaling_demo(capsys, tmp_path):
    cli.main(["demo", "loss-scaling", "--plot", str(tmp_path / "l.png")])
    out = capsys.readouterr().out
    rows = {line[:24].strip(): line[24:].split() for line in out.splitlines() if " um " in line}
    rmse = {name: float(cells[0]) for name, cells in rows.items()}
    assert rmse["float32"] < 10.5 and rmse["float16, no scaling"] > 5 * rmse["float32"]
    assert rmse["float16, GradScaler"] < 1.01 * rmse["float32"] and rmse["bfloat16, no scaling"] < 1.1 * rmse["float32"]
    assert rows["float16, no scaling"][2] == "16384" and rows["float32"][2] == "0"
    assert "float16 would flush 100.0% of them; times 2**16, 0.0%" in out
    assert (tmp_path / "l.png").stat().st_size > 10_000


@pytest.mark.skipif(__import__("numba").config.DISABLE_JIT,
                    reason="its split-K GEMM runs the tensor-core kernels: the JIT's work (CI's first run)")
def test_h100_demo_measures_the_conv_bias_rounding_and_restores_the_device():
    from minifp import demos
    from minifp.engine import H100, device_numerics, set_device_numerics
    before = device_numerics("cuda")
    set_device_numerics("cuda", H100)
    try:
        rows = demos.h100_differences()
        share, gap = rows["conv2d + bias (cuDNN)"]
        assert 0.05 < share < 0.6 and 0 < gap < 1e-2    # two roundings differ from one in a good share of values
        assert 0 < rows["GEMM, k = 4096 (cuBLAS split-K)"][0] < 0.05      # split-K: a few last bits
        assert rows["attention (cuDNN flash)"][0] > 0.3                    # every probability rounded to half
        assert device_numerics("cuda") is H100
    finally:
        set_device_numerics("cuda", before)
