"""torch.utils.tensorboard.summary: the Summary protocol buffers SummaryWriter writes, built with the `tensorboard`
package's protos as PyTorch builds them (old-style scalars and histograms, PNG images; the text, hparams, pr_curves
and custom_scalars plugins).
NumPy arithmetic only: logging reads tensors' values and computes nothing in an emulated format."""
from __future__ import annotations

import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

from ..._tensor import Tensor, bfloat16, float16

__all__ = ["make_np", "scalar", "histogram", "histogram_raw", "make_histogram", "image", "make_image", "text",
           "hparams", "custom_scalars", "pr_curve", "pr_curve_raw", "compute_curve", "convert_to_HWC", "make_grid"]


def make_np(x):
    """A NumPy array of x (an array, a Python or NumPy number, or a tensor), as PyTorch's make_np gives it."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        if x.dtype == bfloat16:
            x = x.to(float16)                   # as PyTorch, whose .numpy() refuses bfloat16 (past 65504: inf)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    """One scalar: simple_value (old style) or a float tensor for the scalars plugin (new style)."""
    value = make_np(tensor).squeeze()
    if value.ndim != 0:
        # PyTorch's message keeps its source line's indentation inside the string.
        raise AssertionError(f"Tensor should contain one element (0 dimensions).             Was given size: "
                             f"{value.size} and {value.ndim} dimensions.")
    value = float(value)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[value], dtype="DT_FLOAT"))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=metadata)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """A histogram from its statistics and buckets, as given."""
    histo = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares, bucket_limit=bucket_limits,
                           bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=histo)])


def histogram(name, values, bins, max_bins=None):
    """A histogram of values (as float64) over bins (edges, a count, or a NumPy rule name)."""
    histo = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=histo)])


def make_histogram(values, bins, max_bins=None):
    """HistogramProto of values: NumPy's counts, merged to at most max_bins, cut to the occupied buckets."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        counts, limits = _merge_buckets(counts, limits, len(counts) // max_bins)
    counts, limits = _occupied(counts, limits)
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def _merge_buckets(counts, limits, group):
    """Counts summed in runs of `group` buckets (the last run padded with empty ones), limits at each run's start."""
    counts = np.pad(counts, (0, -len(counts) % group))
    counts = counts.reshape(-1, group).sum(axis=-1)
    merged = np.empty(counts.size + 1, limits.dtype)
    merged[:-1] = limits[:-1:group]
    merged[-1] = limits[-1]
    return counts, merged


def _occupied(counts, limits):
    """The buckets from the first to the last non-empty one, after the (empty or partial) one before them.

    TensorBoard's bucket_limit are right edges: the first kept count is whatever lies left of the first occupied
    bucket (a zero when that is the first bucket). PyTorch finds the range with searchsorted on the running count of
    non-empty buckets, which also decides what an all-empty histogram keeps."""
    running = np.cumsum(counts > 0)
    start, end = np.searchsorted(running, [0, running[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    kept = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    return kept, limits[start:end + 1]


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """One PNG image of tensor (values in [0, 1], or uint8 in [0, 255]); a batch is tiled into one grid."""
    array = convert_to_HWC(make_np(tensor), dataformats)
    scale = 1 if array.dtype == np.uint8 else 255
    array = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(array, rescale=rescale))])


def make_image(tensor, rescale=1):
    """Summary.Image of an HWC uint8 array, PNG-encoded by Pillow."""
    from PIL import Image
    height, width, channels = tensor.shape
    picture = Image.fromarray(tensor).resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    with io.BytesIO() as out:
        picture.save(out, format="PNG")
        encoded = out.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=encoded)


def make_grid(images, ncols=8):
    """NCHW images (1 or 3 channels) tiled row by row into one CHW canvas of at most ncols columns."""
    if not isinstance(images, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(n / ncols))
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        row, col = divmod(i, ncols)
        canvas[:, row * h:(row + 1) * h, col * w:(col + 1) * w] = images[i]
    return canvas


