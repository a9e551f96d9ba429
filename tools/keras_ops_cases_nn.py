"""keras.ops nn, math and core cases (keras/src/ops/nn.py, math.py, core.py, linalg.norm), recorded by
tools/record_keras_ops.py.

CASES: (keras.ops name, args, kwargs[, options]) with arrays written as A(shape, dtype, kind) or A.of(values, dtype);
options {"halves": False} skips the float16/bfloat16 variants of a float32 case. Control flow that takes Python
functions (cond, scan, map, ...) is tested in tests/keras/test_ops_nn_core.py instead.
"""
from keras_ops_spec import A

NOHALF = {"halves": False}

CASES = []


def case(name, *args, _opts=None, **kwargs):
    """Append one case."""
    CASES.append((name, args, kwargs) + ((_opts,) if _opts else ()))


# -- activations ---------------------------------------------------------------------------------------------
for name in ["relu", "relu6", "sigmoid", "softplus", "softsign", "silu", "swish", "log_sigmoid", "leaky_relu",
             "hard_sigmoid", "hard_silu", "hard_swish", "elu", "selu", "gelu", "celu"]:
    case(name, A((3, 4)))
    case(name, A.of([-10.0, -3.0, -0.5, 0.0, 0.5, 3.0, 6.5, 10.0]))
    case(name, A((2, 3), "int32"), _opts=NOHALF)
case("leaky_relu", A((3, 4)), negative_slope=0.1)
case("elu", A((3, 4)), alpha=0.5)
case("celu", A((3, 4)), alpha=2.0)
case("gelu", A((3, 4)), approximate=False)
case("gelu", A.of([-10.0, -3.0, -0.5, 0.0, 0.5, 3.0, 6.5, 10.0]), approximate=False)
case("glu", A((3, 4)))
case("glu", A((4, 2, 3)), axis=0)
case("glu", A((3, 5)), _opts=NOHALF)                     # an odd axis: Keras refuses
for name in ["softmax", "log_softmax"]:
    case(name, A((3, 4)))
    case(name, A((2, 3, 4)), axis=1)
    case(name, A((2, 3, 4)), axis=(1, 2))
    case(name, A.of([[1000.0, 0.0, -1000.0], [1.0, 1.0, 1.0]]))
    case(name, A((2, 3), "int32"), _opts=NOHALF)

# -- pooling -------------------------------------------------------------------------------------------------
for name in ["max_pool", "average_pool"]:
    case(name, A((2, 6, 6, 3)), 2)
    case(name, A((2, 7, 5, 2)), (3, 2), strides=(2, 1), padding="same")
    case(name, A((2, 7, 5, 2)), 3, strides=2, padding="valid")
    case(name, A((1, 5, 5, 2)), 2, strides=1, padding="same")
    case(name, A((2, 9, 3)), 3, strides=2)
    case(name, A((2, 9, 3)), 2, padding="same")
    case(name, A((2, 3, 6, 6)), 2, data_format="channels_first", _opts=NOHALF)
    case(name, A((2, 6, 6, 3)), 2, padding="full", _opts=NOHALF)

