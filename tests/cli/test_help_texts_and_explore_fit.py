"""Help texts that state what the code does (QA items 6, 7), and `iosim explore` refusing
block lists none of whose tiles fits instead of ranking a tile nobody asked for (QA item 8)."""

import pathlib
import re

import pytest

from conftest import run_untraced
from iosim import Problem
from iosim.cli.commands import HELP
from iosim.cli.main import build_parser, main
from iosim.errors import ProblemError
from iosim.kernels.cudnn_preset import KERNEL_HEAD_DIMS, kernel_head_dim
from iosim.studies.bounds import CLAIMS
from iosim.studies.explore import explore

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _subparser(name: str):
    parser = build_parser()
    return next(a for a in parser._actions if hasattr(a, "choices") and isinstance(a.choices, dict)).choices[name]


def _help(name: str) -> str:
    return " ".join(_subparser(name).format_help().split())


# -- item 6: validate --vendor cudnn's head dims ---------------------------------------------------
def test_validate_help_states_the_cudnn_presets_head_dims():
    largest = max(KERNEL_HEAD_DIMS)
    assert largest == 256 and kernel_head_dim(256) == 256
    with pytest.raises(ProblemError):
        kernel_head_dim(264)
    text = _help("validate")
    assert "cudnn: Hopper, d <= 256 and a multiple of 8" in text and "d <= 128" not in text
    assert "Hopper, d ≤ 256" in (ROOT / "README.md").read_text()       # the README says the same


# -- item 7: what bounds checks, and pebble's formats ------------------------------------------------
def test_iosim_help_names_every_claim_family_bounds_checks():
    ids = set(CLAIMS)
    assert {"theorem2-standard", "theorem5-flash-backward", "proposition3-lower", "proposition4-block-sparse"} <= ids
    line = HELP["bounds"]
    assert "Theorems 2 and 5" in line and "Propositions 3 and 4" in line and "compulsory" in line


def test_pebbling_page_lists_every_format_and_option():
    page = (ROOT / "docs" / "pebbling.md").read_text()
    formats = next(a for a in _subparser("pebble")._actions if "--format" in a.option_strings).choices
    assert f"`--format {'|'.join(formats)}`".replace("|", "\\|") in page
    options = {o for a in _subparser("pebble")._actions for o in a.option_strings if o.startswith("--")}
    documented = set(re.findall(r"`(--[a-z-]+)", page))
    assert options - {"--help"} <= documented, options - documented


# -- item 8: explore with no tile of the lists fitting ---------------------------------------------
@pytest.mark.parametrize("blocks,smallest,need", [
    (["--block-q", "1000", "--block-kv", "1000"], "1000×1000", "192,000"),
    (["--block-q", "1000,2000"], "1000×16", "66,048"),                   # the grid's columns for the other axis
])
def test_explore_refuses_when_no_tile_given_fits(capsys, blocks, smallest, need):
    argv = ["explore", "--hw", "toy", "--algo", "fa2", "-N", "1024", "-d", "32", *blocks]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert (f"iosim: error: fa2 at N = 1,024, d = 32: none of the tiles given fits: the smallest asked, "
            f"B_r×B_c = {smallest}, needs {need} B of shared memory, and toy has 8,192 B per block "
            "(M = 4,096 fp16 elements)") in err
    assert "best" not in err


def test_explore_still_ranks_when_one_tile_given_fits():
    res = explore("toy", "fa2", Problem(seq_len=1024, head_dim=32), block_q=[16, 1000], block_kv=[16, 1000],
                  cache=False)
    assert any(c.eligible(False) and "user" in c.sources for c in res.candidates)


def test_explore_api_refuses_too(capsys):
    with pytest.raises(ProblemError, match="none of the tiles given fits"):
        explore("toy", "fa2", Problem(seq_len=1024, head_dim=32), block_q=[1000], block_kv=[1000], cache=False)


# -- explore's header names where its tiles came from -----------------------------------------------
@pytest.mark.parametrize("blocks,source", [
    ([], "grid tensor-core (up to "),
    (["--block-q", "64,128", "--block-kv", "64"], "tiles given and the paper's tile and the kernel's tile: 4 tiles run"),
    (["--block-q", "128", "--block-kv", "128"], "tiles given and the paper's tile: 2 tiles run"),
    (["--block-q", "64,128"], "tiles given, B_c from grid tensor-core (up to "),
])
def test_explore_header_says_where_the_tiles_came_from(capsys, blocks, source):
    code, out, _ = run_untraced(capsys, "explore", "--hw", "h200", "--algo", "fa2", "-N", "4096", "-d", "64",
                                "--no-cache", *blocks)
    assert code == 0
    header = next(line for line in out.splitlines() if " tiles run: " in line)
    assert header.startswith(source)
    assert ("grid" in header) == ("--block-kv" not in blocks)
