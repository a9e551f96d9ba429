"""The projector's files for SummaryWriter.add_embedding, laid out and worded as PyTorch writes them."""
from __future__ import annotations

import io
import math
import os

import numpy as np
from google.protobuf import text_format
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo, ProjectorConfig

from .summary import make_grid, make_np

__all__ = ["ProjectorConfig", "encode", "make_dir", "make_tsv", "make_sprite", "make_mat", "info", "write_pbtxt"]


def encode(tag):
    """tag as one path component: %, / and backslash percent-encoded."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def make_dir(path):
    """Create path; an existing directory is reused with PyTorch's printed warning, an existing file refused."""
    if not os.path.exists(path):
        os.makedirs(path)
    elif os.path.isdir(path):
        print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
    else:
        raise NotADirectoryError(f"Path: `{path}` exists, but is a file. Cannot proceed.")


def make_tsv(metadata, save_path, metadata_header=None):
    """metadata.tsv: one label per line, or a header row and rows of columns."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + metadata]
    _write(os.path.join(save_path, "metadata.tsv"), "\n".join(lines) + "\n")


def make_sprite(label_img, save_path):
    """sprite.png: the label images tiled into a square grid (ceil(sqrt(n)) columns), padded below with black."""
    from PIL import Image
    grid = make_grid(make_np(label_img), ncols=math.ceil(label_img.shape[0] ** 0.5))
    side = grid.shape[2]
    square = np.zeros((side, side, 3))
    square[:grid.shape[1]] = grid.transpose(1, 2, 0)
    with io.BytesIO() as out:
        Image.fromarray(np.uint8((square * 255).clip(0, 255))).save(out, format="PNG")
        _write(os.path.join(save_path, "sprite.png"), out.getvalue())


def make_mat(mat, save_path):
    """tensors.tsv: one point per line, each value as Python prints the float it holds."""
    rows = ["\t".join(str(v.item()) for v in row) + "\n" for row in mat]
    _write(os.path.join(save_path, "tensors.tsv"), "".join(rows))


def info(metadata, label_img, subdir, global_step, tag):
    """The EmbeddingInfo naming one add_embedding's files."""
    embedding = EmbeddingInfo(tensor_name=f"{tag}:{str(global_step).zfill(5)}",
                              tensor_path=os.path.join(subdir, "tensors.tsv"))
    if metadata is not None:
        embedding.metadata_path = os.path.join(subdir, "metadata.tsv")
    if label_img is not None:
        embedding.sprite.image_path = os.path.join(subdir, "sprite.png")
        embedding.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
    return embedding


def write_pbtxt(logdir, config):
    """projector_config.pbtxt: every embedding of the run so far, as protobuf text."""
    _write(os.path.join(logdir, "projector_config.pbtxt"), text_format.MessageToString(config))


def _write(path, contents):
    with open(path, "wb") as f:
        f.write(contents.encode() if isinstance(contents, str) else contents)
