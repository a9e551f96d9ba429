"""Record real PyTorch's SummaryWriter and Keras 3's TensorBoard callback into tests/fixtures/pytorch/tensorboard.json
and tests/fixtures/keras/tensorboard.json; tests/torch/test_tensorboard.py and tests/keras/test_tensorboard.py run the
same scripts with minifp into a temporary directory and compare what TensorBoard reads back.

    /work/torchenv/bin/python tools/record_tensorboard.py            # needs `pip install tensorboard`

Keras 3's callback writes through tensorflow.summary, so its half needs TensorFlow importable too (`pip install
tensorflow-cpu`; it was recorded with TensorFlow 2.21 from a --target directory on PYTHONPATH, Keras on the torch
backend); without TensorFlow only the PyTorch fixture is written.

`read_logdir` is what both sides compare: for every directory holding event files, the files' suffixes, each
event's step and kind in order (wall times left out), and through tensorboard's EventAccumulator every tag's
scalars, histograms (min, max, num, sum, sum_squares, bucket limits and counts), images (size and the decoded
pixels' SHA-256), tensors (strings and numbers) and plugin metadata (hparams decoded), plus any other files.
Timestamps and the host name in directory names are replaced by <time> and <host>.
"""
import hashlib
import io
import json
import os
import re
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT_TORCH = ROOT / "tests" / "fixtures" / "pytorch" / "tensorboard.json"
OUT_KERAS = ROOT / "tests" / "fixtures" / "keras" / "tensorboard.json"


def _f32(a):
    return np.asarray(a, np.float32)


def _data():
    """The arrays every script logs (float32, drawn once)."""
    rng = np.random.default_rng(15)
    return {"losses": _f32(rng.uniform(0.1, 2.0, 12)), "randn": _f32(rng.standard_normal(64)),
            "wide": _f32(rng.standard_normal(16) * 1e3), "image": _f32(rng.uniform(-0.2, 1.2, (3, 4, 5))),
            "gray": _f32(rng.uniform(0, 1, (5, 6))), "batch": _f32(rng.uniform(0, 1, (10, 1, 4, 3))),
            "rgb_batch": _f32(rng.uniform(0, 1, (3, 3, 2, 2))), "bytes": rng.integers(0, 256, (4, 4, 3)),
            "points": _f32(rng.standard_normal((6, 3)))}


# -- PyTorch: each script logs into log_dir with `torch` and `SummaryWriter` (real or minifp's) ---------------------

def _scalars(torch, SummaryWriter, log_dir):
    d = _data()
    losses, randn = torch.tensor(d["losses"], requires_grad=True), torch.tensor(d["randn"])
    writer = SummaryWriter(log_dir)
    for i in range(12):
        writer.add_scalar("Loss/train", losses[i] * 2 + 1, i)            # tensor arithmetic, as a training loop
        writer.add_scalar("Loss/test", float(d["losses"][i]) / 3, i)
    writer.add_scalar("types/int", 7, 0)
    writer.add_scalar("types/numpy", np.float64(1) / 3, 0)
    writer.add_scalar("types/half", randn[0].half(), 0)
    writer.add_scalar("types/bfloat16", randn[1].bfloat16(), 0)
    writer.add_scalar("types/shape11", randn[:1].reshape(1, 1), 0)
    writer.add_scalar("types/nostep", 2.5)
    writer.add_scalar("types/walltime", 1.25, 3, walltime=1e9)
    writer.add_scalar("new/float", 1 / 3, 1, new_style=True)
    writer.add_scalar("new/double", 1 / 3, 1, new_style=True, double_precision=True)
    writer.add_scalars("run_14h", {"xsinx": losses[0] * 3, "xcosx": 0.5, "tanx": -1.0}, 4)
    writer.add_scalars("a/b", {"c": 1.0}, 5)
    writer.flush()
    writer.close()


