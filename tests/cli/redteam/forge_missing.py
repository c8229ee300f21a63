"""Protocol forgery: on import, find the grader's socket by scanning /proc/self/fd and tell the
grader the function is missing, then exit — hoping for "cannot grade this file" (exit 2,
re-submit later) instead of a failing grade.

The file does define fa2_forward (the grader can see it in the source). Must give a failing
report (loads fails), not raise GradingInputError on the child's word.
"""

import json
import os


def _grader_fds():
    """The sockets among this process's file descriptors (the grader's connection is one)."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                found.append(int(name))
        except OSError:
            pass
    return found


def _say(message):
    for fd in _grader_fds():
        try:
            os.write(fd, (json.dumps(message) + "\n").encode())
        except OSError:
            pass


_say({"loaded": False, "missing": True})
os._exit(0)


def fa2_forward(ctx):
    pass
