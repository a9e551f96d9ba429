"""A subclassed model and a custom training loop, in the style of TensorFlow's "quickstart for experts": a
`tf.keras.Model` subclass whose `call(self, x)` takes no `training` argument, called as `model(images,
training=True)` inside a `tf.function` train step with `tf.GradientTape`, `tf.data` pipelines, and `tf.keras.metrics`
Mean and SparseCategoricalAccuracy reset every epoch.

Plain TensorFlow (tf.keras 2.x): `TF_USE_LEGACY_KERAS=1 python examples/keras/quickstart_experts.py`; on minifp:
`python -m minifp.tf examples/keras/quickstart_experts.py`. The images are made by NumPy (MNIST's shapes), and so
are the weights, so that with `--no-shuffle` both print the same losses. `--policy mixed_float16` trains under the
mixed policy with a LossScaleOptimizer, as TensorFlow's mixed-precision guide writes the loop.
"""
import argparse

import numpy as np
import tensorflow as tf
from tensorflow.keras import Model
from tensorflow.keras.layers import Conv2D, Dense, Flatten

parser = argparse.ArgumentParser(description="TensorFlow 2 quickstart for experts")
parser.add_argument("--samples", type=int, default=512)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--policy", default="float32", help="float32 or mixed_float16")
parser.add_argument("--no-shuffle", action="store_true")


def mnist_like(n, rng):
    """n images of MNIST's shape and dtype and their labels: noise, plus a bright bar in rows set by the class."""
    labels = rng.integers(0, 10, n)
    images = rng.integers(0, 80, (n, 28, 28)).astype("uint8")
    for image, label in zip(images, labels):
        image[2 * label + 3:2 * label + 7, 4:24] = 230
    return images, labels


class MyModel(Model):
    """A convolution, then two dense layers; logits out."""

    def __init__(self):
        super().__init__()
        self.conv1 = Conv2D(8, 3, activation="relu")
        self.flatten = Flatten()
        self.d1 = Dense(32, activation="relu")
        self.d2 = Dense(10, dtype="float32")

    def call(self, x):
        x = self.conv1(x)
        x = self.flatten(x)
        x = self.d1(x)
        return self.d2(x)


def shared_init(model, rng):
    """Every weight from NumPy: kernels He-normal, biases 0."""
    for v in model.weights:
        shape = tuple(v.shape)
        scale = np.sqrt(2.0 / np.prod(shape[:-1])) if len(shape) > 1 else 0.0
        v.assign(rng.normal(0, scale, shape).astype("float32"))


def main():
    args = parser.parse_args()
    tf.keras.mixed_precision.set_global_policy(args.policy)
    rng = np.random.default_rng(0)
    (x_train, y_train), (x_test, y_test) = mnist_like(args.samples, rng), mnist_like(args.samples // 4, rng)
    x_train, x_test = x_train / 255.0, x_test / 255.0
    # Add a channels dimension
    x_train = x_train[..., tf.newaxis].astype("float32")
    x_test = x_test[..., tf.newaxis].astype("float32")

    train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    if not args.no_shuffle:
        train_ds = train_ds.shuffle(10000)
    train_ds = train_ds.batch(32)
    test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(32)

    model = MyModel()
    model(x_train[:1])                                  # builds the weights
    shared_init(model, rng)

    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.keras.optimizers.Adam()
    mixed = args.policy != "float32"
    if mixed:
        optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer)

    train_loss = tf.keras.metrics.Mean(name="train_loss")
    train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
    test_loss = tf.keras.metrics.Mean(name="test_loss")
    test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            # training=True is only needed if there are layers with different behavior during training versus
            # inference (e.g. Dropout).
            predictions = model(images, training=True)
            loss = loss_object(labels, predictions)
            scaled_loss = optimizer.get_scaled_loss(loss) if mixed else loss
        gradients = tape.gradient(scaled_loss, model.trainable_variables)
        if mixed:
            gradients = optimizer.get_unscaled_gradients(gradients)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_loss(loss)
        train_accuracy(labels, predictions)
        return loss

    @tf.function
    def test_step(images, labels):
        predictions = model(images, training=False)
        test_loss(loss_object(labels, predictions))
        test_accuracy(labels, predictions)

    for epoch in range(args.epochs):
        train_loss.reset_state()
        train_accuracy.reset_state()
        test_loss.reset_state()
        test_accuracy.reset_state()
        for step, (images, labels) in enumerate(train_ds):
            loss = train_step(images, labels)
            print(f"step {step}: loss {float(loss):.8f}")
        for test_images, test_labels in test_ds:
            test_step(test_images, test_labels)
        print(f"Epoch {epoch + 1}, Loss: {train_loss.result():.8f}, Accuracy: {train_accuracy.result() * 100:.2f}, "
              f"Test Loss: {test_loss.result():.8f}, Test Accuracy: {test_accuracy.result() * 100:.2f}")


if __name__ == "__main__":
    main()