def _histograms(torch, SummaryWriter, log_dir):
    d = _data()
    randn = torch.tensor(d["randn"])
    positive = randn.abs() + 0.5                # few of the default exponential buckets: a small fixture
    with SummaryWriter(log_dir) as writer:
        writer.add_histogram("weights", randn, 0)
        writer.add_histogram("weights", positive * 2, 1)
        writer.add_histogram("half", positive.half(), 0)
        writer.add_histogram("bfloat16", positive.bfloat16(), 0)
        writer.add_histogram("numpy", np.abs(d["wide"]) + 1, 0)
        writer.add_histogram("bins10", randn, 0, bins=10)
        writer.add_histogram("auto", randn, 0, bins="auto")
        writer.add_histogram("maxbins", positive, 0, max_bins=7)
        writer.add_histogram("zeros", torch.zeros(5), 0)
        writer.add_histogram("ints", torch.arange(1, 11), 0)
        writer.add_histogram_raw("raw", min=0.0, max=9.0, num=10, sum=45.0, sum_squares=285.0,
                                 bucket_limits=[3.0, 6.0, 9.0], bucket_counts=[3, 3, 4], global_step=2)


def _images(torch, SummaryWriter, log_dir):
    d = _data()
    with SummaryWriter(log_dir) as writer:
        writer.add_image("chw", torch.tensor(d["image"]), 0)
        writer.add_image("hwc", torch.tensor(d["image"]).permute(1, 2, 0), 0, dataformats="HWC")
        writer.add_image("hw", torch.tensor(d["gray"]), 0, dataformats="HW")
        writer.add_image("one_channel", torch.tensor(d["gray"]).unsqueeze(0), 1)
        writer.add_image("uint8", torch.tensor(d["bytes"]).to(torch.uint8), 0, dataformats="HWC")
        writer.add_image("numpy", d["image"], 0)
        writer.add_image("half", torch.tensor(d["image"]).half(), 0)
        writer.add_images("batch", torch.tensor(d["batch"]), 0)
        writer.add_images("nhwc", torch.tensor(d["rgb_batch"]).permute(0, 2, 3, 1), 0, dataformats="NHWC")


def _text_and_layout(torch, SummaryWriter, log_dir):
    with SummaryWriter(log_dir) as writer:
        writer.add_text("notes", "lr = 0.1, **float16**", 0)
        writer.add_text("notes", "über 3 € — 第二", 1)
        writer.add_custom_scalars({"Training": {"loss": ["Multiline", ["Loss/train", "Loss/test"]]}})
        writer.add_custom_scalars_marginchart(["m", "lo", "hi"], category="c", title="t")
        writer.add_custom_scalars_multilinechart(["a", "b"])


def _hparams(torch, SummaryWriter, log_dir):
    with SummaryWriter(log_dir) as writer:
        for i in range(2):
            writer.add_hparams({"lr": 0.1 * i, "bsize": i, "opt": "sgd", "amp": True, "none": None},
                               {"hparam/accuracy": 10 * i, "hparam/loss": torch.tensor(0.5) * i},
                               run_name=f"trial{i}")
        writer.add_hparams({"lr": torch.tensor([0.25]), "opt": "adam"}, {"hparam/m": 1.0},
                           hparam_domain_discrete={"opt": ["sgd", "adam"]}, run_name="discrete", global_step=3)
        writer.add_hparams({"lr": 0.5}, {"hparam/m": 2.0})                       # run name: a timestamp


def _purge(torch, SummaryWriter, log_dir):
    with SummaryWriter(log_dir) as writer:
        for step in range(6):
            writer.add_scalar("x", step * 1.5, step)
    with SummaryWriter(log_dir, purge_step=3) as writer:        # a crashed run restarted from step 3
        for step in range(3, 5):
            writer.add_scalar("x", step * 10.0, step)


def _lifecycle(torch, SummaryWriter, log_dir):
    writer = SummaryWriter(log_dir, comment="ignored", filename_suffix=".tb", max_queue=2, flush_secs=1)
    writer.add_scalar("y", 1.0, 0)
    writer.close()
    writer.close()                                              # a second close does nothing
    writer.add_scalar("y", 2.0, 1)                              # and a later add opens a new event file
    writer.flush()
    writer.close()
    os.chdir(log_dir)                                           # the default log_dir: runs/<date>_<host><comment>
    with SummaryWriter(comment="_lr0.1") as writer:
        writer.add_scalar("z", 3.0, 0)


def _embedding(torch, SummaryWriter, log_dir):
    d = _data()
    points = torch.tensor(d["points"])
    with SummaryWriter(log_dir) as writer:
        writer.add_embedding(points, metadata=list("abcdef"), global_step=1)
        writer.add_embedding(points * 2, metadata=[[str(i), "even" if i % 2 == 0 else "odd"] for i in range(6)],
                             metadata_header=["n", "parity"], tag="with/slash")
        writer.add_embedding(points, label_img=torch.tensor(d["rgb_batch"]).repeat(2, 1, 1, 1), tag="sprites")


