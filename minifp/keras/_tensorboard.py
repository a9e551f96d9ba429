"""keras.callbacks.TensorBoard: Keras 3's callback, writing what Keras writes through tensorflow.summary (the same
run directories, tags, steps, plugins and values) with the `tensorboard` package instead, imported when a writer
is first needed.

Keras drives tf.summary's thread state: with an integer update_freq it keeps a default writer and a record_if
condition (the current batch count divisible by update_freq) pushed from batch to batch, and every later write,
epoch metrics and histograms included, obeys that condition. `_Summary` keeps the same stack, so the same events
are written and the same ones skipped.
"""
from __future__ import annotations

import io
import os
import time
import warnings

import numpy as np

from . import backend, ops
from ._callback import Callback

__all__ = ["TensorBoard"]


class _Writer:
    """One run directory's event file, as tf.summary.create_file_writer opens it (suffix .v2)."""

    def __init__(self, logdir):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
        self._events = EventFileWriter(logdir, max_queue_size=10, flush_secs=120, filename_suffix=".v2")

    def write(self, summary, step):
        from tensorboard.compat.proto.event_pb2 import Event
        self._events.add_event(Event(wall_time=time.time(), step=int(step), summary=summary))

    def flush(self):
        self._events.flush()

    def close(self):
        self._events.close()


class _Summary:
    """tf.summary's default writer and record_if condition as Keras's callback pushes and pops them."""

    def __init__(self):
        self.pushed = []                            # (writer, step, update_freq)

    def push(self, writer, step, update_freq):
        self.pushed.append((writer, step, update_freq))

    def pop(self):
        self.pushed.pop()

    def write(self, summary, step, writer=None):
        """Write summary at step to writer (or the pushed default writer) when the pushed condition holds."""
        if self.pushed:
            default, pushed_step, update_freq = self.pushed[-1]
            if pushed_step % update_freq != 0:
                return
            writer = writer or default
        if writer is not None:
            writer.write(summary, step)

    def scalar(self, name, value, step, writer=None):
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb
        self.write(scalar_pb(name, np.float32(value)), step, writer)

    def histogram(self, name, values, step, writer=None):
        from tensorboard.plugins.histogram.summary_v2 import histogram_pb
        self.write(histogram_pb(name, np.asarray(values, np.float64)), step, writer)

    def image(self, name, images, step, writer=None, max_outputs=3):
        self.write(_image_summary(name, images, max_outputs), step, writer)

    def model(self, model, writer):
        """The model's JSON for the graph_keras_model plugin at step 0, as keras_model_summary writes it."""
        try:
            json_string = model.to_json()
        except Exception as exc:  # noqa: BLE001 - Keras warns and writes nothing for any failure
            warnings.warn(f"Model failed to serialize as JSON. Ignoring... {exc}")
            return
        self.write(_string_summary("keras", json_string, "graph_keras_model", b"1"), 0, writer)


def _string_summary(tag, text, plugin, content):
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode()],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=plugin, content=content))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])


def _image_summary(tag, images, max_outputs):
    """tf.summary.image's tensor: width, height and up to max_outputs PNGs of float images [k, h, w, c] in [0, 1],
    converted as tf.image.convert_image_dtype(saturate=True) does (x * 255.5 in float32, clipped, truncated)."""
    from PIL import Image
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.image.metadata import create_summary_metadata
    pixels = np.clip(np.asarray(images, np.float32) * np.float32(255.5), 0, 255).astype(np.uint8)
    encoded = []
    for picture in pixels[:max_outputs]:
        with io.BytesIO() as out:
            Image.fromarray(picture[:, :, 0] if picture.shape[2] == 1 else picture).save(out, format="PNG")
            encoded.append(out.getvalue())
    strings = [str(pixels.shape[2]).encode(), str(pixels.shape[1]).encode()] + encoded
    proto = TensorProto(dtype="DT_STRING", string_val=strings,
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=len(strings))]))
    metadata = create_summary_metadata(display_name=None, description=None)
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])


