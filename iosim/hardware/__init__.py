"""GPU hardware profiles: the memory hierarchy and peak rates the simulator counts against.

    >>> from iosim.hardware import load_profile
    >>> h100 = load_profile("h100-sxm")
    >>> h100.scratchpad.per_block_bytes        # the paper's M, in bytes
    232448
    >>> [link.b for link in h100.path("hbm", "smem")]
    ['l2', 'smem']

Profiles live as YAML in ``hardware_profiles/`` (schema in its README.md); every number
carries its unit and source. See :mod:`.profile` for the values, :mod:`.yaml_reader` for
reading the YAML strictly, :mod:`.loader` and :mod:`.fields` for validation,
:mod:`.sanity` for the checks across fields (capacities ordered, figures plausible),
:mod:`.limits` for the bounds on every input (docs/input-limits.md) and :mod:`.units` for
the accepted units.

The first stage of the pipeline: it imports only :mod:`iosim.errors`.
"""

from .loader import list_profiles, load_profile, profile_from_yaml
from .profile import COMPUTE_KEYS, ROLES, HardwareProfile, Level, Link, Quantity

__all__ = [
    "COMPUTE_KEYS",
    "ROLES",
    "HardwareProfile",
    "Level",
    "Link",
    "Quantity",
    "list_profiles",
    "load_profile",
    "profile_from_yaml",
]
