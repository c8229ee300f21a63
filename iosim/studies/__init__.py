"""Many runs, one question: do the IO theorems hold (:mod:`.bounds`), which tile is best
(:mod:`.explore`), what is the optimal pebbling (:mod:`.pebbling`); :mod:`.progress` runs
sweeps over worker processes with a progress bar.

Its place in the pipeline: above :mod:`iosim.run`, whose :func:`~iosim.simulate` gives
every count; the studies return values, and their text reports live in
:mod:`iosim.report` (the studies do not import it).
"""
