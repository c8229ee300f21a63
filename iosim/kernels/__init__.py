"""The real kernels: the tiles flash-attn picks (:mod:`.tile_tables`), the launches it makes
for a request (:mod:`.plan`), and its Flash-Decoding split heuristic (:mod:`.split_heuristic`).

Its place in the pipeline: above :mod:`iosim.schedules`, below :mod:`iosim.models`. A plan
names the schedules it launches by their registry names (:mod:`iosim.schedules.registry`);
:func:`iosim.prepare` turns it into the run's launches, one per pass, each with the
kernel's tile.
"""
