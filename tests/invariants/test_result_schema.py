"""The result's JSON contract: every output of the golden matrix, and a CLI run, validate
against docs/result.schema.json; the schema itself is a valid draft 2020-12 schema."""

import json
import pathlib
import os
import subprocess
import sys

import pytest

jsonschema = pytest.importorskip("jsonschema")

from iosim import Options, Problem, simulate  # noqa: E402
from iosim.run.result import SCHEMA_VERSION  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = json.load(open(os.path.join(ROOT, "docs", "result.schema.json")))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def test_the_schema_is_valid():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["schema_version"]["const"] == SCHEMA_VERSION


def test_golden_outputs_validate():
    golden = json.load(open(os.path.join(ROOT, "tests", "golden", "golden.json")))
    outputs = [v for v in golden.values() if "error" not in v]
    assert len(outputs) >= 200
    for out in outputs:  # the golden outputs predate schema_version
        VALIDATOR.validate({"schema_version": SCHEMA_VERSION, **out})


@pytest.mark.parametrize("options", [Options(), Options(cache=True), Options(kernel="flash-attn-2", cache=True)])
def test_results_carry_the_version_and_validate(options):
    r = simulate("h200", "fa2", Problem(seq_len=512, head_dim=64, heads=2), passes="forward+backward", options=options)
    d = r.to_dict()
    assert d["schema_version"] == SCHEMA_VERSION
    VALIDATOR.validate(d)


def test_spill_frame_fills_validate():
    """A forward that fills spill frames from DRAM lists them (dram.frame_read_bytes)."""
    r = simulate("h200", "fa2", Problem(seq_len=1000, head_dim=40, batch=2, heads=8), passes="forward",
                 options=Options(kernel="flash-attn-2", cache=True))
    d = r.to_dict()
    assert d["dram"]["frame_read_bytes"] > 0
    VALIDATOR.validate(d)


def test_the_schema_rejects_what_the_contract_forbids():
    d = simulate("toy", "fa2", Problem(seq_len=64, head_dim=16)).to_dict()
    for broken in ({**d, "hbm": {**d["hbm"], "read_bytes": 1.5}},   # counts are integers
                   {**d, "surprise": 1},                           # no unlisted top-level field
                   {k: v for k, v in d.items() if k != "theorem2"}):
        with pytest.raises(jsonschema.ValidationError):
            VALIDATOR.validate(broken)


def test_cli_json_validates():
    out = subprocess.run([sys.executable, "-m", "iosim", "simulate", "--hw", "h100-sxm", "--algo", "fa2", "-N", "1024",
                          "-d", "64", "--format", "json"], capture_output=True, text=True, check=True).stdout
    VALIDATOR.validate(json.loads(out))


def test_runs_past_the_l2_budget_and_extended_heads_validate():
    """The L2 model past its exact budget plays a sample of the chunks and says so (``l2.model``,
    ``sample_rate``, ``sampled_within``), or windows of the rounds; off only where no sample
    fits a budget, saying why (``l2_off``); heads extended from steps that nearly agree say how near
    (``heads_extended_within``): all in the contract."""
    argv = [sys.executable, "-m", "iosim", "simulate", "--hw", "h200", "--algo", "fa2", "-d", "128",
            "--block-q", "128", "--block-kv", "64", "--causal", "--format", "json"]
    done = subprocess.run(argv + ["-N", "65536", "-H", "16"], capture_output=True, text=True, check=True)
    sampled = json.loads(done.stdout)
    assert sampled["l2"]["model"] == "sampled" and 0 < sampled["l2"]["per_kernel"]["main"]["sample_rate"] < 1
    VALIDATOR.validate(sampled)
    toy = [sys.executable, "-m", "iosim", "simulate", "--hw", "toy", "--algo", "fa2", "-d", "16", "-N", str(2 ** 18),
           "--block-q", "64", "--block-kv", "64", "--format", "json"]
    done = subprocess.run(toy, capture_output=True, text=True, check=True)
    windowed = json.loads(done.stdout)          # its sample of the chunks past the budget too: windows
    assert windowed["l2"]["model"] == "windowed" and "l2_off" not in windowed
    VALIDATOR.validate(windowed)
    from iosim.run import launches
    with pytest.MonkeyPatch.context() as mp:     # no budget at all: off, and why (no real budget does this)
        mp.setattr(launches, "AUTO_REQUESTS", 0)
        off = simulate("toy", "fa2", Problem(seq_len=4096, head_dim=16), options=Options(cache="auto")).to_dict()
    assert "l2" not in off and "no sample of them fits" in off["l2_off"]
    VALIDATOR.validate(off)
    near = simulate("h200", "fa2", Problem(seq_len=2048, head_dim=128, batch=4, heads=200, causal=True),
                    blocks=(128, 64), options=Options(cache=True)).to_dict()
    assert near["l2"]["per_kernel"]["main"]["heads_extended_within"] > 0
    VALIDATOR.validate(near)


def test_json_keys_are_ascii():
    """Issue 15: scripts type the JSON's keys; none may need a character off the keyboard
    (the roofline's link resources were 'link hbm–l2', with an en dash). Every golden output."""
    golden = json.loads((pathlib.Path(__file__).resolve().parents[1] / "golden" / "golden.json").read_text())
    bad = set()

    def walk(x):
        if isinstance(x, dict):
            bad.update(k for k in x if not k.isascii())
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(golden)
    assert not bad, sorted(bad)


def test_each_kernel_launchs_own_peaks():
    """A run whose schedule names its kernel launches (ctx.kernel) gives each launch's own peak
    of shared memory and registers; the run's peak is the largest of them (and of what runs
    outside every launch). A schedule that names none gives none."""
    problem = Problem(seq_len=512, head_dim=64, heads=2)
    d = simulate("h200", "fa2", problem, passes="forward+backward", options=Options(kernel="flash-attn-2")).to_dict()
    VALIDATOR.validate(d)
    for level in ("sram", "registers"):
        own = d[level]["peak_bytes_by_kernel"]
        assert {"dot_do_o", "dq_dk_dv", "convert_dq"} <= set(own) and max(own.values()) <= d[level]["peak_bytes"]
    own = d["registers"]["peak_bytes_by_kernel"]
    assert own["dq_dk_dv"] == d["registers"]["peak_bytes"] > own["convert_dq"] > 0     # each its own, not the run's
    assert "reduce_dkv" not in own and set(own) <= set(d["kernels"])   # MHA: dK, dV not reduced, no such launch
    assert "peak_bytes_by_kernel" not in simulate("h200", "fa2", problem).to_dict()["registers"]