# -- convolutions --------------------------------------------------------------------------------------------
case("conv", A((2, 6, 6, 3)), A((3, 3, 3, 4)))
case("conv", A((2, 7, 6, 3)), A((3, 2, 3, 4)), strides=2, padding="same")
case("conv", A((2, 7, 7, 2)), A((3, 3, 2, 2)), dilation_rate=2, padding="same")
case("conv", A((1, 8, 8, 4)), A((3, 3, 2, 6)), strides=(2, 1))              # grouped: 2 groups
case("conv", A((2, 9, 3)), A((3, 3, 5)))
case("conv", A((2, 9, 3)), A((4, 3, 2)), strides=2, padding="same")
case("conv", A((2, 9, 3)), A((2, 3, 2)), dilation_rate=3)
case("conv", A((2, 6, 6, 3)), A((3, 3, 2, 4)), _opts=NOHALF)               # channels not divisible
case("conv", A((2, 6, 6, 3)), A((3, 3, 3, 4)), padding="causal", _opts=NOHALF)
case("depthwise_conv", A((2, 6, 6, 3)), A((3, 3, 3, 2)))
case("depthwise_conv", A((2, 7, 6, 3)), A((3, 3, 3, 1)), strides=2, padding="same")
case("depthwise_conv", A((2, 7, 7, 2)), A((2, 2, 2, 2)), dilation_rate=2)
case("depthwise_conv", A((2, 9, 3)), A((3, 3, 2)), padding="same")
case("separable_conv", A((2, 6, 6, 3)), A((3, 3, 3, 2)), A((1, 1, 6, 4)))
case("separable_conv", A((2, 7, 6, 3)), A((3, 3, 3, 1)), A((1, 1, 3, 5)), strides=2, padding="same")
case("separable_conv", A((2, 9, 3)), A((3, 3, 2)), A((1, 6, 4)))
case("conv_transpose", A((2, 4, 4, 3)), A((3, 3, 5, 3)))
case("conv_transpose", A((2, 4, 5, 3)), A((3, 3, 2, 3)), strides=2, padding="same")
case("conv_transpose", A((2, 4, 5, 3)), A((3, 2, 2, 3)), strides=2, padding="valid")
case("conv_transpose", A((2, 4, 4, 3)), A((4, 4, 2, 3)), strides=2, padding="same")
case("conv_transpose", A((1, 3, 3, 2)), A((3, 3, 2, 2)), strides=2, padding="valid", output_padding=1)
case("conv_transpose", A((1, 3, 3, 2)), A((3, 3, 2, 2)), strides=3, padding="same", output_padding=1)
case("conv_transpose", A((1, 4, 4, 2)), A((2, 2, 3, 2)), dilation_rate=2)
case("conv_transpose", A((2, 5, 3)), A((3, 2, 3)), strides=2)
case("conv_transpose", A((2, 5, 3)), A((3, 2, 3)), strides=2, padding="same")
case("conv_transpose", A((2, 4, 4, 3)), A((3, 3, 2, 4)), _opts=NOHALF)    # channels differ

# -- one-hot codes and cross-entropies ----------------------------------------------------------------------
case("one_hot", A.of([0, 2, 1, 3], "int32"), 4)
case("one_hot", A.of([[0, 2], [1, -1]], "int32"), 3)
case("one_hot", A.of([0, 2, 5], "int64"), 3, axis=0)
case("one_hot", A.of([0, 1, 2], "int32"), 3, dtype="int32")
case("one_hot", A.of([0, 1, 2], "int32"), 3, dtype="float16")
case("one_hot", A.of([0, 1, 2], "int32"), 3, dtype="bool")
case("multi_hot", A.of([[0, 2], [1, 1], [3, 0]], "int32"), 4)
case("multi_hot", A.of([0, 2, 2], "int32"), 4)
case("multi_hot", A.of([[0, 2], [1, 3]], "int32"), 4, dtype="int32")
case("multi_hot", A.of([[0, 2], [1, 3]], "int32"), num_classes=5, axis=-1)
case("binary_crossentropy", A((3, 4), kind="bool").with_dtype("float32"), A((3, 4), kind="unit"), _opts=NOHALF)
case("binary_crossentropy", A.of([[0.0, 1.0], [1.0, 0.0]]), A.of([[0.2, 0.9], [1.0, 0.0]]))
case("binary_crossentropy", A.of([[0.0, 1.0], [1.0, 0.0]]), A((2, 2)), from_logits=True)
case("binary_crossentropy", A.of([[0.0, 1.0], [1.0, 0.0]]), A((2, 3)), _opts=NOHALF)
case("binary_crossentropy", A.of([0.0, 1.0]), A((2, 1)), _opts=NOHALF)
case("categorical_crossentropy", A.of([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]]), A((2, 3), kind="positive"))
case("categorical_crossentropy", A.of([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]]), A((2, 3)), from_logits=True)
case("categorical_crossentropy", A.of([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]), A((3, 2), kind="positive"),
     axis=0)
case("categorical_crossentropy", A.of([[0.0, 1.0, 0.0]]), A((1, 4)), _opts=NOHALF)
case("sparse_categorical_crossentropy", A.of([0, 2, 1], "int32"), A((3, 4), kind="positive"))
case("sparse_categorical_crossentropy", A.of([0, 2, 1], "int32"), A((3, 4)), from_logits=True)
case("sparse_categorical_crossentropy", A.of([[0], [2]], "int32"), A((2, 3)), from_logits=True)
case("sparse_categorical_crossentropy", A.of([0, 2, 1], "int32"), A((2, 4)), _opts=NOHALF)

