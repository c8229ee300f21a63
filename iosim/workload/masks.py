"""Block-sparsity masks for block-sparse FlashAttention (arXiv 2205.14135 §3.3, Algorithm 5).

A mask M ∈ {0,1}^{T_r × T_c} marks which (query block, key block) pairs are computed;
its density s (the fraction of nonzero blocks) is Proposition 4's s. Masks come from a
generator spec or a file:

* ``local:W`` — a band: query block i sees the key blocks whose index is within W − 1 of
  the key block holding its first row, ⌊i·B_r/B_c⌋ (with B_r = B_c, the 2W − 1 blocks
  around the diagonal).
* ``random:S`` or ``random:S:SEED`` — each block nonzero with probability S (0 < S ≤ 1),
  from NumPy's default generator with SEED (default 0); the diagonal band of width 1 is
  kept so that no query block is left without keys.
* ``dense`` — all ones (the same counts as no mask, through the sparse code path).
* a path to a ``.npy`` file or a text file of 0/1 rows (whitespace or commas; lines
  starting with ``#`` are comments).

Reading is bounded (``docs/input-limits.md``): a mask has at most
:data:`~iosim.hardware.limits.MAX_MASK_BLOCKS` blocks, whatever its spec; a mask file must
be a regular file (not ``/dev/zero``, a FIFO or a directory) of at most
``MASK_FILE_SLACK + MASK_BYTES_PER_BLOCK × T_r × T_c`` bytes (and never over
``MAX_MASK_FILE_BYTES``), and a ``.npy`` file's header must give the tiling's shape and a
bool, integer or real dtype before any data is read. Messages quote at most a short excerpt.
"""

from __future__ import annotations

import io
import os
import warnings

import numpy as np

from ..errors import ProblemError
from ..hardware.limits import (MASK_BYTES_PER_BLOCK, MASK_FILE_SLACK, MAX_MASK_BLOCKS, MAX_MASK_FILE_BYTES,
                               InputRefused, excerpt, format_size, read_bounded)

#: dtype kinds a mask may have: bool, signed and unsigned integers, reals (not complex)
_MASK_KINDS = "biuf"


def parse_block_mask(spec: str | np.ndarray, num_q_blocks: int, num_kv_blocks: int, block_q: int, block_kv: int) -> np.ndarray:
    """The T_r × T_c boolean mask that ``spec`` describes, checked against the tiling."""
    shape = (num_q_blocks, num_kv_blocks)
    if num_q_blocks * num_kv_blocks > MAX_MASK_BLOCKS:
        raise ProblemError(
            f"a block mask of T_r × T_c = {num_q_blocks:,} × {num_kv_blocks:,} blocks is over the limit of "
            f"{MAX_MASK_BLOCKS:,} blocks; use larger blocks or a shorter sequence")
    if isinstance(spec, np.ndarray):
        mask = spec
    elif not isinstance(spec, str):
        raise ProblemError(f"block mask: expected a spec string or an array, got {excerpt(spec)}")
    elif spec == "dense":
        mask = np.ones(shape, dtype=bool)
    elif spec.startswith("local:"):
        mask = _local(_int_arg(spec, "local:W", 1), shape, block_q, block_kv)
    elif spec.startswith("random:"):
        mask = _random(spec, shape, block_q, block_kv)
    elif os.path.lexists(spec) or spec.endswith((".npy", ".txt", ".csv")):
        mask = _from_file(spec, shape)
    else:
        raise ProblemError(
            f"block mask {excerpt(spec)}: expected local:W, random:S[:SEED], dense, or a path to a .npy or 0/1 text file"
        )
    return _checked(np.asarray(mask), shape)


def _shape(shape) -> str:
    text = str(tuple(shape))
    return text if len(text) <= 60 else f"of {len(shape)} dimensions"


