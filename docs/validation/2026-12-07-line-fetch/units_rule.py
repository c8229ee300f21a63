"""The units rule against a raw folder: the model with every flash-attn 2 kernel's loads as plain loads (a miss
fetches the 64-byte units its rows touch, not the whole line), as the model was before session 51.

Run from the repository's root: python docs/validation/2026-12-07-line-fetch/units_rule.py RAW_DIR PROFILE
Prints, per main kernel (forward main, backward dq_dk_dv): d, pass, kernel, predicted and measured DRAM reads (MB).
"""
import sys
sys.path.insert(0, "benchmarks"); sys.path.insert(0, ".")
import iosim.run.shared_lines as sl
sl.PLAIN_LOADS = ("dot_do_o", "main", "dq_dk_dv", "split", "combine")
import sdpa_compare
rows = sdpa_compare.compare(sys.argv[1], cache=True, hw=sys.argv[2])
for r in rows:
    if r["kernel"] in ("main", "dq_dk_dv"):
        print(r["head_dim"], r["pass"], r["kernel"], round(r["predicted"]["dram_read"] / 1e6, 1), round(r["measured"]["dram_read"] / 1e6, 1))