# -- statistics and normalizations ---------------------------------------------------------------------------
case("moments", A((4, 5)), 0)
case("moments", A((2, 3, 4)), [0, 1], keepdims=True)
case("moments", A((2, 3, 4)), (-1,))
case("moments", A.of([60000.0, 65000.0, 1.0, -3.0]), 0)
case("batch_normalization", A((4, 3)), A((3,)), A((3,), kind="positive"), -1)
case("batch_normalization", A((4, 3)), A((3,)), A((3,), kind="positive"), -1, offset=A((3,)), scale=A((3,)),
     epsilon=0.01)
case("batch_normalization", A((2, 3, 4)), A((3,)), A((3,), kind="positive"), 1, offset=A((3,)),
     scale=A((3,)))
case("normalize", A((3, 4)))
case("normalize", A((3, 4)), axis=0)
case("normalize", A((3, 4)), order=1)
case("normalize", A((3, 4)), order=3, axis=0)
case("normalize", A.of([[0.0, 0.0], [3.0, 4.0]]))
case("normalize", A((3, 4)), order=0, _opts=NOHALF)
case("layer_normalization", A((3, 4)))
case("layer_normalization", A((3, 4)), gamma=A((4,)), beta=A((4,)))
case("layer_normalization", A((2, 3, 4)), axis=(1, 2), epsilon=0.01)
case("layer_normalization", A((3, 4)), gamma=A((4,)), rms_scaling=True)
case("rms_normalization", A((3, 4)))
case("rms_normalization", A((3, 4)), scale=A((4,)), epsilon=0.001)
case("rms_normalization", A((2, 3, 4)), axis=(1, 2))
case("dot_product_attention", A((2, 3, 2, 4)), A((2, 5, 2, 4)), A((2, 5, 2, 4)))
case("dot_product_attention", A((1, 4, 2, 3)), A((1, 4, 2, 3)), A((1, 4, 2, 3)), is_causal=True)
case("dot_product_attention", A((1, 3, 2, 4)), A((1, 5, 2, 4)), A((1, 5, 2, 4)), bias=A((1, 2, 3, 5)),
     scale=0.3)
case("dot_product_attention", A((1, 3, 2, 4)), A((1, 5, 2, 4)), A((1, 5, 2, 4)), mask=A((1, 1, 3, 5), "bool"))
case("dot_product_attention", A((1, 3, 4, 2)), A((1, 3, 2, 2)), A((1, 3, 2, 2)))          # grouped heads
case("dot_product_attention", A((3, 2, 4)), A((3, 2, 4)), A((3, 2, 4)), _opts=NOHALF)

