"""Reading the repository: the grader's own package ships the reference schedules; import the
built-in FA2 and submit it.

(Policy question: tests/cli/test_grade.py currently uses exactly this to check that a
built-in schedule passes through the stand-in ctx. A student who submits this line has
not written FA2.) Expected to fail once the child cannot import iosim.schedules.
"""

from iosim.schedules.fa2 import fa2_forward  # noqa: F401

WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
