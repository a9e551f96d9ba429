"""Text classification with a Transformer block, in the style of keras.io's example of that name: a custom
`TransformerBlock` and `TokenAndPositionEmbedding` written with `keras.ops`, integer sequences padded by
`keras.utils.pad_sequences`, MultiHeadAttention, LayerNormalization, GlobalAveragePooling1D, `fit` with validation
data.

Plain Keras 3: `python examples/keras/text_transformer.py`; on minifp:
`python -m minifp.keras examples/keras/text_transformer.py`. The reviews are made by NumPy (token ids of varying
length; positive ones use more ids from the top of the vocabulary), and so are the weights, so that with
`--dropout 0 --no-shuffle` both frameworks print the same losses.
"""
import argparse

import numpy as np

import keras
from keras import layers, ops

parser = argparse.ArgumentParser(description="Transformer text classifier")
parser.add_argument("--samples", type=int, default=512)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--dropout", type=float, default=0.1)
parser.add_argument("--policy", default="float32", help="float32, mixed_float16 or mixed_bfloat16")
parser.add_argument("--no-shuffle", action="store_true")
vocab_size, maxlen = 2000, 64           # the first 2000 words of each review, its first 64 of them
embed_dim, num_heads, ff_dim = 32, 2, 32


class TransformerBlock(layers.Layer):
    """Self-attention and a feed-forward network, each with a residual connection and layer normalization."""

    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs, training=False):
        attn_output = self.dropout1(self.att(inputs, inputs), training=training)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.dropout2(self.ffn(out1), training=training)
        return self.layernorm2(out1 + ffn_output)


class TokenAndPositionEmbedding(layers.Layer):
    """A token's embedding plus its position's."""

    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        positions = self.pos_emb(ops.arange(start=0, stop=ops.shape(x)[-1], step=1))
        return self.token_emb(x) + positions


def reviews(n, rng):
    """n reviews as lists of token ids (10 to 100 of them) and their labels (1: positive)."""
    labels = rng.integers(0, 2, n)
    texts = []
    for label in labels:
        length = int(rng.integers(10, 100))
        common = rng.integers(1, vocab_size // 2, length)
        tinted = rng.integers(vocab_size // 2, vocab_size, length)
        texts.append(list(np.where(rng.random(length) < 0.3 + 0.4 * label, tinted, common)))
    return texts, labels


def shared_init(model, rng):
    """Every weight from NumPy: matrices He-normal, scales 1, biases 0."""
    for v in model.weights:
        shape = tuple(v.shape)
        if len(shape) > 1:
            v.assign(rng.normal(0, np.sqrt(2.0 / np.prod(shape[:-1])), shape).astype("float32"))
        else:
            v.assign(np.full(shape, 1.0 if "gamma" in v.name else 0.0, "float32"))


class PrintLoss(keras.callbacks.Callback):
    """The running loss after every training batch, with all its digits."""

    def on_train_batch_end(self, batch, logs=None):
        print(f"batch {batch}: loss {logs['loss']:.8f}")


def main():
    args = parser.parse_args()
    keras.mixed_precision.set_global_policy(args.policy)
    rng = np.random.default_rng(0)
    (x_train, y_train), (x_val, y_val) = reviews(args.samples, rng), reviews(args.samples // 4, rng)
    print(len(x_train), "Training sequences")
    print(len(x_val), "Validation sequences")
    x_train = keras.utils.pad_sequences(x_train, maxlen=maxlen)
    x_val = keras.utils.pad_sequences(x_val, maxlen=maxlen)

    inputs = layers.Input(shape=(maxlen,))
    x = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)(inputs)
    x = TransformerBlock(embed_dim, num_heads, ff_dim, args.dropout)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(args.dropout)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(args.dropout)(x)
    outputs = layers.Dense(2, activation="softmax", dtype="float32")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    shared_init(model, rng)

    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
                        validation_data=(x_val, y_val), shuffle=not args.no_shuffle, verbose=0,
                        callbacks=[PrintLoss()])
    print(f"val_loss: {history.history['val_loss'][-1]:.8f} val_accuracy: {history.history['val_accuracy'][-1]:.4f}")


if __name__ == "__main__":
    main()
