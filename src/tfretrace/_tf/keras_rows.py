"""Whether a Keras ``predict`` call computes each row on its own: the condition for padding its rows (keras-pad-rows).

Keras 3's ``predict`` splits the input into batches and traces its predict function once per
batch shape, so a partial last batch (or a few rows, then many) traces again. Padding the rows
to a multiple of the batch size and cutting the outputs back to the original rows leaves each
kept row's prediction unchanged only where no row's output depends on another row. That is read
here from the model as it is while ``predict`` runs (only attributes are read; nothing is called):

- the model is Keras' own ``Sequential`` or ``Functional`` (a subclass may override ``call`` or
  ``predict_step``, which tfretrace cannot read), with one step per execution;
- every layer, nested models and wrapped layers included, is a Keras layer of a class listed in
  ``_PER_ROW`` (dense, convolution, pooling, normalization with fixed statistics, recurrent
  layers that keep no state between batches, ...), called without ``training=True`` (a batch
  normalization in training mode mixes the rows of its batch), and every ``keras.ops`` call in a
  functional graph is element-wise;
- every input ``predict`` got is a NumPy array or an eager float32 tensor with at least one row (the
  edit pads only those: the helper predicts such a tensor as the NumPy array it holds, the same values
  in the same dtype, so the same trace).

A layer tfretrace does not know (a custom layer, a ``Lambda``) may mix rows: the step is then
unsafe, and this module says which layer. The verdict is ``ROWS_INDEPENDENT`` or that reason.
"""

from __future__ import annotations

from typing import Any

ROWS_INDEPENDENT = "independent"

# Keras layers whose output row i is computed from input row i alone in inference (training=False).
# Dropout and noise layers are the identity there; normalization layers use fixed statistics.
_PER_ROW = frozenset({
    "InputLayer", "Dense", "Embedding", "Activation", "ReLU", "LeakyReLU", "PReLU", "ELU",
    "Softmax", "Identity", "Masking", "Flatten", "Reshape", "Permute", "RepeatVector",
    "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
    "DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D",
    "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D", "AveragePooling2D", "AveragePooling3D",
    "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D", "GlobalAveragePooling1D",
    "GlobalAveragePooling2D", "GlobalAveragePooling3D",
    "Cropping1D", "Cropping2D", "Cropping3D", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D",
    "UpSampling1D", "UpSampling2D", "UpSampling3D",
    "BatchNormalization", "LayerNormalization", "GroupNormalization", "UnitNormalization", "Normalization",
    "Rescaling",
    "Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise", "GaussianDropout",
    "AlphaDropout", "ActivityRegularization",
    "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
    "SimpleRNN", "LSTM", "GRU", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "Bidirectional", "TimeDistributed",
    "Attention", "AdditiveAttention", "MultiHeadAttention", "GroupQueryAttention",
})
# keras.ops calls in a functional graph that work element by element (each row from its own row).
_ELEMENTWISE_OPS = frozenset({
    "Add", "Subtract", "Multiply", "Divide", "TrueDivide", "Negative", "Abs", "Absolute", "Exp", "Log", "Sqrt",
    "Square", "Tanh", "Sigmoid", "Relu", "Maximum", "Minimum", "Clip", "Cast", "Power",
})
_MODELS = frozenset({"Sequential", "Functional"})


def predict_rows(model: Any, predict_locals: dict[str, Any]) -> str:
    """``ROWS_INDEPENDENT`` where padding this predict call's rows leaves each kept row's prediction; else why not."""
    try:
        found = inputs_reason(predict_locals.get("x"))
        if found is None:
            found = _model(model)
        return ROWS_INDEPENDENT if found is None else found
    except Exception as exc:  # reading a model must never break a trace: unknown is not independent
        return f"tfretrace could not read the model ({type(exc).__name__})"


def inputs_reason(x: Any) -> str | None:
    """Why ``predict``'s input is not one the edit pads (NumPy arrays, one row count, rows); None if it is."""
    import numpy as np

    leaves: list[Any] = []
    _flatten(x, leaves)
    if not leaves or not all((type(a) is np.ndarray and a.ndim > 0) or float32_eager(a) for a in leaves):
        return ("predict was given something other than NumPy arrays or float32 tensors (a dataset, a tensor "
                "of another dtype, a DataFrame)")
    if len({a.shape[0] for a in leaves}) != 1 or leaves[0].shape[0] == 0:
        return "predict's arrays do not have one row count of at least one"
    return None


def float32_eager(a: Any) -> bool:
    """An eager float32 tensor with rows: the helper predicts it as the NumPy array it holds (the same values)."""
    shape = getattr(a, "shape", None)
    return (type(a).__name__ == "EagerTensor" and getattr(getattr(a, "dtype", None), "name", None) == "float32"
            and shape is not None and (shape.rank or 0) > 0)


def _flatten(x: Any, out: list[Any]) -> None:
    if isinstance(x, dict):
        for value in x.values():
            _flatten(value, out)
    elif isinstance(x, (list, tuple)):
        for value in x:
            _flatten(value, out)
    else:
        out.append(x)


def _model(model: Any) -> str | None:
    kind = type(model)
    if kind.__name__ not in _MODELS or not kind.__module__.startswith("keras."):
        return (f"the model is a {kind.__name__}, a subclass whose call or predict_step tfretrace cannot read: "
                "it may compute a row from other rows")
    if getattr(model, "steps_per_execution", 1) != 1:
        return "the model runs several steps per execution: predict groups batches by that number too"
    return _layers(model, set())


def _layers(model: Any, seen: set[int]) -> str | None:
    if id(model) in seen:
        return None
    seen.add(id(model))
    operations = getattr(model, "operations", None)
    found = list(operations if operations is not None else getattr(model, "layers", ()))
    for op in found:
        reason = _operation(op, seen)
        if reason is not None:
            return reason
    return None


def _operation(op: Any, seen: set[int]) -> str | None:
    kind = type(op)
    name = kind.__name__
    if kind.__module__.startswith("keras.src.ops."):
        if name in _ELEMENTWISE_OPS:
            return None
        return f"the model applies keras.ops {name}, which may combine rows"
    if not kind.__module__.startswith("keras."):
        return f"layer {getattr(op, 'name', name)!r} is a {name}, not a Keras layer known to compute each row alone"
    if name in _MODELS:
        return _layers(op, seen)
    if name not in _PER_ROW:
        return f"layer {getattr(op, 'name', name)!r} is a {name}, which may combine rows"
    if getattr(op, "stateful", False):
        return f"layer {getattr(op, 'name', name)!r} is stateful: its state carries from one batch's rows to the next"
    for node in getattr(op, "_inbound_nodes", ()):
        arguments = getattr(node, "arguments", None)
        if arguments is not None and getattr(arguments, "kwargs", {}).get("training") is True:
            return f"layer {getattr(op, 'name', name)!r} is called with training=True: it computes batch statistics"
    for inner in (getattr(op, "layer", None), getattr(op, "forward_layer", None), getattr(op, "backward_layer", None)):
        if inner is not None:
            reason = _operation(inner, seen)
            if reason is not None:
                return reason
    return None
