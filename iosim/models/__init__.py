"""Models applied after counting, each a function of the counts and the profile: the
roofline (:mod:`.roofline`), the kernel time model (:mod:`.kernel_time`), Theorems 2 and 5
(:mod:`.theory`) and the L2 cache (:mod:`.cache`). None runs a schedule.

Its place in the pipeline: above :mod:`iosim.kernels`, and nothing below this stage
imports the models (the engine included; :mod:`iosim.run.result` neither, it holds their
outputs as values with ``to_dict``). :mod:`iosim.run.launches` applies them.
"""
