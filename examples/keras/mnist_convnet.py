"""A convnet on MNIST-shaped images in the style of keras.io's "Simple MNIST convnet": integer labels made one-hot
by `keras.utils.to_categorical`, two Conv2D + MaxPooling2D blocks, Dropout, a softmax Dense, `fit` with a
validation split, then `evaluate`.

Plain Keras 3: `python examples/keras/mnist_convnet.py`; the same file on minifp:
`python -m minifp.keras examples/keras/mnist_convnet.py`. The images are made by NumPy (MNIST's shapes and dtypes:
28x28 uint8, ten classes, each class a bright bar in its own rows), and so are the weights, so that with
`--dropout 0 --no-shuffle` both frameworks print the same losses.
"""
import argparse

import numpy as np

import keras
from keras import layers

parser = argparse.ArgumentParser(description="MNIST-style convnet")
parser.add_argument("--samples", type=int, default=1024)
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--dropout", type=float, default=0.5)
parser.add_argument("--policy", default="float32", help="float32, mixed_float16 or mixed_bfloat16")
parser.add_argument("--no-shuffle", action="store_true")
num_classes, input_shape = 10, (28, 28, 1)


def mnist_like(n, rng):
    """n images of MNIST's shape and dtype and their labels: noise, plus a bright bar in rows set by the class."""
    labels = rng.integers(0, num_classes, n)
    images = rng.integers(0, 80, (n, 28, 28)).astype("uint8")
    for image, label in zip(images, labels):
        image[2 * label + 3:2 * label + 7, 4:24] = 230
    return images, labels


def shared_init(model, rng):
    """Every weight from NumPy: kernels He-normal, scales 1, biases 0."""
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
    (x_train, y_train), (x_test, y_test) = mnist_like(args.samples, rng), mnist_like(args.samples // 4, rng)

    # Scale images to the [0, 1] range and give them a channel axis
    x_train = np.expand_dims(x_train.astype("float32") / 255, -1)
    x_test = np.expand_dims(x_test.astype("float32") / 255, -1)
    print("x_train shape:", x_train.shape, "-", x_train.shape[0], "train samples,", x_test.shape[0], "test samples")
    y_train = keras.utils.to_categorical(y_train, num_classes)
    y_test = keras.utils.to_categorical(y_test, num_classes)

    model = keras.Sequential([
        keras.Input(shape=input_shape),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(args.dropout),
        layers.Dense(num_classes, activation="softmax", dtype="float32"),   # softmax in float32 under any policy
    ])
    shared_init(model, rng)
    model.summary()

    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs, validation_split=0.1,
              shuffle=not args.no_shuffle, verbose=0, callbacks=[PrintLoss()])
    score = model.evaluate(x_test, y_test, verbose=0)
    print(f"Test loss: {score[0]:.8f}")
    print(f"Test accuracy: {score[1]:.4f}")


if __name__ == "__main__":
    main()
