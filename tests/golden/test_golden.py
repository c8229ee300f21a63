"""Golden outputs: every configuration of configs.py gives exactly the JSON frozen in golden.json.

A regression guard for refactors of the core: outputs are compared as serialised text
(``json.dumps(..., sort_keys=True)``), so a changed count, a changed float in its last digit,
a renamed or dropped key, or a changed error message all fail. A top-level
``schema_version`` is ignored (the JSON contract is to gain one).

When a change of output is intended, regenerate with ``python tests/golden/make_golden.py``
and review the diff of golden.json.
"""

import json
import pathlib

import pytest

from configs import configurations, dumps, normalise, run

GOLDEN_PATH = pathlib.Path(__file__).resolve().with_name("golden.json")
CONFIGS = configurations()
REGENERATE = "python tests/golden/make_golden.py"


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN_PATH.read_text())


def _leaves(value, path=""):
    """{dotted path: serialised leaf} of a JSON value (lists are leaves)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{path}.{k}" if path else str(k)))
        return out or {path: "{}"}
    return {path: json.dumps(value, sort_keys=True)}


def _difference(want: dict, got: dict, limit: int = 15) -> str:
    a, b = _leaves(want), _leaves(got)
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    lines = [f"  {k}: golden {a.get(k, '<absent>')}  now {b.get(k, '<absent>')}" for k in keys[:limit]]
    if len(keys) > limit:
        lines.append(f"  ... and {len(keys) - limit} more differing keys")
    return "\n".join(lines)


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c["id"] for c in CONFIGS])
def test_output_equals_golden(cfg, golden):
    assert cfg["id"] in golden, f"no golden output for this configuration: run {REGENERATE}"
    got = normalise(run(cfg))
    want = golden[cfg["id"]]
    if dumps(got) != dumps(want):
        pytest.fail(f"output differs from golden.json ({cfg['id']}):\n{_difference(want, got)}\n"
                    f"if the change is intended, run {REGENERATE} and review the diff", pytrace=False)


def test_every_configuration_has_a_golden_output_and_no_more(golden):
    ids = [c["id"] for c in CONFIGS]
    assert len(ids) == len(set(ids))
    missing, extra = sorted(set(ids) - golden.keys()), sorted(golden.keys() - set(ids))
    assert not missing and not extra, f"not in golden.json: {missing[:10]}; only in golden.json: {extra[:10]}"


def test_errors_are_exactly_the_expected_ones(golden):
    for cfg in CONFIGS:
        assert golden[cfg["id"]].get("error") == cfg.get("expect_error"), cfg["id"]
    ok = [c for c in CONFIGS if "expect_error" not in c]
    assert len(ok) >= 200
    assert sum("error" not in golden[c["id"]] for c in CONFIGS) >= 200