# -- math ----------------------------------------------------------------------------------------------------
case("top_k", A((3, 6)), 2)
case("top_k", A((2, 3, 5)), 3)
case("top_k", A.of([1.0, 3.0, 3.0, 2.0, 3.0]), 3)
case("top_k", A((4,), "int32"), 2, _opts=NOHALF)
case("top_k", A((3,)), 4, _opts=NOHALF)
case("in_top_k", A.of([0, 2, 1], "int32"), A((3, 5)), 2)
case("in_top_k", A.of([1, 0], "int32"), A.of([[1.0, 2.0, 2.0], [5.0, 1.0, 2.0]]), 1)
case("in_top_k", A.of([3, 0], "int32"), A((2, 4)), 3)
case("segment_sum", A((5, 3)), A.of([0, 0, 1, 1, 3], "int32"), num_segments=4)
case("segment_sum", A((5,)), A.of([0, 0, 1, 2, 2], "int32"), sorted=True)
case("segment_sum", A((5,)), A.of([2, 0, 1, 0, 2], "int32"))
case("segment_sum", A((4, 2), "int32"), A.of([1, 0, 1, 0], "int32"), num_segments=2, _opts=NOHALF)
case("segment_sum", A((5,)), A.of([0, 0, 1, 2, 2], "int32"), num_segments=3, sorted=True, _opts=NOHALF)
case("segment_max", A((5, 3)), A.of([0, 0, 1, 1, 3], "int32"), num_segments=4)
case("segment_max", A((5,)), A.of([0, 0, 1, 3, 3], "int32"), sorted=True)
case("segment_max", A((5,)), A.of([2, 0, 1, 0, 2], "int32"))
case("logsumexp", A((3, 4)))
case("logsumexp", A((3, 4)), axis=1)
case("logsumexp", A((2, 3, 4)), axis=(0, 2), keepdims=True)
case("logsumexp", A.of([1000.0, 1000.0, -5.0]))
case("erf", A((3, 4)))
case("erf", A.of([-5.0, -1.0, 0.0, 0.1, 2.0, 6.0]))
case("erfinv", A((3, 4), kind="unit"))
case("erfinv", A.of([-1.0, -0.999, 0.0, 0.5, 0.999, 1.0, 1.5]))
case("rsqrt", A((3, 4), kind="positive"))
case("rsqrt", A.of([0.0, 1.0, 4.0, -1.0]))
case("extract_sequences", A((10,)), 4, 2)
case("extract_sequences", A((2, 9)), 3, 3)
case("extract_sequences", A((2, 3, 8)), 5, 1)
case("norm", A((3, 4)))
case("norm", A((5,)))
case("norm", A((3, 4)), axis=1)
case("norm", A((3, 4)), ord=1, axis=0)
case("norm", A((3, 4)), ord=float("inf"), axis=-1, keepdims=True)
case("norm", A((3, 4)), ord=float("-inf"), axis=-1)
case("norm", A.of([0.0, 1.0, -2.0, 0.0]), ord=0)
case("norm", A((3, 4)), ord=3, axis=1)
case("norm", A((3, 4)), ord="fro")
case("norm", A((2, 3, 4)), ord=1, axis=(1, 2))
case("norm", A((2, 3, 4)), ord=float("inf"), axis=(1, 2), keepdims=True)
case("norm", A((2, 3, 4)), ord=-1, axis=(2, 1))
case("norm", A((3, 4), "int32"), _opts=NOHALF)
case("norm", A((3, 4)), ord="fro", axis=0, _opts=NOHALF)
case("norm", A((3, 4)), ord="nuc", axis=(0, 1), _opts=NOHALF)

# -- core ----------------------------------------------------------------------------------------------------
case("cast", A((3, 4)), "float16")
case("cast", A((3, 4)), "int32", _opts=NOHALF)
case("cast", A((3,), "int32"), "bfloat16", _opts=NOHALF)
case("cast", A((3,), "bool"), "float32", _opts=NOHALF)
case("convert_to_tensor", A((3, 4)))
case("convert_to_tensor", A((3,), "int32"), dtype="float32", _opts=NOHALF)
case("convert_to_tensor", [1.0, 2.0, 3.0], _opts=NOHALF)
case("convert_to_tensor", [[1, 2], [3, 4]], _opts=NOHALF)
case("convert_to_numpy", A((2, 3)))
case("stop_gradient", A((3, 4)))
case("slice", A((4, 5)), (1, 2), (2, 3))
case("slice", A((3, 4, 5)), [0, 1, 2], [3, 2, 2])
case("slice_update", A((4, 5)), (1, 2), A((2, 3)))
case("slice_update", A((3, 4), "int32"), (0, 1), A((2, 2), "int32"), _opts=NOHALF)
case("scatter", A.of([[0, 1], [2, 3], [0, 1]], "int32"), A((3,)), (3, 4))
case("scatter", A.of([[1], [0]], "int32"), A((2, 4)), (3, 4))
case("scatter", A.of([[0, 0], [1, 2]], "int32"), A((2,), "int32"), (2, 3), _opts=NOHALF)
case("scatter_update", A((3, 4)), A.of([[0, 1], [2, 3]], "int32"), A((2,)))
case("scatter_update", A((3, 4)), A.of([[1], [2]], "int32"), A((2, 4)))
case("unstack", A((3, 4)))
case("unstack", A((2, 3, 4)), axis=1)
case("unstack", A((2, 3, 4)), num=3, axis=-2)
case("saturate_cast", A.of([-300.0, -1.5, 0.0, 2.7, 300.0]), "uint8", _opts=NOHALF)
case("saturate_cast", A.of([-300.0, -1.5, 0.0, 2.7, 300.0]), "int8", _opts=NOHALF)
case("saturate_cast", A.of([-1e6, 1.0, 70000.0]), "float16", _opts=NOHALF)
case("saturate_cast", A.of([-3, 100, 400], "int32"), "uint8", _opts=NOHALF)

