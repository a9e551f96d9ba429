"""Ready-made models for the bundled digits: the TensorFlow guide's MLP and a small CNN."""
from . import nn
from .mixed_precision import global_policy, set_global_policy

__all__ = ["digits_mlp", "digits_cnn", "MODELS"]


def _under(policy, build):
    """Build with `policy` as the global policy (as the guide does), then restore the previous one."""
    previous = global_policy()
    set_global_policy(policy)
    try:
        return build()
    finally:
        set_global_policy(previous)


def digits_mlp(policy="float32"):
    """Flatten -> Dense(64, relu) -> Dense(64, relu) -> Dense(10) -> softmax in float32."""
    return _under(policy, lambda: nn.Sequential(
        nn.Flatten(), nn.Dense(64, activation="relu"), nn.Dense(64, activation="relu"), nn.Dense(10),
        nn.Activation("softmax", dtype="float32")))


def digits_cnn(policy="float32"):
    """Conv-BN-ReLU-pool twice, global average pooling, Dense(10), softmax in float32."""
    return _under(policy, lambda: nn.Sequential(
        nn.Reshape((1, 8, 8)),
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.GlobalAvgPool2d(),
        nn.Dense(10), nn.Activation("softmax", dtype="float32")))


MODELS = {"mlp": digits_mlp, "cnn": digits_cnn}
