"""Finding a live tf.function's entry in a profile: by name and place, Keras by model and role."""

from __future__ import annotations

from dataclasses import dataclass

from tfretrace.events import KerasInfo
from tfretrace.prevent.profile import Entry, Profile

_ROLES = {
    "fit": "train", "train_on_batch": "train", "evaluate": "test", "test_on_batch": "test",
    "predict": "predict", "predict_on_batch": "predict",
}


@dataclass(frozen=True)
class Found:
    """The matching entry, and how it was matched when not exactly (said in the report)."""

    entry: Entry
    fallback: str | None = None


def find(profile: Profile, name: str, location: str, keras: KerasInfo | None) -> Found | None:
    """The profile entry for a function met in this run, or None."""
    if keras is not None:
        return _find_keras(profile, keras)
    exact = [e for e in profile.entries if e.keras is None and e.name == name and e.report.location == location]
    if exact:
        return Found(exact[0])
    filename = location.rsplit(":", 1)[0]
    same_file = [e for e in profile.entries if e.keras is None and e.name == name
                 and e.report.location.rsplit(":", 1)[0] == filename]
    if len(same_file) == 1:
        return Found(same_file[0], f"matched by name in {filename} (recorded at {same_file[0].report.location})")
    by_name = [e for e in profile.entries if e.keras is None and e.name == name]
    if len(by_name) == 1:
        return Found(by_name[0], f"matched by name only (recorded at {by_name[0].report.location})")
    return None


def _find_keras(profile: Profile, keras: KerasInfo) -> Found | None:
    role = _ROLES.get(keras.method, keras.method)
    alike = [
        e for e in profile.entries
        if e.keras is not None and _ROLES.get(e.keras.method, e.keras.method) == role
        and e.keras.model_class == keras.model_class
    ]
    exact = [e for e in alike if e.keras is not None and e.keras.built_at == keras.built_at]
    if exact:
        return Found(exact[0])
    if len(alike) == 1 and alike[0].keras is not None:
        return Found(alike[0], f"Keras {keras.model_class} {role} matched by class and role "
                               f"(recorded built at {alike[0].keras.built_at})")
    return None
