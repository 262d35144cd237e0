"""Name resolution: aliases of tensorflow and keras resolve; look-alikes do not."""

from __future__ import annotations

import textwrap

import pytest

from tfretrace.lint import lint_source


def codes(source: str) -> list[str]:
    return [f.code for f in lint_source(textwrap.dedent(source))]


@pytest.mark.parametrize(
    "imports, decorator",
    [
        ("import tensorflow as tf", "tf.function"),
        ("import tensorflow as tf2", "tf2.function"),
        ("import tensorflow", "tensorflow.function"),
        ("from tensorflow import function as tff", "tff"),
        ("from tensorflow import function", "function"),
        ("import tensorflow.compat.v2 as tf", "tf.function"),
        ("from tensorflow.python.eager import def_function", "def_function.function"),
        ("import tensorflow as tf", "tf.function(jit_compile=True)"),
    ],
)
def test_tf_function_aliases(imports: str, decorator: str) -> None:
    source = f"{imports}\n@{decorator}\ndef f(x):\n    print(x)\n    return x\n"
    assert codes(source) == ["TFR108"]


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import keras", "keras.Sequential()"),
        ("import tensorflow as tf", "tf.keras.Sequential()"),
        ("import tensorflow as tf", "tf.keras.models.Model(a, b)"),
        ("from tensorflow import keras", "keras.Model(a, b)"),
        ("from keras import models", "models.Sequential()"),
        ("from keras.models import Sequential", "Sequential()"),
        ("import tf_keras", "tf_keras.Sequential()"),
        ("from keras.src.models import Sequential", "Sequential()"),
    ],
)
def test_keras_aliases(imports: str, call: str) -> None:
    assert codes(f"{imports}\nfor i in data:\n    m = {call}\n") == ["TFR103"]


@pytest.mark.parametrize(
    "source",
    [
        # A user-defined `function` decorator is not tf.function.
        "from mylib import function\n@function\ndef f(x):\n    print(x)\n",
        "def function(f):\n    return f\n@function\ndef f(x):\n    print(x)\n",
        # A local `tf` that is not TensorFlow.
        "import mylib as tf\n@tf.function\ndef f(x):\n    print(x)\n",
        "def g(tf):\n    @tf.function\n    def f(x):\n        print(x)\n",
        "class tf:\n    function = staticmethod(lambda f: f)\n@tf.function\ndef f(x):\n    print(x)\n",
        # No import at all: nothing can be resolved.
        "@tf.function\ndef f(x):\n    print(x)\n",
        # A Sequential that is not Keras.
        "from mylib import Sequential\nfor i in d:\n    Sequential()\n",
    ],
)
def test_look_alikes_are_not_flagged(source: str) -> None:
    assert codes(source) == []


def test_autograph_if_on_tensor_is_not_flagged() -> None:
    source = """
    import tensorflow as tf

    @tf.function
    def f(x):
        if tf.reduce_sum(x) > 0:
            x = x + 1
        for i in tf.range(3):
            x = x * 2
        return x
    """
    assert codes(source) == []
