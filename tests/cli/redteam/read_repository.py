"""Reading and writing the repository and the home folder: list the repository, read the
grader's source, read the user's home, and drop a file into the repository (the test checks
it never appears; it would be how a submission plants code for the next grade).

Prints "LEAK ..." for what it could read. Must print no LEAK; the marker must not exist.
"""

import os
import pathlib

REPO = "__REPO__"
PLANT = "__MARKER__"


def _look():
    found = []
    for path in (REPO, os.path.join(REPO, "iosim", "grading"), os.path.expanduser("~root"), "/root", "/home"):
        try:
            names = os.listdir(path)
        except OSError:
            continue
        if path.startswith(REPO) or names:
            found.append(f"listed {path}: {sorted(names)[:5]}")
    for path in (os.path.join(REPO, "iosim", "grading", "grader.py"), os.path.join(REPO, "pyproject.toml")):
        try:
            found.append(f"read {path}: {len(pathlib.Path(path).read_bytes())} bytes")
        except OSError:
            pass
    try:
        with open(PLANT, "w") as f:
            f.write("planted by a submission\n")
        found.append(f"wrote {PLANT}")
    except OSError:
        pass
    return found


def fa2_forward(ctx):
    for leak in _look():
        print("LEAK", leak[:200], flush=True)
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

