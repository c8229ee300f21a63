"""docs/cache.md's worked H200 example quotes what the model gives: its table is
examples/h200_l2_gap.py's rows, and its opening command's DRAM reads are what `simulate` prints."""

import json
import pathlib
import re

from conftest import load_module
from iosim.cli.main import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "cache.md").read_text()


def _number(cell: str):
    cell = cell.strip()
    return None if cell == "–" else float(cell.replace(",", ""))


def test_the_worked_table_is_the_examples_rows():
    section = PAGE.split("## Theorem 2's count against DRAM traffic")[1].split("\n## ")[0]
    table = [line.split("|")[1:-1] for line in section.splitlines() if re.match(r"^\|\s+[\d,]+ \|", line)]
    rows = load_module("h200_l2_gap", ROOT / "examples" / "h200_l2_gap.py").rows()
    assert [int(_number(r[0])) for r in table] == [r["N"] for r in rows]
    for cells, row in zip(table, rows):
        n, count, model, measured, once, ratio = map(_number, cells)
        assert (count, model, once) == (row["theorem2_count_read"], row["model_dram_read"], row["qkv_once"]), n
        assert measured == row["measured_dram_read"], n
        assert ratio == round(row["theorem2_count_read"] / row["model_dram_read"], 1), n


def test_the_opening_commands_dram_reads(capsys):
    command = re.search(r"^\$ iosim (simulate .*)$", PAGE, re.M).group(1).split()
    quoted = int(re.search(r"hit rate and ([\d,]+) bytes read from DRAM", PAGE).group(1).replace(",", ""))
    assert main(command + ["--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["dram"]["read_bytes"] == quoted