def _weight_image(weight):
    """A weight as Keras's callback shows it ([k, h, w, 1] images): a vector as one n x 1 column, a matrix in its
    wider orientation, a 3-d weight (a kernel with an axis squeezed out) as one image per filter; else None."""
    w = np.squeeze(np.asarray(weight, np.float32))
    if w.ndim == 1:
        w = w.reshape(1, w.shape[0], 1, 1)
    elif w.ndim == 2:
        if w.shape[0] > w.shape[1]:
            w = w.T
        w = w.reshape(1, w.shape[0], w.shape[1], 1)
    elif w.ndim == 3:
        if backend.image_data_format() == "channels_last":
            w = np.transpose(w, [2, 0, 1])
        w = w.reshape(w.shape[0], w.shape[1], w.shape[2], 1)
    return w if w.ndim == 4 and w.shape[-1] in (1, 3, 4) else None


def _check_no_profiling(profile_batch):
    """Keras's check of a false profile_batch: an int (0), or an empty string, list or tuple it then refuses."""
    if isinstance(profile_batch, str):
        profile_batch = [int(p) for p in profile_batch.split(",")]      # "": int()'s own ValueError, as in Keras
    if not isinstance(profile_batch, int):
        raise ValueError(f"profile_batch must be a non-negative integer or 2-tuple of positive integers. A pair of "
                         f"positive integers signifies a range of batches to profile. Found: {profile_batch}")


