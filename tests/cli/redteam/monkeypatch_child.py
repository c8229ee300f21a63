"""Monkeypatching the child's stand-ins: patch the child's channel so every message it sends
says "done": true and carries the fields a grader might read, and patch the tile class so
".data" returns zeros; then raise halfway through the schedule.

Must fail (runs or exactness): the grader computes, counts and decides on its side.
"""

import sys

import numpy as np

try:
    from iosim.grading import child, protocol

    _send = protocol.Channel.send

    def _forged(self, message, *args, **kwargs):
        if "done" in message:
            message = {"done": True, "status": "ok", "passed": True}
        return _send(self, message, *args, **kwargs)

    protocol.Channel.send = _forged
    child.RemoteTile.data = property(lambda self: np.zeros(self.shape))
except Exception as exc:
    print("could not patch:", exc, file=sys.stderr)


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        ctx.load("Q", i).data
        raise RuntimeError("halfway")
