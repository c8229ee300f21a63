"""Reading instructor files: look for examples/assignments/instructor/fa2_solution.py by
absolute and relative paths (the course repository's known place, the working directory and
its parents, the iosim package's folder, the child's command line, the grader's cwd through
/proc/PPID/cwd), and if found run it instead of writing one.

Prints "LEAK ..." for what it could read. Must fail (exactness: zeros) and print no LEAK.
"""

import os
import pathlib
import sys

REPO = "__REPO__"
WANT = "examples/assignments/instructor/fa2_solution.py"


def _candidates():
    roots = [REPO, os.getcwd(), "..", "../..", "../../..", f"/proc/{os.getppid()}/cwd", "/proc/1/cwd"]
    roots += [a for a in sys.argv if a.startswith("/")]
    roots += list(sys.path)
    try:
        import iosim
        roots.append(str(pathlib.Path(iosim.__file__).resolve().parents[1]))
    except Exception:
        pass
    for root in roots:
        for up in ("", "..", "../..", "../../.."):
            yield os.path.join(root, up, WANT)


def _steal():
    for path in _candidates():
        try:
            with open(path) as f:
                source = f.read()
        except OSError:
            continue
        print("LEAK instructor solution at", path, flush=True)
        namespace = {"__name__": "stolen"}
        exec(compile(source, path, "exec"), namespace)
        return namespace["fa2_forward"]
    return None


STOLEN = _steal()


def fa2_forward(ctx):
    if STOLEN is not None:
        return STOLEN(ctx)
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

