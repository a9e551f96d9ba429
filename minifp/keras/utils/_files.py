"""keras.utils.get_file (Keras's cache folder, read only: minifp downloads nothing here) and plot_model /
model_to_dot (pydot and Graphviz, imported only when called)."""
from __future__ import annotations

import hashlib
import os
import shutil
import urllib.parse

__all__ = ["get_file", "model_to_dot", "plot_model"]


def _keras_home():
    """Keras's home folder: $KERAS_HOME, else ~/.keras (as keras.datasets finds its files)."""
    from ..datasets import _keras_home
    return _keras_home()


def _hash(path, algorithm):
    digest = hashlib.md5(usedforsecurity=False) if algorithm == "md5" else hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None, cache_subdir="datasets",
             hash_algorithm="auto", extract=False, archive_format="auto", cache_dir=None, force_download=False):
    """The path of `fname` in Keras's cache (cache_dir or $KERAS_HOME, default ~/.keras, then cache_subdir),
    checked against file_hash when given; with extract/untar, the folder it was (or is now) extracted into.
    Keras would download a missing file from `origin`: minifp raises FileNotFoundError saying where to put it."""
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    base = os.path.expanduser(cache_dir or _keras_home())
    if not os.access(base, os.W_OK):
        base = os.path.join("/tmp", ".keras")
    datadir = os.path.join(base, cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    given = os.fspath(fname) if fname is not None else None
    if not given:
        given, named = os.path.basename(urllib.parse.urlsplit(origin).path), False
        if not given:
            raise ValueError(f"Can't parse the file name from the origin provided: '{origin}'.Please specify the "
                             f"`fname` argument.")
    else:
        named = True
        if os.sep in given:
            raise ValueError(f"Paths are no longer accepted as the `fname` argument. To specify the file's parent "
                             f"directory, use the `cache_dir` argument. Received: fname={given}")
    target, extract_to = os.path.join(datadir, given), None
    if extract or untar:        # Keras's names: file.tar.gz -> file_extracted/, else name -> name_archive
        if named and "." in given:
            extract_to = os.path.join(datadir, given[:given.find(".")] + "_extracted")
        else:
            target, extract_to = os.path.join(datadir, f"{given}_archive"), os.path.join(datadir, given)
    if force_download or not os.path.exists(target):
        raise FileNotFoundError(f"get_file(): {target!r} is not in the cache and minifp does not download it. "
                                f"Fetch {origin} and save it there (or pass cache_dir= / set KERAS_HOME to the "
                                f"folder holding {cache_subdir}/).")
    if file_hash is not None:
        algorithm = hash_algorithm if hash_algorithm in ("md5", "sha256") else "sha256" if len(file_hash) == 64 \
            else "md5"
        if _hash(target, algorithm) != str(file_hash):
            raise ValueError(f"get_file(): the cached {target!r} does not match the {algorithm} hash {file_hash} "
                             f"(incomplete or outdated); Keras would download it again from {origin}.")
    if extract_to is None:
        return target
    if not os.path.exists(extract_to):
        fmt = "tar" if untar else None if archive_format == "auto" else archive_format
        shutil.unpack_archive(target, extract_to, format=_unpack_format(target, fmt))
    return extract_to


def _unpack_format(path, fmt):
    """shutil's archive format for Keras's archive_format ("tar", "zip"; None: guess from the file)."""
    if fmt == "zip" or (fmt is None and path.endswith(".zip")):
        return "zip"
    return "tar"        # shutil's "tar" reads gzip, bz2 and xz compressed tars too


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True, rankdir="TB",
                 expand_nested=False, dpi=200, subgraph=False, show_layer_activations=False,
                 show_trainable=False, **kwargs):
    """The model's layers as a pydot graph (pydot + Graphviz): one node per layer in model.layers' order, each
    joined to the next (a chain: a functional model's branches are not drawn as branches)."""
    pydot = _pydot("model_to_dot")
    dot = pydot.Dot(graph_type="digraph", rankdir=rankdir, dpi=dpi)
    previous = None
    for layer in model.layers:
        label = f"{layer.name} ({type(layer).__name__})" if show_layer_names else type(layer).__name__
        if show_shapes and getattr(layer, "output", None) is not None:
            label += f"\n{tuple(getattr(layer.output, 'shape', ()))}"
        if show_dtype:
            label += f"\n{getattr(layer, 'dtype', '')}"
        dot.add_node(pydot.Node(str(id(layer)), label=label, shape="record"))
        if previous is not None:
            dot.add_edge(pydot.Edge(str(id(previous)), str(id(layer))))
        previous = layer
    return dot


def _pydot(what):
    """pydot with Graphviz's `dot` on the PATH, or Keras's ImportError naming what to install."""
    try:
        import pydot
    except ImportError:
        raise ImportError(f"You must install pydot (`pip install pydot`) for `{what}` to work.") from None
    if shutil.which("dot") is None:
        raise ImportError(f"You must install graphviz (see instructions at https://graphviz.gitlab.io/download/) "
                          f"for `{what}` to work.")
    return pydot


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False, show_layer_names=True,
               rankdir="TB", expand_nested=False, dpi=200, show_layer_activations=False, show_trainable=False,
               **kwargs):
    """Draw the model's layers into `to_file` (its extension picks the format) with pydot and Graphviz."""
    _pydot("plot_model")
    if not model.built:
        raise ValueError("This model has not yet been built. Build the model first by calling `build()` or by "
                         "calling the model on a batch of data.")
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype, show_layer_names=show_layer_names,
                       rankdir=rankdir, dpi=dpi)
    extension = os.path.splitext(to_file)[1][1:] or "png"
    dot.write(to_file, format=extension)
    return to_file
