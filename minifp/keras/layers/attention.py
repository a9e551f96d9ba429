"""Keras 3's MultiHeadAttention: projections with EinsumDense's weight layouts, scaled dot-product attention.

Weights, as Keras names and shapes them: query/kernel (dim, heads, key_dim), query/bias (heads, key_dim), the
same for key (key_dim) and value (value_dim), attention_output/kernel (heads, value_dim, out), its bias (out,).
The query is scaled by 1 / sqrt(key_dim) before the scores (Keras's order); the softmax runs over the keys;
a boolean attention_mask of shape (B, T, S) adds Keras's large negative number (-3e4 in float16, -1e9
otherwise) where it is False.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ... import float16, linear, tensor
from ...engine import apply
from .. import backend, initializers
from .core import Dropout
from .layer import _BUILD_LOCK, Layer

__all__ = ["MultiHeadAttention"]


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
