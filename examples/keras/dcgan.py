"""A deep convolutional GAN in the style of TensorFlow's DCGAN tutorial: a generator of Dense, BatchNormalization,
LeakyReLU, Reshape and Conv2DTranspose layers, a Conv2D discriminator, two `tf.GradientTape`s in one `tf.function`
train step, BinaryCrossentropy from logits and two Adam optimizers.

Plain TensorFlow (tf.keras 2.x): `TF_USE_LEGACY_KERAS=1 python examples/keras/dcgan.py`; on minifp:
`python -m minifp.tf examples/keras/dcgan.py`. The images are made by NumPy (MNIST's shapes, scaled to [-1, 1]), and
so are the noise and the weights, so that with `--dropout 0 --no-shuffle` both print the same losses. The layers
are narrower than the tutorial's (`--width`) to keep a CPU run short. `--policy mixed_float16` wraps both optimizers
in LossScaleOptimizers, as TensorFlow's mixed-precision guide writes a custom loop.
"""
import argparse

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

parser = argparse.ArgumentParser(description="DCGAN")
parser.add_argument("--samples", type=int, default=256)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--width", type=int, default=16, help="the tutorial's 256 channels are 16 * width")
parser.add_argument("--noise-dim", type=int, default=32)
parser.add_argument("--dropout", type=float, default=0.3)
parser.add_argument("--policy", default="float32", help="float32 or mixed_float16")
parser.add_argument("--no-shuffle", action="store_true")


def make_generator_model(width, noise_dim):
    """Noise to a 28x28x1 image in [-1, 1]."""
    model = tf.keras.Sequential()
    model.add(layers.Dense(7 * 7 * 4 * width, use_bias=False, input_shape=(noise_dim,)))
    model.add(layers.BatchNormalization())
    model.add(layers.LeakyReLU())
    model.add(layers.Reshape((7, 7, 4 * width)))
    assert model.output_shape == (None, 7, 7, 4 * width)  # Note: None is the batch size

    model.add(layers.Conv2DTranspose(2 * width, (5, 5), strides=(1, 1), padding="same", use_bias=False))
    assert model.output_shape == (None, 7, 7, 2 * width)
    model.add(layers.BatchNormalization())
    model.add(layers.LeakyReLU())

    model.add(layers.Conv2DTranspose(width, (5, 5), strides=(2, 2), padding="same", use_bias=False))
    assert model.output_shape == (None, 14, 14, width)
    model.add(layers.BatchNormalization())
    model.add(layers.LeakyReLU())

    model.add(layers.Conv2DTranspose(1, (5, 5), strides=(2, 2), padding="same", use_bias=False, activation="tanh",
                                     dtype="float32"))
    assert model.output_shape == (None, 28, 28, 1)
    return model


def make_discriminator_model(width, dropout):
    """An image to one logit: real or fake."""
    model = tf.keras.Sequential()
    model.add(layers.Conv2D(width, (5, 5), strides=(2, 2), padding="same", input_shape=[28, 28, 1]))
    model.add(layers.LeakyReLU())
    model.add(layers.Dropout(dropout))
    model.add(layers.Conv2D(2 * width, (5, 5), strides=(2, 2), padding="same"))
    model.add(layers.LeakyReLU())
    model.add(layers.Dropout(dropout))
    model.add(layers.Flatten())
    model.add(layers.Dense(1, dtype="float32"))
    return model


def shared_init(model, rng):
    """Every weight from NumPy: kernels normal(0, 0.05), scales and moving variances 1, the rest 0."""
    for v in model.weights:
        shape = tuple(v.shape)
        if len(shape) > 1:
            v.assign(rng.normal(0, 0.05, shape).astype("float32"))
        else:
            v.assign(np.full(shape, 1.0 if "gamma" in v.name or "variance" in v.name else 0.0, "float32"))


def main():
    args = parser.parse_args()
    tf.keras.mixed_precision.set_global_policy(args.policy)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, args.samples)
    train_images = rng.integers(0, 80, (args.samples, 28, 28, 1)).astype("float32")
    for image, label in zip(train_images, labels):
        image[2 * label + 3:2 * label + 7, 4:24] = 230
    train_images = (train_images - 127.5) / 127.5  # Normalize the images to [-1, 1]

    train_dataset = tf.data.Dataset.from_tensor_slices(train_images)
    if not args.no_shuffle:
        train_dataset = train_dataset.shuffle(args.samples)
    train_dataset = train_dataset.batch(args.batch_size)

    generator = make_generator_model(args.width, args.noise_dim)
    discriminator = make_discriminator_model(args.width, args.dropout)
    shared_init(generator, rng)
    shared_init(discriminator, rng)

    # This method returns a helper function to compute cross entropy loss
    cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=True)

    def discriminator_loss(real_output, fake_output):
        real_loss = cross_entropy(tf.ones_like(real_output), real_output)
        fake_loss = cross_entropy(tf.zeros_like(fake_output), fake_output)
        return real_loss + fake_loss

    def generator_loss(fake_output):
        return cross_entropy(tf.ones_like(fake_output), fake_output)

    generator_optimizer = tf.keras.optimizers.Adam(1e-4)
    discriminator_optimizer = tf.keras.optimizers.Adam(1e-4)
    mixed = args.policy != "float32"
    if mixed:
        generator_optimizer = tf.keras.mixed_precision.LossScaleOptimizer(generator_optimizer)
        discriminator_optimizer = tf.keras.mixed_precision.LossScaleOptimizer(discriminator_optimizer)

    # Notice the use of `tf.function`: this annotation causes the function to be "compiled".
    @tf.function
    def train_step(images, noise):
        with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
            generated_images = generator(noise, training=True)
            real_output = discriminator(images, training=True)
            fake_output = discriminator(generated_images, training=True)
            gen_loss = generator_loss(fake_output)
            disc_loss = discriminator_loss(real_output, fake_output)
            scaled_gen = generator_optimizer.get_scaled_loss(gen_loss) if mixed else gen_loss
            scaled_disc = discriminator_optimizer.get_scaled_loss(disc_loss) if mixed else disc_loss
        gradients_of_generator = gen_tape.gradient(scaled_gen, generator.trainable_variables)
        gradients_of_discriminator = disc_tape.gradient(scaled_disc, discriminator.trainable_variables)
        if mixed:
            gradients_of_generator = generator_optimizer.get_unscaled_gradients(gradients_of_generator)
            gradients_of_discriminator = discriminator_optimizer.get_unscaled_gradients(gradients_of_discriminator)
        generator_optimizer.apply_gradients(zip(gradients_of_generator, generator.trainable_variables))
        discriminator_optimizer.apply_gradients(zip(gradients_of_discriminator, discriminator.trainable_variables))
        return gen_loss, disc_loss

    step = 0
    for epoch in range(args.epochs):
        for image_batch in train_dataset:
            noise = rng.normal(size=(int(image_batch.shape[0]), args.noise_dim)).astype("float32")
            gen_loss, disc_loss = train_step(image_batch, noise)
            print(f"step {step}: gen_loss {float(gen_loss):.8f} disc_loss {float(disc_loss):.8f}")
            step += 1
    sample = generator(rng.normal(size=(4, args.noise_dim)).astype("float32"), training=False)
    print("generated", tuple(sample.shape), f"in [{float(tf.reduce_min(sample)):.4f}, "
          f"{float(tf.reduce_max(sample)):.4f}]")


if __name__ == "__main__":
    main()
