"""Datasets: IDX files are streamed and checked header first; the bundled and synthetic sets at their edges."""
import gzip
import struct
import tracemalloc
import zlib

import numpy as np
import pytest

from minifp import datasets


def idx_header(code, shape):
    return struct.pack(">BBBB", 0, 0, code, len(shape)) + struct.pack(f">{len(shape)}I", *shape)


def gzip_of_zeros(head, megabytes):
    """A small gzip file: `head` then `megabytes` MB of zeros (the shape of a decompression bomb)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    return packer.compress(head) + b"".join(packer.compress(chunk) for _ in range(megabytes)) + packer.flush()


@pytest.mark.parametrize("head, message", [(idx_header(0x08, (3, 2)), "holds more data"),
                                           (b"\x00\x00\x07\x01", "unknown IDX type code 0x07"),
                                           (b"PK\x03\x04", "not an IDX file")])
def test_a_bad_gzip_is_refused_without_decompressing_it(tmp_path, head, message):
    path = tmp_path / "bomb.gz"
    path.write_bytes(gzip_of_zeros(head, 64))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=message):
            datasets.load_idx(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"{peak / 2**20:.0f} MiB used to refuse a file holding 64 MiB"


def test_large_files_still_load(tmp_path):
    images = np.arange(3 * 1000 * 1000, dtype=np.int64).reshape(3, 1000, 1000).astype(np.uint8)  # 3 chunks' worth
    path = tmp_path / "images.gz"
    path.write_bytes(gzip.compress(idx_header(0x08, images.shape) + images.tobytes(), compresslevel=1))
    assert np.array_equal(datasets.load_idx(path), images)


def test_a_header_promising_more_than_the_file_holds_is_truncated(tmp_path):
    path = tmp_path / "short.idx"
    path.write_bytes(idx_header(0x0D, (1000, 1000, 1000)) + bytes(8))
    with pytest.raises(ValueError, match=r"\(4000000000 bytes\), but the file holds 8 bytes of data \(truncated\)"):
        datasets.load_idx(path)


def test_a_corrupt_gzip_names_the_file(tmp_path):
    data = bytearray(gzip.compress(idx_header(0x08, (4,)) + bytes(4)))
    data[12:16] = b"\xff\xff\xff\xff"
    path = tmp_path / "corrupt.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"load_idx\(path='.*corrupt.gz'\): the gzip stream is truncated or corrupt"):
        datasets.load_idx(path)


def test_load_digits_edges():
    (x, _), (xt, _) = datasets.load_digits(test_size=0)
    assert len(x) == 1797 and len(xt) == 0
    (x, _), (xt, _) = datasets.load_digits(test_size=1796, seed=3)
    assert len(x) == 1 and len(xt) == 1796


def test_synthetic_sets_at_their_smallest():
    x, y = datasets.make_classification(n=1, features=1, classes=1, separation=0)
    assert x.shape == (1, 1) and y.tolist() == [0]
    x, y = datasets.make_regression(n=1, features=1, noise=0)
    assert x.shape == (1, 1) and y.shape == (1, 1)
