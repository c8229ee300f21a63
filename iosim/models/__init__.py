"""Models applied after counting, each a function of the counts and the profile: the
roofline (:mod:`.roofline`), the kernel time model (:mod:`.kernel_time`), Theorems 2 and 5
(:mod:`.theory`) and the L2 cache (:mod:`.cache`). Nothing below this stage imports them."""
