"""Loading TensorFlow and checking which TensorFlow and Keras versions are in use."""

from __future__ import annotations

import os
import re
import sys
import warnings
from typing import Any

from tfretrace._util.text import split_site
from tfretrace.records.errors import TensorFlowMissingError, UnsupportedVersionError, UntestedVersionWarning

# The range the test matrix (make test-matrix) runs. Older TensorFlow fails clearly (its tracing
# internals differ); newer TensorFlow and Keras run with one warning, since their internals have
# so far stayed readable, and anything that cannot be hooked is left alone and noted.
# The matrix's nightly row (TF 2.23 dev, Keras 3.16 dev) is green, so those count as tested too.
MIN_TF = (2, 15)
NEWEST_TESTED_TF = (2, 23)
MIN_KERAS3 = (3, 4)
NEWEST_TESTED_KERAS3 = (3, 16)
TESTED = "TensorFlow 2.15 to 2.21 and the 2.23 nightly, with Keras 2 (2.15, tf-keras) or Keras 3.4 to 3.16"

_warned: set[str] = set()


def load_tensorflow() -> tuple[Any, Any]:
    """Import TensorFlow, refusing versions older than 2.15; return (tf, tracing_compilation).

    Raises UnsupportedVersionError for an old TensorFlow (unless TFRETRACE_ALLOW_UNSUPPORTED=1),
    and ImportError/AttributeError when the tracing module is missing, which the hooks contain.
    """
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise TensorFlowMissingError(
            "tfretrace's runtime monitor needs TensorFlow: pip install 'tfretrace[tensorflow]' "
            f"(or tensorflow-cpu); import failed with: {exc}"
        ) from None
    version = str(getattr(tf, "__version__", "?"))
    parsed = parse_version(version)
    allow = os.environ.get("TFRETRACE_ALLOW_UNSUPPORTED") == "1"
    if (parsed is None or parsed < MIN_TF) and not allow:
        raise UnsupportedVersionError(
            f"tfretrace needs TensorFlow 2.15 or newer (tested: {TESTED}); found TensorFlow {version}. "
            "`tfretrace lint` works without it; TFRETRACE_ALLOW_UNSUPPORTED=1 tries anyway."
        )
    from tensorflow.python.eager.polymorphic_function import tracing_compilation

    return tf, tracing_compilation


def require_tensorflow() -> None:
    """Raise TensorFlowMissingError when TensorFlow is not installed; imports nothing."""
    import importlib.util

    try:
        found = importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise TensorFlowMissingError(
            "tfretrace's runtime monitor needs TensorFlow: pip install 'tfretrace[tensorflow]' "
            "(or tensorflow-cpu); import failed with: No module named 'tensorflow'"
        )


def parse_version(text: str) -> tuple[int, int] | None:
    """(major, minor) of a version string such as '2.23.0-dev20261026' or '3.16.0.dev2026'."""
    match = re.match(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def tf_keras_is_legacy() -> bool:
    """Whether tf.keras means tf_keras (Keras 2), by TensorFlow's own rule for TF_USE_LEGACY_KERAS."""
    return os.environ.get("TF_USE_LEGACY_KERAS") in ("true", "True", "1")


def keras_in_use() -> tuple[str, str] | None:
    """(package, version) of the Keras that tf.keras is, without importing anything new.

    TensorFlow 2.15's tf.keras is the keras package (Keras 2); from 2.16 on it is keras (Keras 3),
    unless TF_USE_LEGACY_KERAS selects tf_keras (the same rule in every supported TensorFlow).
    """
    if tf_keras_is_legacy():
        legacy = _version_of("tf_keras")
        if legacy is not None:
            return "tf_keras", legacy
    found = _version_of("keras")
    return ("keras", found) if found is not None else None


def installed_keras_version() -> str | None:
    """The version of the Keras in use (see keras_in_use), or None without Keras."""
    found = keras_in_use()
    return found[1] if found else None


def _version_of(package: str) -> str | None:
    module = sys.modules.get(package)
    if module is not None:
        return str(getattr(module, "__version__", "")) or None
    from importlib.metadata import PackageNotFoundError, version

    name = package.replace("_", "-")
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def keras_package() -> str | None:
    """'keras' or 'tf_keras': which package the Keras in use is (None without Keras)."""
    found = keras_in_use()
    return found[0] if found else None


def loaded_versions() -> tuple[str | None, str | None]:
    """(TensorFlow version, Keras version) of what is loaded, without importing anything new."""
    tf = sys.modules.get("tensorflow")
    return (getattr(tf, "__version__", None) if tf else None), installed_keras_version()


def untested_notes(tf_version: str) -> list[str]:
    """One line per version in use that the test matrix does not cover (empty when all are)."""
    notes = []
    parsed = parse_version(tf_version)
    if parsed is not None and parsed > NEWEST_TESTED_TF:
        notes.append(f"TensorFlow {tf_version} is newer than tfretrace was tested with ({TESTED})")
    elif parsed is not None and parsed < MIN_TF:
        notes.append(f"TensorFlow {tf_version} is older than tfretrace supports ({TESTED})")
    keras = keras_in_use()
    if keras is not None:
        package, version = keras
        major = parse_version(version)
        if package == "keras" and major is not None and major[0] >= 3:
            if major > NEWEST_TESTED_KERAS3:
                notes.append(f"Keras {version} is newer than tfretrace was tested with ({TESTED})")
            elif major < MIN_KERAS3:
                notes.append(f"Keras {version} is older than tfretrace was tested with ({TESTED})")
        elif package == "tf_keras" and major is not None and major > NEWEST_TESTED_TF:
            notes.append(f"tf_keras {version} is newer than tfretrace was tested with ({TESTED})")
    return notes


def warn_once(message: str, site: str | None) -> None:
    """Emit an UntestedVersionWarning for this message once per process, at the user's ``path:line``."""
    if message in _warned:
        return
    _warned.add(message)
    # Attributed to the user's call site, not to tfretrace's own frames (which the user cannot fix).
    filename, lineno = split_site(site)
    text = f"tfretrace: {message}; results may be incomplete"
    warnings.warn_explicit(text, UntestedVersionWarning, filename, lineno, module="tfretrace")