class TensorBoard(Callback):
    """Log metrics (epoch_*, batch_*, evaluation_*_vs_iterations), weight histograms and images and the model's
    JSON for TensorBoard, in log_dir/train and log_dir/validation."""

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0, embeddings_freq=0,
                 embeddings_metadata=None):
        super().__init__()
        self.log_dir = str(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        if profile_batch:
            # Keras profiles only on its jax and tensorflow backends.
            raise ValueError(f"Profiling is not yet available with the {backend.backend()} backend. Please open a PR "
                             f"if you'd like to add this feature. Received: profile_batch={profile_batch} (must be 0)")
        _check_no_profiling(profile_batch)
        self._global_train_batch = 0
        self._global_test_batch = 0
        self._previous_epoch_iterations = 0
        self._batch_start_time = 0
        self._writers = {}
        self._summary = _Summary()

    def set_model(self, model):
        self._model = model
        self._log_write_dir = self.log_dir
        self._train_dir = os.path.join(self._log_write_dir, "train")
        self._val_dir = os.path.join(self._log_write_dir, "validation")
        self._writers = {}
        if self.write_graph and type(model).__name__ in ("Functional", "Sequential"):
            self._summary.model(model, self._train_writer)
        if self.embeddings_freq:
            self._configure_embeddings()

    @property
    def _train_writer(self):
        if "train" not in self._writers:
            self._writers["train"] = _Writer(self._train_dir)
        return self._writers["train"]

    @property
    def _val_writer(self):
        if "val" not in self._writers:
            self._writers["val"] = _Writer(self._val_dir)
        return self._writers["val"]

    def _push_writer(self, writer, step):
        if self.update_freq != "epoch":
            self._summary.push(writer, step, self.update_freq)

    def _pop_writer(self):
        if self.update_freq != "epoch":
            self._summary.pop()

    def _configure_embeddings(self):
        """projector_config.pbtxt naming each Embedding layer's weights (and its metadata file)."""
        from google.protobuf import text_format
        from tensorboard.plugins import projector
        from .layers import Embedding
        config = projector.ProjectorConfig()
        for layer in self.model.layers:
            if isinstance(layer, Embedding):
                embedding = config.embeddings.add()
                embedding.tensor_name = "layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE"
                if isinstance(self.embeddings_metadata, str):
                    embedding.metadata_path = self.embeddings_metadata
                elif self.embeddings_metadata is not None and layer.name in self.embeddings_metadata:
                    embedding.metadata_path = self.embeddings_metadata.pop(layer.name)
        if self.embeddings_metadata and not isinstance(self.embeddings_metadata, str):
            raise ValueError(f"Unrecognized `Embedding` layer names passed to `keras.callbacks.TensorBoard` "
                             f"`embeddings_metadata` argument: {self.embeddings_metadata.keys()}")
        with open(os.path.join(self._log_write_dir, "projector_config.pbtxt"), "w") as f:
            f.write(text_format.MessageToString(config))

    def on_train_begin(self, logs=None):
        self._global_train_batch = 0
        self._previous_epoch_iterations = 0
        self._push_writer(self._train_writer, self._global_train_batch)

    def on_train_end(self, logs=None):
        self._pop_writer()
        for writer in self._writers.values():
            writer.close()

    def on_test_begin(self, logs=None):
        self._push_writer(self._val_writer, self._global_test_batch)

    def on_test_end(self, logs=None):
        optimizer = self.model.optimizer
        if optimizer and hasattr(optimizer, "iterations"):
            step, writer = int(np.asarray(optimizer.iterations)), self._val_writer
            for name, value in logs.items():
                self._summary.scalar(f"evaluation_{name}_vs_iterations", value, step, writer)
        self._pop_writer()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self.update_freq != "epoch":
            self._pop_writer()
            self._push_writer(self._train_writer, self._global_train_batch)
        if self.write_steps_per_second:
            self._batch_start_time = time.time()

    def on_train_batch_end(self, batch, logs=None):
        if self.write_steps_per_second:
            self._summary.scalar("batch_steps_per_second", 1.0 / (time.time() - self._batch_start_time),
                                 self._global_train_batch)
        if isinstance(logs, dict):
            for name, value in logs.items():
                self._summary.scalar(f"batch_{name}", value, self._global_train_batch)

    def on_test_batch_begin(self, batch, logs=None):
        self._global_test_batch += 1
        if self.update_freq != "epoch":
            self._pop_writer()
            self._push_writer(self._val_writer, self._global_test_batch)

    def on_epoch_begin(self, epoch, logs=None):
        if self.write_steps_per_second:
            self._previous_epoch_iterations = float(np.asarray(self.model.optimizer.iterations))
            self._epoch_start_time = time.time()

    def on_epoch_end(self, epoch, logs=None):
        self._log_epoch_metrics(epoch, logs)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)
        if self.embeddings_freq and epoch % self.embeddings_freq == 0:
            self.model.save_weights(os.path.join(self._log_write_dir, "train",
                                                 f"keras_embedding.ckpt-{epoch}.weights.h5"))

    def _learning_rates(self):
        optimizer = getattr(self.model.optimizer, "inner_optimizer", self.model.optimizer)
        if optimizer is None or not hasattr(optimizer, "learning_rate"):
            return {}
        return {"learning_rate": float(np.asarray(ops.convert_to_numpy(optimizer.learning_rate)))}

    def _log_epoch_metrics(self, epoch, logs):
        if not logs:
            return
        train_logs = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val_logs = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        train_logs.update(self._learning_rates())
        if self.write_steps_per_second:
            iterations = float(np.asarray(self.model.optimizer.iterations))
            train_logs["steps_per_second"] = float(np.float32(iterations - self._previous_epoch_iterations)
                                                   / np.float32(time.time() - self._epoch_start_time))
        for name, value in train_logs.items():
            self._summary.scalar(f"epoch_{name}", value, epoch, self._train_writer)
        for name, value in val_logs.items():
            self._summary.scalar(f"epoch_{name}", value, epoch, self._val_writer)

    def _log_weights(self, epoch):
        for layer in self.model.layers:
            for weight in layer.weights:
                name = weight.path.replace(":", "_")
                values = ops.convert_to_numpy(weight)
                self._summary.histogram(f"{name}/histogram", values, epoch, self._train_writer)
                image = _weight_image(values) if self.write_images else None
                if image is not None:
                    self._summary.image(f"{name}/image", image, epoch, self._train_writer)
        self._train_writer.flush()
