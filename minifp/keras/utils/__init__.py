"""keras.utils: Keras 3's utilities over NumPy: to_categorical, normalize, pad_sequences, set_random_seed,
Progbar, PyDataset (Sequence), split_dataset, timeseries_dataset_from_array, the image helpers (Pillow, the
`vision` extra), plot_model (pydot and Graphviz) and get_file (Keras's cache folder; minifp downloads nothing
here). The datasets these return are minifp.keras's tf.data.Dataset-like Dataset: fit() and a for-loop take them.
"""
from ..backend import clear_session
from ..callbacks import Progbar
from ..trainer import pack_x_y_sample_weight, unpack_x_y_sample_weight
from ._pydataset import PyDataset, Sequence, split_dataset, timeseries_dataset_from_array
from ._files import get_file, model_to_dot, plot_model
from ._images import array_to_img, img_to_array, load_img, save_img
from ._numerical import normalize, pad_sequences, set_random_seed, to_categorical

__all__ = ["clear_session", "Progbar", "PyDataset", "Sequence", "array_to_img", "get_file", "img_to_array", "load_img",
           "model_to_dot", "normalize", "pack_x_y_sample_weight", "pad_sequences", "plot_model", "save_img",
           "set_random_seed", "split_dataset", "timeseries_dataset_from_array", "to_categorical",
           "unpack_x_y_sample_weight"]