def _checked(mask: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``mask`` as bool, if it has the tiling's shape, a real dtype and only 0s and 1s."""
    if mask.shape != shape:
        raise ProblemError(f"block mask has shape {_shape(mask.shape)}, but the tiling needs T_r × T_c = {shape}")
    if mask.dtype.kind not in _MASK_KINDS:
        raise ProblemError(f"block mask has dtype {excerpt(str(mask.dtype))}; "
                           "expected bool, integer or real entries (not complex, strings or objects)")
    if not np.isin(mask, (0, 1)).all():
        raise ProblemError("block mask entries must be 0 or 1")
    return mask.astype(bool)


def density(mask: np.ndarray) -> float:
    """s: the fraction of nonzero blocks."""
    return float(mask.mean())


def _int_arg(spec: str, form: str, minimum: int) -> int:
    try:
        value = int(spec.split(":", 1)[1])
    except ValueError:
        raise ProblemError(f"block mask {excerpt(spec)}: expected {form} with an integer") from None
    if value < minimum:
        raise ProblemError(f"block mask {excerpt(spec)}: {form.split(':')[1]} must be ≥ {minimum}")
    return value


def _diagonal(shape, block_q, block_kv) -> np.ndarray:
    """For each query block, the key block holding its first row."""
    return np.minimum(np.arange(shape[0]) * block_q // block_kv, shape[1] - 1)


def _local(width: int, shape, block_q, block_kv) -> np.ndarray:
    centre = _diagonal(shape, block_q, block_kv)
    return np.abs(np.arange(shape[1])[None, :] - centre[:, None]) < width


def _random(spec: str, shape, block_q, block_kv) -> np.ndarray:
    parts = spec.split(":")
    try:
        s = float(parts[1])
        seed = int(parts[2]) if len(parts) > 2 else 0
    except (ValueError, IndexError):
        raise ProblemError(f"block mask {excerpt(spec)}: expected random:S or random:S:SEED") from None
    if not 0 < s <= 1 or len(parts) > 3:
        raise ProblemError(f"block mask {excerpt(spec)}: S must be in (0, 1]")
    if seed < 0:
        raise ProblemError(f"block mask {excerpt(spec)}: SEED must be ≥ 0")
    mask = np.random.default_rng(seed).random(shape) < s
    return mask | _local(1, shape, block_q, block_kv)


def _from_file(path: str, shape: tuple[int, int]) -> np.ndarray:
    """The mask in the file at ``path``: a .npy file, or text rows of 0/1."""
    limit = min(MAX_MASK_FILE_BYTES, MASK_FILE_SLACK + MASK_BYTES_PER_BLOCK * shape[0] * shape[1])
    where = f"block mask file {excerpt(path, 200)}"
    try:
        data = read_bounded(path, limit)
    except InputRefused as exc:
        if "larger than" in str(exc):
            exc = InputRefused(f"{exc} for a {shape[0]:,} × {shape[1]:,} mask ({MASK_FILE_SLACK // 1024} KiB "
                               f"+ {MASK_BYTES_PER_BLOCK} bytes per block, at most {format_size(MAX_MASK_FILE_BYTES)})")
        raise ProblemError(f"{where}: {exc}") from None
    if path.endswith(".npy"):
        return _from_npy(data, shape, where)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProblemError(f"{where}: byte {exc.start:,} is not UTF-8 text; expected rows of 0 and 1") from None
    return _from_text(text, shape, where)


def _from_npy(data: bytes, shape: tuple[int, int], where: str) -> np.ndarray:
    """Check the .npy header (shape, dtype) before the data is read, then read it."""
    try:
        with warnings.catch_warnings():  # a header numpy must re-parse warns of Python 2
            warnings.simplefilter("ignore")
            return _read_npy(data, shape, where)
    except ProblemError:
        raise
    except Exception as exc:  # noqa: BLE001 - numpy's header parser on hostile bytes raises many kinds
        raise ProblemError(f"{where}: not a readable .npy file ({excerpt(str(exc), 80)})") from None


def _read_npy(data: bytes, shape: tuple[int, int], where: str) -> np.ndarray:
    fmt = np.lib.format
    stream = io.BytesIO(data)
    version = fmt.read_magic(stream)
    reader = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
    if reader is None:
        raise ValueError(f"unsupported .npy format version {version}")
    file_shape, _, dtype = reader(stream)
    if tuple(file_shape) != shape:
        raise ProblemError(f"block mask has shape {_shape(file_shape)}, but the tiling needs T_r × T_c = {shape}")
    if dtype.kind not in _MASK_KINDS or dtype.hasobject or dtype.itemsize > 8:
        raise ProblemError(f"{where}: dtype {excerpt(str(dtype))}; "
                           "expected bool, integer or real entries (not complex, strings or objects)")
    return np.load(io.BytesIO(data), allow_pickle=False)


def _from_text(text: str, shape: tuple[int, int], where: str) -> np.ndarray:
    """Rows of 0/1 separated by whitespace or commas, T_r rows of T_c entries."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tokens = line.replace(",", " ").split()
        if len(rows) == shape[0]:
            raise ProblemError(f"{where}: line {number:,} is row {len(rows) + 1:,}, but the tiling needs "
                               f"T_r × T_c = {shape}")
        if len(tokens) != shape[1]:
            raise ProblemError(f"{where}: line {number:,} has {len(tokens):,} entries, but the tiling needs "
                               f"T_r × T_c = {shape}")
        if not set(tokens) <= {"0", "1"}:
            bad = next(t for t in tokens if t not in ("0", "1"))
            raise ProblemError(f"{where}: line {number:,}: entry {excerpt(bad, 20)} is not 0 or 1")
        rows.append(np.frombuffer("".join(tokens).encode("ascii"), dtype=np.uint8) == ord("1"))
    if len(rows) != shape[0]:
        raise ProblemError(f"{where}: {len(rows):,} rows, but the tiling needs T_r × T_c = {shape}")
    return np.array(rows, dtype=bool).reshape(shape)
