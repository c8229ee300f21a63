"""Every Python block in the README and the docs (the tutorial apart: test_tutorial runs it
as one session) runs on its own, from a folder outside the repository."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                               if f.endswith(".md") and f != "tutorial.md")
BLOCKS = [(page, i, block) for page in PAGES
          for i, block in enumerate(re.findall(r"```python\n(.*?)```", open(os.path.join(ROOT, page)).read(), re.S))]


@pytest.mark.parametrize("page,index,block", BLOCKS, ids=[f"{p}:{i}" for p, i, _ in BLOCKS])
def test_python_block_runs(page, index, block, tmp_path):
    done = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