# -- more layouts and dtypes ---------------------------------------------------------------------------------
# (conv in channels_first is not recorded: TensorFlow's CPU kernels have no NCHW convolution and refuse it, where
# minifp computes it as its layers do)
case("depthwise_conv", A((2, 3, 6, 6)), A((3, 3, 3, 2)), data_format="channels_first", _opts=NOHALF)
case("average_pool", A((1, 7, 7, 2)), 2, strides=3, _opts=NOHALF)
case("max_pool", A((1, 7, 7, 2)), (1, 3), strides=(2, 1), padding="same", _opts=NOHALF)
case("softmax", A.of([[60000.0, 0.0, -60000.0]], "float16"), _opts=NOHALF)
case("one_hot", A.of([0.0, 1.7, 2.0]), 3, _opts=NOHALF)
case("one_hot", A.of([[0, 1], [2, 3]], "int32"), 4, axis=1, _opts=NOHALF)
case("log_softmax", A((2, 5), "float16"), _opts=NOHALF)
case("sigmoid", A((2, 5), "bfloat16"), _opts=NOHALF)
case("binary_crossentropy", A.of([[0.0, 1.0], [1.0, 0.0]], "float16"), A.of([[0.25, 0.5], [0.75, 1.0]], "float16"),
     _opts=NOHALF)
case("moments", A((3, 4), "int32"), 0, _opts=NOHALF)
case("logsumexp", A((3,), "int32"), _opts=NOHALF)
# (top_k with sorted=False is not recorded: the order of its results is unspecified, TensorFlow's is its heap's)
case("norm", A((3, 4)), axis=(0, 1), keepdims=True)

# -- the smaller activations and rearrangements ------------------------------------------------------------------
for name in ["hard_tanh", "soft_shrink", "hard_shrink", "tanh_shrink", "squareplus", "sparse_plus", "sparse_sigmoid"]:
    case(name, A((3, 4)))
    case(name, A.of([-3.0, -1.0, -0.5, -0.25, 0.0, 0.3, 0.5, 1.0, 2.5]))
    case(name, A((2, 3), "int32"), _opts=NOHALF)
case("soft_shrink", A((3, 4)), threshold=1.2)
case("hard_shrink", A((3, 4)), threshold=0.3)
case("squareplus", A((3, 4)), b=0.5)
case("threshold", A((3, 4)), 0.3, -1.0)
case("threshold", A.of([-1.0, 0.0, 0.5, 1.0]), 0.5, 7.0)
case("psnr", A((2, 4, 4, 3), kind="unit"), A((2, 4, 4, 3), kind="unit"), 1.0)
case("psnr", A((5,)), A((5,), kind="positive"), 255.0)
case("psnr", A((5,)), A((4,)), 1.0, _opts=NOHALF)
case("depth_to_space", A((2, 2, 3, 8)), 2)
case("depth_to_space", A((1, 8, 2, 3)), 2, data_format="channels_first")
case("depth_to_space", A((1, 2, 2, 6)), 2, _opts=NOHALF)
case("space_to_depth", A((2, 4, 6, 3)), 2)
case("space_to_depth", A((1, 2, 6, 3)), 3, data_format="channels_first")
case("space_to_depth", A((1, 3, 4, 2)), 2, _opts=NOHALF)
case("norm", A((2, 3, 4)), ord=2, axis=(1, 2))
case("norm", A((3, 4)), ord=-2, axis=(0, 1), keepdims=True)
# (ord="nuc" without an axis is not recorded: TensorFlow's backend fails on it with an InvalidArgumentError where
# explicit axes work; minifp takes both axes, as NumPy does)
for name in ["adaptive_average_pool", "adaptive_max_pool"]:
    case(name, A((2, 6, 6, 3)), 2)
    case(name, A((2, 7, 5, 2)), (3, 2))
    case(name, A((2, 5, 7, 2)), (5, 3))
    case(name, A((2, 10, 3)), 4)
    case(name, A((2, 3, 7, 5)), (2, 4), data_format="channels_first", _opts=NOHALF)
case("shape", A((2, 3, 4)), _opts=NOHALF)
case("shape", A((5,), "int32"), _opts=NOHALF)
case("is_tensor", A((2, 3)), _opts=NOHALF)
case("is_tensor", [1.0, 2.0], _opts=NOHALF)
