"""The TensorFlow mixed-precision guide (../shared/seeds/000, its code in English), run on minifp.tf.

Changed from the guide's code:
- the import lines (`import minifp.tf as tf`, `from minifp.tf import keras`, `from minifp.tf.keras import ...`);
- the data source: `keras.datasets.mnist.load_data()` when Keras's cached mnist.npz is there
  ($KERAS_HOME/datasets or ~/.keras/datasets), else MNIST-shaped data made from the digits bundled with minifp
  (8x8 images upsampled 3x and padded to 28x28 uint8, repeated to MNIST's 60,000 / 10,000 images), so that
  accuracy means something offline.
Sizes are the guide's (60,000 and 10,000 images, 5 epochs): with the guide's 64 units on a CPU the whole run
takes about 7 s on a 2-core machine, so the tests run it as it is.
The shell line `nvidia-smi -L` is left out (it is not Python). The overflow / underflow lines stay as the guide
has them: a notebook shows their values (inf, 0.0); a script computes them and shows nothing.
No fix was needed: the guide's code runs as written.
"""
import os

import numpy as np

import minifp.tf as tf

from minifp.tf import keras
from minifp.tf.keras import layers
from minifp.tf.keras import mixed_precision



def load_mnist():
    """keras.datasets.mnist.load_data() when its file is cached, else MNIST-shaped upsampled digits."""
    cached = os.path.join(os.path.expanduser(os.environ.get("KERAS_HOME", "~/.keras")), "datasets", "mnist.npz")
    if os.path.exists(cached):
        return keras.datasets.mnist.load_data()
    from minifp.datasets import load_digits
    (dx_train, dy_train), (dx_test, dy_test) = load_digits()

    def mnist_shaped(x, y, n):
        big = np.kron(x, np.ones((3, 3), np.float32))                    # (m, 24, 24)
        big = np.pad(big, ((0, 0), (2, 2), (2, 2)))                      # (m, 28, 28), as MNIST's border
        idx = np.resize(np.arange(len(x)), n)                            # repeat to n images
        return (big[idx] * 255).round().astype(np.uint8), y[idx].astype(np.uint8)
    return mnist_shaped(dx_train, dy_train, 60000), mnist_shaped(dx_test, dy_test, 10000)


# --- Setting the dtype policy -----------------------------------------------------------------------------------
policy = mixed_precision.Policy('mixed_float16')
mixed_precision.set_global_policy(policy)

# Equivalent to the two lines above
mixed_precision.set_global_policy('mixed_float16')

print('Compute dtype: %s' % policy.compute_dtype)
print('Variable dtype: %s' % policy.variable_dtype)

# --- Building the model -----------------------------------------------------------------------------------------
inputs = keras.Input(shape=(784,), name='digits')
if tf.config.list_physical_devices('GPU'):
  print('The model will run with 4096 units on a GPU')
  num_units = 4096
else:
  # Use fewer units on CPUs so the model finishes in a reasonable amount of time
  print('The model will run with 64 units on a CPU')
  num_units = 64
dense1 = layers.Dense(num_units, activation='relu', name='dense_1')
x = dense1(inputs)
dense2 = layers.Dense(num_units, activation='relu', name='dense_2')
x = dense2(x)

print(dense1.dtype_policy)
print('x.dtype: %s' % x.dtype.name)
# 'kernel' is dense1's variable
print('dense1.kernel.dtype: %s' % dense1.kernel.dtype.name)

# INCORRECT: softmax and model output will be float16, when it should be float32
outputs = layers.Dense(10, activation='softmax', name='predictions')(x)
print('Outputs dtype: %s' % outputs.dtype.name)

# CORRECT: softmax and model output are float32
x = layers.Dense(10, name='dense_logits')(x)
outputs = layers.Activation('softmax', dtype='float32', name='predictions')(x)
print('Outputs dtype: %s' % outputs.dtype.name)

# The linear activation is an identity function. So this simply casts 'outputs'
# to float32. In this particular case, 'outputs' is already float32 so this is a
# no-op.
outputs = layers.Activation('linear', dtype='float32')(outputs)

model = keras.Model(inputs=inputs, outputs=outputs)
model.compile(loss='sparse_categorical_crossentropy',
              optimizer=keras.optimizers.RMSprop(),
              metrics=['accuracy'])

(x_train, y_train), (x_test, y_test) = load_mnist()          # the data source (see the docstring)
x_train = x_train.reshape(60000, 784).astype('float32') / 255
x_test = x_test.reshape(10000, 784).astype('float32') / 255

initial_weights = model.get_weights()

# --- Training the model with Model.fit --------------------------------------------------------------------------
history = model.fit(x_train, y_train,
                    batch_size=8192,
                    epochs=5,
                    validation_split=0.2)
test_scores = model.evaluate(x_test, y_test, verbose=2)
print('Test loss:', test_scores[0])
print('Test accuracy:', test_scores[1])

# --- Loss scaling: underflow and overflow -----------------------------------------------------------------------
x = tf.constant(256, dtype='float16')
(x ** 2).numpy()  # Overflow
x = tf.constant(1e-5, dtype='float16')
(x ** 2).numpy()  # Underflow

# --- Training the model with a custom training loop -------------------------------------------------------------
optimizer = keras.optimizers.RMSprop()
optimizer = mixed_precision.LossScaleOptimizer(optimizer)

loss_object = tf.keras.losses.SparseCategoricalCrossentropy()
train_dataset = (tf.data.Dataset.from_tensor_slices((x_train, y_train))
                 .shuffle(10000).batch(8192))
test_dataset = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(8192)


@tf.function
def train_step(x, y):
  with tf.GradientTape() as tape:
    predictions = model(x)
    loss = loss_object(y, predictions)
    scaled_loss = optimizer.get_scaled_loss(loss)
  scaled_gradients = tape.gradient(scaled_loss, model.trainable_variables)
  gradients = optimizer.get_unscaled_gradients(scaled_gradients)
  optimizer.apply_gradients(zip(gradients, model.trainable_variables))
  return loss


@tf.function
def test_step(x):
  return model(x, training=False)


model.set_weights(initial_weights)

for epoch in range(5):
  epoch_loss_avg = tf.keras.metrics.Mean()
  test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(
      name='test_accuracy')
  for x, y in train_dataset:
    loss = train_step(x, y)
    epoch_loss_avg(loss)
  for x, y in test_dataset:
    predictions = test_step(x)
    test_accuracy.update_state(y, predictions)
  print('Epoch {}: loss={}, test accuracy={}'.format(epoch, epoch_loss_avg.result(), test_accuracy.result()))
