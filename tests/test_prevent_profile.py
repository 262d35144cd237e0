"""The profile without TensorFlow: families of shapes to warm, what cannot be prevented, matching."""

from __future__ import annotations

from sessions import python, tensor
from tfretrace.records.events import TraceEvent
from tfretrace.records.function_key import FunctionKey
from tfretrace.records.function_report import FunctionReport
from tfretrace.runtime.prevent.match import find
from tfretrace.runtime.prevent.profile import Profile, entry_of, families


def _report(*signatures: tuple[object, ...], causes: tuple[str, ...] = ()) -> FunctionReport:
    events = tuple(
        TraceEvent(
            index=i + 1, cause=(causes[i] if i < len(causes) else ("first-trace" if i == 0 else "shape-changed")),
            seconds=0.01, time=float(i), call_site="train.py:20", signature=tuple(sig),  # type: ignore[arg-type]
        )
        for i, sig in enumerate(signatures)
    )
    return FunctionReport("train_step", "train.py:8", len(events), len(events), 0.01, 1, events)


def test_varied_dims_open_the_rest_as_recorded() -> None:
    sigs = [(tensor("x", 32, 4), python("training", True)), (tensor("x", 7, 4), python("training", True))]
    (general,) = families(sigs)  # type: ignore[arg-type]
    assert general[0].shape == (None, 4)
    assert general[1] == python("training", True)


def test_one_general_signature_per_python_value_family() -> None:
    sigs = [
        (tensor("x", 32, 4), python("training", True)),
        (tensor("x", 7, 4), python("training", True)),
        (tensor("x", 32, 4), python("training", False)),
    ]
    (general,) = families(sigs)  # type: ignore[arg-type]  # the False family has one shape: nothing to warm
    assert general[1] == python("training", True)


def test_unpreventable_causes_are_counted_apart() -> None:
    report = _report(
        (tensor("x", 3), python("lr", 0.1)), (tensor("x", 3), python("lr", 0.2)), (tensor("x", 5), python("lr", 0.2)),
        causes=("first-trace", "python-value-changed", "shape-changed"),
    )
    entry = entry_of(report)
    assert entry.unpreventable == (("python-value-changed", 1, None),)
    assert entry.warmable  # the lr=0.2 family varied in shape


def test_match_exact_then_moved_then_edited() -> None:
    report = _report((tensor("x", 3),), (tensor("x", 5),))
    keyed = FunctionReport(**{**report.__dict__, "key": FunctionKey("app.train", "train_step", "abc")})
    profile = Profile("p.json", (entry_of(keyed),), "2.21.0", None)
    exact = find(profile, FunctionKey("app.train", "train_step", "abc"))
    assert exact is not None and exact.fallback is None
    moved = find(profile, FunctionKey("app.steps", "train_step", "abc"))
    assert moved is not None and moved.fallback is not None
    edited = find(profile, FunctionKey("app.train", "train_step", "def"))
    assert edited is not None and edited.fallback is not None
    assert find(profile, FunctionKey("app.other", "eval_step", "abc")) is None


def _keyed(*signatures: tuple[object, ...], code: str = "abc") -> FunctionReport:
    report = _report(*signatures)
    return FunctionReport(**{**report.__dict__, "key": FunctionKey("app.train", "train_step", code)})


def test_a_profile_only_widens_and_replaces_an_edited_function() -> None:
    from sessions import session

    profile = Profile.from_session(session(_keyed((tensor("x", 3),))), "p.json")
    assert not profile.entries[0].warmable  # one size: nothing to warm yet
    wider, added = profile.widened(session(_keyed((tensor("x", 5),))))
    assert added == 1 and wider.entries[0].warmable
    (general,) = wider.entries[0].groups[0].warm
    assert general[0].shape == (None,)
    same, added = wider.widened(session(_keyed((tensor("x", 3),))))
    assert added == 0 and same.entries == wider.entries
    covered, added = wider.widened(session(_keyed((tensor("x", 7),))))
    assert added == 0 and covered.entries == wider.entries  # the warm-up already serves it
    edited, _ = wider.widened(session(_keyed((tensor("x", 9),), code="def")))
    assert [e.key.code_hash for e in edited.entries] == ["def"]  # the stale entry is replaced


def test_the_profile_file_round_trips_and_refuses_bad_input(tmp_path: object) -> None:
    import json
    from pathlib import Path

    import pytest

    from sessions import session
    from tfretrace.records.session import SessionFormatError
    from tfretrace.runtime.prevent.profile_file import read_profile, to_dict, write_profile

    folder = Path(str(tmp_path))
    profile = Profile.from_session(session(_keyed((tensor("x", 3),), (tensor("x", 5),))), str(folder / "p.json"))
    write_profile(profile)
    again = read_profile(str(folder / "p.json"))
    assert again.entries == profile.entries and again.learnable
    for bad in ({"tfretrace-profile": 2}, {"tfretrace-profile": 1, "functions": [{"key": 3}]},
                {**to_dict(profile), "functions": [{**to_dict(profile)["functions"][0], "groups": "x"}]}):
        (folder / "bad.json").write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(SessionFormatError) as caught:
            read_profile(str(folder / "bad.json"))
        assert "\n" not in str(caught.value) and "bad.json" in str(caught.value)


def test_profile_show_lists_what_a_run_warms(tmp_path: object, capsys: object) -> None:
    from pathlib import Path

    from sessions import session
    from tfretrace.cli.app import main
    from tfretrace.runtime.prevent.profile_file import write_profile

    path = Path(str(tmp_path)) / "p.json"
    write_profile(Profile.from_session(session(_keyed((tensor("x", 3),), (tensor("x", 5),))), str(path)))
    assert main(["profile", "show", str(path)]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "app.train:train_step#abc" in out and "2 call signature(s), 1 to warm" in out
    assert main(["profile", "show", str(path) + ".missing"]) == 2


def test_learning_widens_the_file_as_it_is_now(tmp_path: object) -> None:
    from pathlib import Path

    from sessions import session
    from tfretrace.runtime.prevent.learn import learn
    from tfretrace.runtime.prevent.profile_file import read_profile, write_profile

    path = str(Path(str(tmp_path)) / "p.json")
    write_profile(Profile.from_session(session(_keyed((tensor("x", 3),))), path))
    loaded = read_profile(path)  # this run starts
    write_profile(loaded.widened(session(_keyed((tensor("x", 5),))))[0])  # another run ends first
    _, learned = learn(loaded, session(_keyed((tensor("x", 9, 2),))))
    assert learned.added == 1 and learned.written == path
    (entry,) = read_profile(path).entries
    assert [sig[0].shape for sig in entry.groups[0].recorded] == [(3,), (5,), (9, 2)]
