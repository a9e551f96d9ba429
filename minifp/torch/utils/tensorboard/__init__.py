"""torch.utils.tensorboard: SummaryWriter, writing TensorBoard event files with the `tensorboard` package (the
`tensorboard` extra). Importing this module without it raises the ModuleNotFoundError PyTorch's does."""
import tensorboard

if tuple(int(p) for p in tensorboard.__version__.split(".")[:2] if p.isdigit()) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
