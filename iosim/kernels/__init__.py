"""The real kernels: the tiles flash-attn picks (:mod:`.tile_tables`), the launches it makes
for a request (:mod:`.plan`), and its Flash-Decoding split heuristic (:mod:`.split_heuristic`)."""