def _figure(torch, SummaryWriter, log_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figures = []
    for k in range(3):
        figure = plt.figure(figsize=(2, 1.5), dpi=40)
        plt.plot([0, 1, 2], [k, 1, 0])
        figures.append(figure)
    with SummaryWriter(log_dir) as writer:
        writer.add_figure("one", figures[0], 0)
        writer.add_figure("many", figures[1:], 1)
    plt.close("all")


def _pr_curves(torch, SummaryWriter, log_dir):
    rng = np.random.default_rng(7)
    probs = torch.tensor(_f32(rng.uniform(0, 1, (40, 3))))
    truth = torch.tensor(rng.integers(0, 3, 40))
    with SummaryWriter(log_dir) as writer:
        writer.add_pr_curve("class0", truth == 0, probs[:, 0], global_step=0)        # as the tutorial
        for k in (1, 2):
            writer.add_pr_curve(f"class{k}", truth == k, probs[:, k], global_step=0, num_thresholds=16)
        writer.add_pr_curve("coarse", (truth == 0).int(), probs[:, 0], 1, num_thresholds=5)
        writer.add_pr_curve("capped", truth == 1, probs[:, 1], 1, num_thresholds=500)   # at most 127
        writer.add_pr_curve("weighted", np.arange(6) % 2, np.linspace(0, 1, 6), 2, num_thresholds=4,
                            weights=np.array([1.0, 2, 3, 4, 5, 6]))
        writer.add_pr_curve_raw("raw", [3, 2, 0], [4, 1, 0], [0, 3, 4], [0, 1, 3], [0.4, 0.6, 1.0], [1.0, 0.7, 0.0],
                                3, num_thresholds=3)


def torch_scripts():
    """{name: script(torch, SummaryWriter, log_dir)}."""
    return {"scalars": _scalars, "histograms": _histograms, "images": _images, "text_and_layout": _text_and_layout,
            "hparams": _hparams, "purge": _purge, "lifecycle": _lifecycle, "embedding": _embedding,
            "figure": _figure, "pr_curves": _pr_curves}


def torch_errors():
    """{name: bad call(torch, writer, log_dir)}: each raises; its type and message are recorded."""
    t = np.ones((2, 3), np.float32)
    return {
        "scalar_many": lambda torch, w, d: w.add_scalar("x", torch.ones(4), 0),
        "scalar_list": lambda torch, w, d: w.add_scalar("x", [1.0], 0),
        "scalar_string": lambda torch, w, d: w.add_scalar("x", "abc", 0),
        "histogram_empty": lambda torch, w, d: w.add_histogram("h", torch.zeros(0), 0),
        "histogram_raw_lengths": lambda torch, w, d: w.add_histogram_raw("h", 0, 1, 2, 1, 1, [1.0], [1, 1]),
        "image_rank": lambda torch, w, d: w.add_image("i", torch.tensor(t), 0),
        "image_repeated_format": lambda torch, w, d: w.add_image("i", torch.tensor(t), 0, dataformats="HH"),
        "images_channels": lambda torch, w, d: w.add_images("i", torch.zeros(2, 2, 3, 3), 0),
        "hparams_not_dict": lambda torch, w, d: w.add_hparams([("lr", 1)], {"m": 1}),
        "hparams_value": lambda torch, w, d: w.add_hparams({"lr": [1, 2]}, {"m": 1}),
        "hparams_domain": lambda torch, w, d: w.add_hparams({"opt": "sgd"}, {"m": 1},
                                                            hparam_domain_discrete={"opt": [1, 2]}),
        "hparams_domain_type": lambda torch, w, d: w.add_hparams({"opt": "sgd"}, {"m": 1},
                                                                 hparam_domain_discrete=[1]),
        "margin_tags": lambda torch, w, d: w.add_custom_scalars_marginchart(["a", "b"]),
        "embedding_rank": lambda torch, w, d: w.add_embedding(torch.zeros(2, 3, 4)),
        "embedding_labels": lambda torch, w, d: w.add_embedding(torch.zeros(2, 3), metadata=["a"]),
        "embedding_header": lambda torch, w, d: w.add_embedding(torch.zeros(1, 3), metadata=[["a", "b"]],
                                                                metadata_header=["x"], global_step=9),
    }


# -- Keras 3: each script builds, trains and evaluates a model with the TensorBoard callback ------------------------

def _keras_weights(shapes):
    rng = np.random.default_rng(3)
    return [_f32(rng.uniform(-0.6, 0.6, s)) for s in shapes]


def _keras_xy(n=10, shape=(3,)):
    rng = np.random.default_rng(4)
    return _f32(rng.uniform(-1, 1, (n,) + shape)), _f32(rng.uniform(-1, 1, (n, 1)))


def _dense_model(keras):
    keras.backend.clear_session()               # layer names (the tags) start again from "dense"
    inputs = keras.Input((3,))
    hidden = keras.layers.Dense(4, activation="relu")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    model.set_weights(_keras_weights([(3, 4), (4,), (4, 1), (1,)]))
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return model


def _keras_batches(keras, log_dir):
    x, y = _keras_xy()
    model = _dense_model(keras)
    board = keras.callbacks.TensorBoard(log_dir=log_dir, histogram_freq=1, write_images=True, update_freq=2)
    model.fit(x, y, batch_size=4, epochs=2, validation_split=0.2, callbacks=[board], verbose=0, shuffle=False)


def _keras_skipped(keras, log_dir):
    x, y = _keras_xy()
    model = _dense_model(keras)
    board = keras.callbacks.TensorBoard(log_dir=log_dir, histogram_freq=1, update_freq=3)
    model.fit(x, y, batch_size=4, epochs=3, validation_split=0.2, callbacks=[board], verbose=0, shuffle=False)


def _keras_epochs(keras, log_dir):
    x, y = _keras_xy()
    model = _dense_model(keras)
    board = keras.callbacks.TensorBoard(log_dir=log_dir)
    model.fit(x, y, batch_size=5, epochs=3, validation_data=(x[:4], y[:4]), callbacks=[board], verbose=0,
              shuffle=False)
    model.evaluate(x, y, batch_size=5, callbacks=[board], verbose=0)


def _keras_every_batch(keras, log_dir):
    x, y = _keras_xy()
    model = _dense_model(keras)
    board = keras.callbacks.TensorBoard(log_dir=log_dir, histogram_freq=2, write_graph=False, update_freq="batch",
                                        write_steps_per_second=True)
    model.fit(x, y, batch_size=3, epochs=3, callbacks=[board], verbose=0, shuffle=False)


def _keras_conv(keras, log_dir):
    x = _f32(np.random.default_rng(5).uniform(0, 1, (4, 5, 5, 1)))
    y = _f32(np.random.default_rng(6).uniform(0, 1, (4, 2)))
    keras.backend.clear_session()
    inputs = keras.Input((5, 5, 1))
    features = keras.layers.Flatten()(keras.layers.Conv2D(4, 3)(inputs))
    model = keras.Model(inputs, keras.layers.Dense(2)(features))
    model.set_weights(_keras_weights([(3, 3, 1, 4), (4,), (36, 2), (2,)]))
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")     # the weights stay the ones set
    board = keras.callbacks.TensorBoard(log_dir=log_dir, histogram_freq=1, write_images=True)
    model.fit(x, y, batch_size=2, epochs=1, callbacks=[board], verbose=0, shuffle=False)


def _keras_embedding(keras, log_dir):
    keras.backend.clear_session()
    inputs = keras.Input((3,))
    features = keras.layers.Flatten()(keras.layers.Embedding(5, 2)(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1)(features))
    model.set_weights(_keras_weights([(5, 2), (6, 1), (1,)]))
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    board = keras.callbacks.TensorBoard(log_dir=log_dir, write_graph=False, embeddings_freq=2,
                                        embeddings_metadata={"embedding": "words.tsv"})
    x = np.random.default_rng(8).integers(0, 5, (4, 3))
    os.makedirs(log_dir)                        # Keras writes projector_config.pbtxt into it before any writer
    model.fit(x, _f32(np.ones((4, 1))), batch_size=2, epochs=3, callbacks=[board], verbose=0, shuffle=False)


def keras_scripts():
    """{name: script(keras, log_dir)}."""
    return {"batches": _keras_batches, "skipped": _keras_skipped, "epochs": _keras_epochs,
            "every_batch": _keras_every_batch, "conv": _keras_conv, "embedding": _keras_embedding}


def keras_errors():
    """{name: bad construction(keras)}."""
    return {"profile_negative": lambda keras: keras.callbacks.TensorBoard(profile_batch=-1),
            "profile_order": lambda keras: keras.callbacks.TensorBoard(profile_batch=(3, 2)),
            "profile_string": lambda keras: keras.callbacks.TensorBoard(profile_batch="1,2,3"),
            "profile_none": lambda keras: keras.callbacks.TensorBoard(profile_batch=None),
            "profile_empty": lambda keras: keras.callbacks.TensorBoard(profile_batch=""),
            "profile_empty_tuple": lambda keras: keras.callbacks.TensorBoard(profile_batch=()),
            "profile_float": lambda keras: keras.callbacks.TensorBoard(profile_batch=0.0)}


# -- what TensorBoard reads back -----------------------------------------------------------------------------------

def _normalise(path):
    """A path relative to its log root with the timestamps and host name of default names replaced."""
    path = re.sub(r"[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(socket.gethostname()), "<date>_<host>", path)
    return re.sub(r"\d{9,}\.\d+", "<time>", path)


def _pixels(encoded):
    from PIL import Image
    array = np.asarray(Image.open(io.BytesIO(encoded)))
    return {"shape": list(array.shape), "sha256": hashlib.sha256(array.tobytes()).hexdigest()}


def _events(path):
    """Each event of one file: [step, kind, tags] (wall time left out)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    out = []
    for event in EventFileLoader(str(path)).Load():
        kind = event.WhichOneof("what")
        tags = [v.tag for v in event.summary.value] if kind == "summary" else []
        detail = event.file_version if kind == "file_version" else (
            int(event.session_log.status) if kind == "session_log" else tags)
        out.append([int(event.step), kind, detail])
    return out


def _tensor(proto, plugin):
    from tensorboard.util import tensor_util
    value = tensor_util.make_ndarray(proto)
    if value.dtype == object:
        strings = value.reshape(-1).tolist()
        if plugin == "images":                                # width, height, PNGs (tf.summary.image)
            return [s.decode() for s in strings[:2]] + [_pixels(s) for s in strings[2:]]
        if plugin == "graph_keras_model":
            return [json.loads(s) for s in strings]
        return [s.decode("utf-8", "replace") if plugin != "custom_scalars" else s.hex() for s in strings]
    return {"dtype": str(value.dtype), "shape": list(value.shape), "values": value.reshape(-1).tolist()}


def _run(paths):
    """What EventAccumulator reads from one directory's event files (paths, in the order they were made).

    EventAccumulator reads a directory's files in name order, where a process's tenth file (".10") comes before
    its ninth and a restart's purge would then apply backwards; it reads copies named in creation order instead."""
    from tensorboard.backend.event_processing import event_accumulator as ea
    with tempfile.TemporaryDirectory() as copies:
        for i, path in enumerate(paths):
            shutil.copyfile(path, os.path.join(copies, f"events.out.tfevents.{i:06d}"))
        acc = ea.EventAccumulator(copies, size_guidance={k: 0 for k in (
            ea.SCALARS, ea.HISTOGRAMS, ea.IMAGES, ea.TENSORS, ea.COMPRESSED_HISTOGRAMS, ea.AUDIO)})
        acc.Reload()
    tags = acc.Tags()
    run = {"scalars": {t: [[e.step, e.value] for e in acc.Scalars(t)] for t in sorted(tags["scalars"])},
           "histograms": {t: [_histogram(e) for e in acc.Histograms(t)] for t in sorted(tags["histograms"])},
           "images": {t: [[e.step, e.width, e.height, _pixels(e.encoded_image_string)] for e in acc.Images(t)]
                      for t in sorted(tags["images"])},
           "tensors": {}, "plugins": {}}
    for t in sorted(tags["tensors"]):
        plugin = acc.SummaryMetadata(t).plugin_data.plugin_name
        run["tensors"][t] = [[e.step, plugin, _tensor(e.tensor_proto, plugin)] for e in acc.Tensors(t)]
    for plugin in ("hparams", "text", "scalars", "images", "histograms", "custom_scalars", "graph_keras_model"):
        contents = acc.PluginTagToContent(plugin) if plugin in acc._plugin_to_tag_to_content else {}
        if contents:
            run["plugins"][plugin] = {t: _content(plugin, c) for t, c in sorted(contents.items())}
    return run


def _histogram(event):
    h = event.histogram_value
    return {"step": event.step, "min": h.min, "max": h.max, "num": h.num, "sum": h.sum,
            "sum_squares": h.sum_squares, "bucket_limit": list(h.bucket_limit), "bucket": list(h.bucket)}


def _content(plugin, content):
    if plugin == "hparams":
        from google.protobuf import json_format
        from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData
        return json_format.MessageToDict(HParamsPluginData.FromString(content))
    return content.hex()


def _creation(name):
    """An event file's creation order: its time stamp, then the writing process's count of files."""
    stamp, _, rest = name.partition(".tfevents.")[2].partition(".")
    return int(stamp), [int(p) for p in re.findall(r"\.(\d+)\.(\d+)", "." + rest)[-1]]


def read_logdir(root):
    """{relative dir: {"files": [suffixes], "events": [...], and EventAccumulator's view}, "other": {file: text}}."""
    root = Path(root)
    runs, other = {}, {}
    host = re.escape(socket.gethostname())
    for directory, _, names in sorted(os.walk(root)):
        rel = _normalise(os.path.relpath(directory, root))
        events = sorted((n for n in names if ".tfevents." in n), key=_creation)
        for name in sorted(set(names) - set(events)):
            data = (Path(directory) / name).read_bytes()
            other[_normalise(os.path.join(rel, name))] = (_pixels(data) if name.endswith(".png") else
                                                          "<weights>" if name.endswith(".h5") else data.decode())
        if events:
            run = {"files": [re.sub(r"^events\.out\.tfevents\.\d+\." + host + r"\.\d+\.\d+", "", n) for n in events],
                   "events": [_events(Path(directory) / n) for n in events]}
            run.update(_run([Path(directory) / n for n in events]))
            runs[rel] = run
    return {"runs": runs, "other": other}


def run_torch_script(script, torch, SummaryWriter, log_dir):
    """Run one script in log_dir (restoring the working directory) and read back what it wrote."""
    cwd = os.getcwd()
    try:
        script(torch, SummaryWriter, str(log_dir))
    finally:
        os.chdir(cwd)
    return read_logdir(log_dir)


def error_of(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the recorded behaviour is the exception
        return [type(e).__name__, str(e)]
    return None


def _record_torch():
    import torch
    from torch.utils.tensorboard import SummaryWriter
    out = {"scripts": {}, "errors": {}}
    for name, script in torch_scripts().items():
        with tempfile.TemporaryDirectory() as tmp:
            out["scripts"][name] = run_torch_script(script, torch, SummaryWriter, Path(tmp) / "logs")
    for name, call in torch_errors().items():
        with tempfile.TemporaryDirectory() as tmp:
            writer = SummaryWriter(tmp)
            out["errors"][name] = error_of(lambda: call(torch, writer, tmp))
            writer.close()
    return out


def _without_timings(result):
    """The steps-per-second values left out (timings: a re-recording would change them)."""
    for run in result["runs"].values():
        for tag in ("batch_steps_per_second", "epoch_steps_per_second"):
            for event in run["tensors"].get(tag, []):
                event[2]["values"] = None
    return result


def _record_keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras
    out = {"backend": keras.backend.backend(), "scripts": {}, "errors": {}}
    for name, script in keras_scripts().items():
        with tempfile.TemporaryDirectory() as tmp:
            script(keras, str(Path(tmp) / "logs"))
            out["scripts"][name] = _without_timings(read_logdir(Path(tmp) / "logs"))
    out["errors"] = {name: error_of(lambda: call(keras)) for name, call in keras_errors().items()}
    return out


def _write(path, data):
    path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def main():
    _write(OUT_TORCH, _record_torch())
    try:
        import tensorflow  # noqa: F401 - Keras's callback writes through tf.summary
    except ImportError:
        print("TensorFlow is not importable: the Keras fixture is not recorded", file=sys.stderr)
        return
    _write(OUT_KERAS, _record_keras())


if __name__ == "__main__":
    main()