def convert_to_HWC(tensor, input_format):
    """tensor (laid out as input_format: NCHW-like, CHW-like or HW-like) as one HWC image of 3 (or 4) channels."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice.             input_format: "
                             f"{input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different.         tensor shape: "
                             f"{tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        grid = make_grid(tensor.transpose([input_format.find(c) for c in "NCHW"]))
        return grid.transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, 2) if hwc.shape[2] == 1 else hwc
    if len(input_format) == 2:
        return np.stack([tensor.transpose([input_format.find(c) for c in "HW"])] * 3, 2)
    return None


def text(tag, text):
    """A string for the text plugin, under tag + "/text_summary"."""
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=proto)])


def custom_scalars(layout):
    """The custom-scalars plugin's layout: {category: {title: ["Multiline" or "Margin", tags]}}."""
    from tensorboard.plugins.custom_scalar import layout_pb2
    categories = []
    for category, charts in layout.items():
        made = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                made.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            else:
                made.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=made))
    proto = TensorProto(dtype="DT_STRING", string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=TensorShapeProto())
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="custom_scalars"))
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto, metadata=metadata)])


# -- hparams --------------------------------------------------------------------------------------------------------

def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The hparams plugin's three summaries (experiment, session start, session end) for one run."""
    from tensorboard.plugins.hparams.api_pb2 import Experiment, MetricInfo, MetricName
    from tensorboard.plugins.hparams.metadata import (EXPERIMENT_TAG, SESSION_END_INFO_TAG,
                                                      SESSION_START_INFO_TAG)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo
    for name, value in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict)):
        if not isinstance(value, dict):
            raise TypeError(f"parameter: {name} should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    _check_domains(hparam_dict, domains)
    start = SessionStartInfo()
    infos = [_hparam(start, name, value, domains) for name, value in hparam_dict.items() if value is not None]
    experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k))
                                                              for k in metric_dict])
    end = SessionEndInfo(status="STATUS_SUCCESS")
    return (_hparams_summary(EXPERIMENT_TAG, HParamsPluginData(experiment=experiment)),
            _hparams_summary(SESSION_START_INFO_TAG, HParamsPluginData(session_start_info=start)),
            _hparams_summary(SESSION_END_INFO_TAG, HParamsPluginData(session_end_info=end)))


def _check_domains(hparam_dict, domains):
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, values in domains.items():
        if (k not in hparam_dict or not isinstance(values, list)
                or not all(isinstance(d, type(hparam_dict[k])) for d in values)):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")


def _hparam(start, name, value, domains):
    """Record value in start.hparams and return its HParamInfo; bools are ints, so numbers (as in PyTorch)."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import HParamInfo
    if isinstance(value, Tensor):
        start.hparams[name].number_value = make_np(value)[0]
        return HParamInfo(name=name, type="DATA_TYPE_FLOAT64")
    for kinds, field, data_type in (((int, float), "number_value", "DATA_TYPE_FLOAT64"),
                                    (str, "string_value", "DATA_TYPE_STRING")):
        if isinstance(value, kinds):
            setattr(start.hparams[name], field, value)
            domain = (struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domains[name]])
                      if name in domains else None)
            return HParamInfo(name=name, type=data_type, domain_discrete=domain)
    raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")


def _hparams_summary(tag, content):
    from tensorboard.plugins.hparams.metadata import PLUGIN_DATA_VERSION, PLUGIN_NAME
    content.version = PLUGIN_DATA_VERSION
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=PLUGIN_NAME,
                                                                      content=content.SerializeToString()))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])


# -- precision-recall curves ----------------------------------------------------------------------------------------

def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """The pr_curves plugin's table of (TP, FP, TN, FN, precision, recall) at num_thresholds (at most 127)."""
    num_thresholds = min(num_thresholds, 127)
    return _pr_summary(tag, compute_curve(labels, predictions, num_thresholds, weights), num_thresholds)


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    """The same table from counts computed elsewhere."""
    return _pr_summary(tag, np.stack((tp, fp, tn, fn, precision, recall)), min(num_thresholds, 127))


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """Counts by threshold: predictions bucketed by floor(p * (n - 1)), then summed from the top bucket down."""
    weights = 1.0 if weights is None else weights
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp = np.cumsum(np.histogram(buckets, bins=num_thresholds, range=span, weights=positive * weights)[0][::-1])[::-1]
    fp = np.cumsum(np.histogram(buckets, bins=num_thresholds, range=span,
                                weights=(1.0 - positive) * weights)[0][::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    smallest = 1e-7                             # a floor on the denominators, so that 0 / 0 is 0
    return np.stack((tp, fp, tn, fn, tp / np.maximum(smallest, tp + fp), tp / np.maximum(smallest, tp + fn)))


def _pr_summary(tag, data, num_thresholds):
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="pr_curves", content=content))
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(), tensor_shape=TensorShapeProto(
        dim=[TensorShapeProto.Dim(size=data.shape[0]), TensorShapeProto.Dim(size=data.shape[1])]))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=proto)])
