"""Many runs, one question: do the IO theorems hold (:mod:`.bounds`), which tile is best
(:mod:`.explore`), what is the optimal pebbling (:mod:`.pebbling`); :mod:`.progress` runs
sweeps over worker processes with a progress bar."""
