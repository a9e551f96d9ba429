"""Keras 3's MultiHeadAttention: projections with EinsumDense's weight layouts, scaled dot-product attention.

Weights, as Keras names and shapes them: query/kernel (dim, heads, key_dim), query/bias (heads, key_dim), the
same for key (key_dim) and value (value_dim), attention_output/kernel (heads, value_dim, out), its bias (out,).
The query is scaled by 1 / sqrt(key_dim) before the scores (Keras's order); the softmax runs over the keys;
a boolean attention_mask of shape (B, T, S) adds Keras's large negative number (-3e4 in float16, -1e9
otherwise) where it is False.

Attention (Luong's dot-product scores, or "concat": sum(tanh(q + k))) and AdditiveAttention (Bahdanau's
sum(scale * tanh(q + k))) take [query, value] or [query, value, key] and are composed of keras.ops as Keras
composes them: masked scores less 1e9 (65504 in float16), a softmax over the values, dropout of the weights
while training, their product with the values, zeros where the query mask is False.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ... import float16, linear, tensor
from ...engine import apply
from .. import backend, initializers, ops, random
from .core import Dropout
from .layer import _BUILD_LOCK, Layer

__all__ = ["MultiHeadAttention", "Attention", "AdditiveAttention"]


class _Projection(Layer):
    """An EinsumDense of MultiHeadAttention: a kernel of shape in_dims + out_dims, a bias of shape out_dims."""

    def __init__(self, in_dims, out_dims, use_bias, kernel_initializer, bias_initializer, **kwargs):
        super().__init__(**kwargs)
        self.in_dims, self.out_dims, self.use_bias = tuple(in_dims), tuple(out_dims), use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer

    def build(self, input_shape=None):
        self.kernel = self.add_weight(name="kernel", shape=self.in_dims + self.out_dims,
                                      initializer=self.kernel_initializer)
        self.bias = self.add_weight(name="bias", shape=self.out_dims,
                                    initializer=self.bias_initializer) if self.use_bias else None
        self.built = True

    def call(self, inputs):
        # inputs (..., *in_dims) -> (..., *out_dims): one product with the bias added before its rounding.
        lead = tuple(inputs.shape[:inputs.ndim - len(self.in_dims)])
        n_in, n_out = math.prod(self.in_dims), math.prod(self.out_dims)
        x = apply("reshape", inputs, shape=lead + (n_in,))
        w = apply("transpose", apply("reshape", self.kernel, shape=(n_in, n_out)), axes=(1, 0))
        b = None if self.bias is None else apply("reshape", self.bias, shape=(n_out,))
        return apply("reshape", linear(x, w, b), shape=lead + self.out_dims)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:len(input_shape) - len(self.in_dims)]) + self.out_dims


class MultiHeadAttention(Layer):
    """Multi-head attention (Vaswani et al.) over (batch, seq, dim) queries and values."""

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, output_shape=None,
                 attention_axes=None, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, seed=None, **kwargs):
        for arg, value in (("num_heads", num_heads), ("key_dim", key_dim)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError(f"Received an invalid value for argument `{arg}`, expected a positive integer. "
                                 f"Received: {arg}={value}")
        if value_dim is not None and (isinstance(value_dim, bool) or not isinstance(value_dim, numbers.Integral)
                                      or value_dim <= 0):
            raise ValueError(f"Received an invalid value for argument `value_dim`, expected a positive integer or "
                             f"`None`. Received: value_dim={value_dim}")
        if attention_axes is not None:
            raise NotImplementedError("MultiHeadAttention(attention_axes=...) is not supported by minifp.keras: "
                                      "attention runs over axis 1")
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.supports_masking = True
        self._num_heads, self._key_dim = int(num_heads), int(key_dim)
        self._value_dim = int(value_dim) if value_dim else self._key_dim
        self._dropout, self._use_bias, self.seed = float(dropout), use_bias, seed
        if output_shape:
            output_shape = (output_shape,) if isinstance(output_shape, numbers.Integral) else tuple(output_shape)
        self._output_shape = output_shape
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)
        self._inverse_sqrt_key_dim = 1.0 / math.sqrt(float(self._key_dim))

    num_heads = property(lambda self: self._num_heads)
    key_dim = property(lambda self: self._key_dim)
    value_dim = property(lambda self: self._value_dim)
    dropout = property(lambda self: self._dropout)
    use_bias = property(lambda self: self._use_bias)

    def _projection(self, in_dims, out_dims, name):
        return _Projection(in_dims, out_dims, self._use_bias,
                           self._kernel_initializer.__class__.from_config(self._kernel_initializer.get_config()),
                           self._bias_initializer.__class__.from_config(self._bias_initializer.get_config()),
                           name=name, dtype=self.dtype_policy)

    def build(self, query_shape, value_shape=None, key_shape=None):
        if value_shape is None:         # called with the query's shape alone: wait for the call's shapes
            return
        key_shape = value_shape if key_shape is None else key_shape
        if tuple(value_shape[1:-1]) != tuple(key_shape[1:-1]):
            raise ValueError(f"All dimensions of `value` and `key`, except the last one, must be equal. Received: "
                             f"value_shape={tuple(value_shape)} and key_shape={tuple(key_shape)}")
        heads = self._num_heads
        self._query_dense = self._projection((query_shape[-1],), (heads, self._key_dim), "query")
        self._key_dense = self._projection((key_shape[-1],), (heads, self._key_dim), "key")
        self._value_dense = self._projection((value_shape[-1],), (heads, self._value_dim), "value")
        out = self._output_shape or (query_shape[-1],)
        self._output_dense = self._projection((heads, self._value_dim), out, "attention_output")
        for layer in (self._query_dense, self._key_dense, self._value_dense, self._output_dense):
            layer.build()
        backend.auto_name("softmax")        # Keras builds a Softmax layer here: the automatic names move on
        self._dropout_layer = Dropout(rate=self._dropout, dtype=self.dtype_policy, seed=self.seed)
        self._projections_built = True
        self.built = True

    query_dense = property(lambda self: self._query_dense)
    key_dense = property(lambda self: self._key_dense)
    value_dense = property(lambda self: self._value_dense)
    output_dense = property(lambda self: self._output_dense)

    def _maybe_build(self, args):
        pass                            # call builds from all three shapes (the base class passes only one)

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
             return_attention_scores=False, training=None, use_causal_mask=False):
        with _BUILD_LOCK:                   # as Layer.__call__'s build: threads calling it first build it once
            if not getattr(self, "_projections_built", False):
                self.build(tuple(query.shape), tuple(value.shape), None if key is None else tuple(key.shape))
        key = value if key is None else key
        mask = self._attention_mask(query, value, query_mask, value_mask, key_mask, attention_mask,
                                    use_causal_mask)
        q = self._query_dense(query)                       # (B, T, N, key_dim)
        k = self._key_dense(key)                           # (B, S, N, key_dim)
        v = self._value_dense(value)                       # (B, S, N, value_dim)
        q = q * self._inverse_sqrt_key_dim
        scores = apply("matmul", apply("transpose", q, axes=(0, 2, 1, 3)),
                       apply("transpose", k, axes=(0, 2, 3, 1)))       # (B, N, T, S)
        if mask is not None:
            big = -3e4 if scores.fmt == float16 else -1e9
            scores = scores + tensor(np.where(mask[:, None], 0.0, big), dtype=scores.fmt)
        scores = apply("softmax", scores, axis=-1)
        dropped = self._dropout_layer(scores, training=training) if self._dropout > 0 else scores
        out = apply("transpose", apply("matmul", dropped, apply("transpose", v, axes=(0, 2, 1, 3))),
                    axes=(0, 2, 1, 3))                                 # (B, T, N, value_dim)
        out = self._output_dense(out)
        return (out, scores) if return_attention_scores else out

    @staticmethod
    def _attention_mask(query, value, query_mask, value_mask, key_mask, attention_mask, use_causal_mask):
        """The boolean (B, T, S) mask from the given masks and the causal one (Keras's rules), or None."""
        t, s = query.shape[1], value.shape[1]
        mask = None
        if query_mask is not None:
            mask = np.asarray(query_mask, bool)[:, :, None]
        for m in (value_mask, key_mask):
            if m is not None:
                m = np.asarray(m, bool)[:, None, :]
                mask = m if mask is None else mask & m
        if use_causal_mask:
            causal = np.tril(np.ones((1, t, s), bool))
            mask = causal if mask is None else mask & causal
        if attention_mask is not None:
            given = np.asarray(attention_mask, bool)
            mask = given if mask is None else given & mask
        return None if mask is None else np.broadcast_to(mask, (query.shape[0], t, s))

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        query_shape = tuple(query_shape)
        return query_shape[:-1] + self._output_shape if self._output_shape else query_shape

    def get_config(self):
        return {**super().get_config(), "num_heads": self._num_heads, "key_dim": self._key_dim,
                "value_dim": self._value_dim, "dropout": self._dropout, "use_bias": self._use_bias,
                "output_shape": self._output_shape, "attention_axes": None,
                "kernel_initializer": initializers.serialize(self._kernel_initializer),
                "bias_initializer": initializers.serialize(self._bias_initializer), "seed": self.seed}


class Attention(Layer):
    """Dot-product attention (Luong-style) of [query, value] or [query, value, key]: softmax(scores) @ value,
    the scores q . k (times a learned scale if use_scale) or, for score_mode "concat", sum(tanh(q + k))."""

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.use_scale, self.score_mode, self.dropout, self.seed = use_scale, score_mode, dropout, seed
        if self.dropout > 0:
            self.seed_generator = random.SeedGenerator(seed)
        if self.score_mode not in ("dot", "concat"):
            raise ValueError(f"Invalid value for argument score_mode. Expected one of {{'dot', 'concat'}}. "
                             f"Received: score_mode={score_mode}")
        self.supports_masking = True

    def build(self, input_shape):
        self._validate_inputs(input_shape)
        self.scale = self.concat_score_weight = None
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(), initializer="ones", dtype=self.dtype)
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight(name="concat_score_weight", shape=(), initializer="ones",
                                                       dtype=self.dtype)
        self.built = True

    def _calculate_scores(self, query, key):
        """(batch, Tq, Tv) scores of each query against each key."""
        if self.score_mode == "dot":
            scores = ops.matmul(query, ops.swapaxes(key, -2, -1))
            return scores if self.scale is None else ops.multiply(scores, self.scale)
        summed = ops.expand_dims(query, axis=-2) + ops.expand_dims(key, axis=-3)      # (batch, Tq, Tv, dim)
        if self.scale is not None:
            summed = self.scale * summed
        return self.concat_score_weight * ops.sum(ops.tanh(summed), axis=-1)

    def _apply_scores(self, scores, value, scores_mask, training):
        """(the weighted values, the weights): masked scores less Keras's big number, softmax, dropout."""
        if scores_mask is not None:
            padding_mask = ops.logical_not(scores_mask)
            big = 65504.0 if scores.dtype == "float16" else 1.0e9
            if padding_mask.ndim == 2:
                padding_mask = ops.expand_dims(padding_mask, axis=-2)
            scores = ops.where(padding_mask, scores - big, scores)
        weights = ops.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            weights = random.dropout(weights, self.dropout, seed=self.seed_generator)
        return ops.matmul(weights, value), weights

    @staticmethod
    def _score_mask(scores, value_mask, use_causal_mask):
        """The value mask, and-ed with the causal mask (query i sees values j <= i) where asked for."""
        if not use_causal_mask:
            return value_mask
        tq, tv = scores.shape[-2], scores.shape[-1]
        causal = ops.convert_to_tensor(np.tril(np.ones((1, tq, tv), bool)))
        if value_mask is None:
            return causal
        return ops.logical_and(ops.expand_dims(value_mask, axis=-2), causal)

    def call(self, inputs, mask=None, training=False, return_attention_scores=False, use_causal_mask=False):
        self._validate_inputs(inputs, mask)
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) > 2 else value
        query_mask = mask[0] if mask else None
        value_mask = mask[1] if mask else None
        scores = self._calculate_scores(query, key)
        scores_mask = self._score_mask(scores, value_mask, use_causal_mask)
        out, weights = self._apply_scores(scores, value, scores_mask, training)
        if query_mask is not None:
            out = ops.where(ops.expand_dims(query_mask, axis=-1), out, 0)
        return (out, weights) if return_attention_scores else out

    def compute_mask(self, inputs, mask=None):
        self._validate_inputs(inputs, mask)
        if mask is None or mask[0] is None:
            return None
        return ops.convert_to_tensor(mask[0])

    def compute_output_shape(self, input_shape):
        return (*input_shape[0][:-1], input_shape[1][-1])

    def _validate_inputs(self, inputs, mask=None):
        """Keras's errors for anything but a list of 2 or 3 inputs (and of 2 or 3 masks)."""
        name = type(self).__name__
        if not isinstance(inputs, list):
            raise ValueError(f"{name} layer must be called on a list of inputs, namely [query, value] or [query, "
                             f"value, key]. Received: inputs={inputs}.")
        if not 2 <= len(inputs) <= 3:
            raise ValueError(f"{name} layer accepts inputs list of length 2 or 3, namely [query, value] or [query, "
                             f"value, key]. Received length: {len(inputs)}.")
        if mask is not None:
            if not isinstance(mask, list):
                raise ValueError(f"{name} layer mask must be a list, namely [query_mask, value_mask]. Received: "
                                 f"mask={mask}.")
            if not 2 <= len(mask) <= 3:
                raise ValueError(f"{name} layer accepts mask list of length 2 or 3. Received: inputs={inputs}, "
                                 f"mask={mask}.")

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale, "score_mode": self.score_mode,
                "dropout": self.dropout, "seed": self.seed}


class AdditiveAttention(Attention):
    """Additive attention (Bahdanau-style): the scores sum(scale * tanh(q + k)) over the features, scale a
    learned vector of the query's width (glorot_uniform) if use_scale."""

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape):
        self._validate_inputs(input_shape)
        self.scale = None
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(input_shape[0][-1],), initializer="glorot_uniform",
                                         dtype=self.dtype)
        self.built = True

    def _calculate_scores(self, query, key):
        tanh = ops.tanh(ops.expand_dims(query, axis=-2) + ops.expand_dims(key, axis=-3))
        return ops.sum((self.scale if self.use_scale else 1.0) * tanh, axis=-1)

    def get_config(self):
        config = super().get_config()
        del config["score_mode"]
        return config
