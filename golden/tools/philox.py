"""Reference implementation of the day0 harness random draws (Philox4x32-10).

This module is an *independent* numpy re-implementation of the counter-based
generator and the draw rules used by the C++ harness.  The golden generators
use it to produce expected values; the C++ side must agree bit for bit.

Everything is vectorised over element indices and uses uint64 arithmetic for
the 32-bit Philox words (a 32x32-bit product always fits in 64 bits).  The
floating-point draw rules deliberately use only IEEE-754 float64 operations
that are correctly rounded on every platform (+, -, *, /, sqrt, frexp) and
evaluate them in exactly the order the C++ code does, so no libm function
(log, sin, cos) can introduce platform-dependent last-bit differences.
numpy never contracts a*b+c into an FMA, which matches the harness (built
without FP contraction for these routines).

Draw rules, for element index i of (seed, stream):

* block b = i // 4, lane = i % 4,
  ctr = [b lo32, b hi32, stream lo32, stream hi32], key = [seed lo32, seed hi32],
  word w(i) = philox(ctr, key)[lane].
* uniform_f32(i) = float32((w(i) >> 8) * 2**-24)      (exact, in [0, 1))
* normal_f64(i): Box-Muller on the words of block b: the pair p = (i % 4) // 2
  uses w[2p] for the radius and w[2p+1] for the angle; i % 2 selects cos/sin.
* normal_f32(i) = float32(normal_f64(i))               (round to nearest even)

Run ``python3 golden/tools/philox.py`` for the Random123 known-answer tests.
"""

from __future__ import annotations

import numpy as np

# Philox4x32 constants (Salmon et al., "Parallel random numbers: as easy as
# 1, 2, 3", SC'11; Random123 philox.h).
PHILOX_M0 = np.uint64(0xD2511F53)
PHILOX_M1 = np.uint64(0xCD9E8D57)
PHILOX_W0 = np.uint64(0x9E3779B9)
PHILOX_W1 = np.uint64(0xBB67AE85)
PHILOX_ROUNDS = 10

_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


def _u64(x) -> np.ndarray:
    """Python ints / arrays -> uint64 array (values must fit in 64 bits)."""
    return np.asarray(x, dtype=np.uint64)


def philox4x32_10(ctr, key) -> np.ndarray:
    """Philox4x32-10 block function.

    ctr: array-like of shape (..., 4) with 32-bit counter words.
    key: array-like of shape (..., 2) with 32-bit key words (broadcasts).
    Returns a uint64 array of shape (..., 4) holding the 32-bit output words.
    """
    ctr = _u64(ctr)
    key = _u64(key)
    c0, c1, c2, c3 = (ctr[..., n] & _MASK32 for n in range(4))
    k0, k1 = key[..., 0] & _MASK32, key[..., 1] & _MASK32
    for rnd in range(PHILOX_ROUNDS):
        if rnd > 0:
            # Bump the key between rounds (9 bumps for 10 rounds).
            k0 = (k0 + PHILOX_W0) & _MASK32
            k1 = (k1 + PHILOX_W1) & _MASK32
        p0 = PHILOX_M0 * c0  # exact: both factors < 2**32
        p1 = PHILOX_M1 * c2
        hi0, lo0 = p0 >> _SHIFT32, p0 & _MASK32
        hi1, lo1 = p1 >> _SHIFT32, p1 & _MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return np.stack([c0, c1, c2, c3], axis=-1)


def _block_words(seed: int, stream: int, blocks: np.ndarray) -> np.ndarray:
    """Philox output words for the given block numbers: shape (len(blocks), 4)."""
    blocks = _u64(blocks)
    seed, stream = int(seed), int(stream)
    ctr = np.empty(blocks.shape + (4,), dtype=np.uint64)
    ctr[..., 0] = blocks & _MASK32
    ctr[..., 1] = blocks >> _SHIFT32
    ctr[..., 2] = stream & 0xFFFFFFFF
    ctr[..., 3] = stream >> 32
    key = _u64([seed & 0xFFFFFFFF, seed >> 32])
    return philox4x32_10(ctr, key)


def _indices(start: int, count: int) -> np.ndarray:
    return np.arange(count, dtype=np.uint64) + np.uint64(start)


def words(seed: int, stream: int, start: int, count: int) -> np.ndarray:
    """u32 words w(start .. start+count-1) as a uint64 array."""
    idx = _indices(start, count)
    blk = _block_words(seed, stream, idx >> np.uint64(2))
    lane = (idx & np.uint64(3)).astype(np.intp)
    return blk[np.arange(count), lane]


def uniform_f32(seed: int, stream: int, start: int, count: int) -> np.ndarray:
    """uniform_f32(i) = float32((w(i) >> 8) * 2**-24); exact, in [0, 1)."""
    w = words(seed, stream, start, count)
    return ((w >> np.uint64(8)).astype(np.float64) * 2.0**-24).astype(np.float32)


# --------------------------------------------------------------------------
# Deterministic log / cos / sin built from +, -, *, /, frexp only.
# --------------------------------------------------------------------------

SQRT_HALF = float.fromhex("0x1.6a09e667f3bcdp-1")
LN2 = float.fromhex("0x1.62e42fefa39efp-1")
HALF_PI = float.fromhex("0x1.921fb54442d18p+0")

# atanh series: log(m) = 2*atanh(s) = 2*s*sum_k s^(2k)/(2k+1), s=(m-1)/(m+1).
_LOG_C = [1.0 / float(2 * k + 1) for k in range(13)]

# Taylor coefficients of sin and cos, built exactly as the C++ side does:
# factorials accumulated in float64, sign applied as a single division.
_FACT = [1.0]
for _n in range(1, 18):
    _FACT.append(_FACT[-1] * float(_n))
_SIN_C = [(1.0 if k % 2 == 0 else -1.0) / _FACT[2 * k + 1] for k in range(9)]
_COS_C = [(1.0 if k % 2 == 0 else -1.0) / _FACT[2 * k] for k in range(9)]


def det_log(x: np.ndarray) -> np.ndarray:
    """Natural log for float64 x in (0, 1], evaluated in a fixed order."""
    x = np.asarray(x, dtype=np.float64)
    m, e = np.frexp(x)  # x = m * 2**e, m in [0.5, 1)
    e = e.astype(np.int64)
    small = m < SQRT_HALF
    m = np.where(small, m * 2.0, m)  # now m in [sqrt(1/2), sqrt(2))
    e = np.where(small, e - 1, e)
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    p = np.full_like(z, _LOG_C[12])
    for k in range(11, -1, -1):
        p = p * z + _LOG_C[k]
    t1 = e.astype(np.float64) * LN2
    t2 = (2.0 * s) * p
    return t1 + t2


def det_cos_sin_turns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of the angle 2*pi*w/2**32 for u32 words w (uint64 array)."""
    w = _u64(w)
    q = (w >> np.uint64(30)).astype(np.int64)  # quadrant 0..3
    f = (w & np.uint64(0x3FFFFFFF)).astype(np.float64) * 2.0**-30  # [0, 1)
    flip = f > 0.5
    f = np.where(flip, 1.0 - f, f)  # reduce to [0, pi/4]
    t = f * HALF_PI
    z = t * t
    ps = np.full_like(z, _SIN_C[8])
    for k in range(7, -1, -1):
        ps = ps * z + _SIN_C[k]
    sin_t = t * ps
    pc = np.full_like(z, _COS_C[8])
    for k in range(7, -1, -1):
        pc = pc * z + _COS_C[k]
    cos_t = pc
    # Undo the reflection about pi/4 within the quadrant.
    sin_t, cos_t = np.where(flip, cos_t, sin_t), np.where(flip, sin_t, cos_t)
    # Rotate by q quarter turns.
    c = np.select([q == 0, q == 1, q == 2], [cos_t, -sin_t, -cos_t], sin_t)
    s = np.select([q == 0, q == 1, q == 2], [sin_t, cos_t, -sin_t], -cos_t)
    return c, s


def normal_f64(seed: int, stream: int, start: int, count: int) -> np.ndarray:
    """Box-Muller standard normals normal_f64(start .. start+count-1)."""
    idx = _indices(start, count)
    blk = _block_words(seed, stream, idx >> np.uint64(2))
    rows = np.arange(count)
    pair = ((idx & np.uint64(3)) >> np.uint64(1)).astype(np.intp)  # p
    use_sin = (idx & np.uint64(1)).astype(bool)  # j
    w_rad = blk[rows, 2 * pair]
    w_ang = blk[rows, 2 * pair + 1]
    u1 = (w_rad.astype(np.float64) + 0.5) * 2.0**-32  # in (0, 1)
    r = np.sqrt(-2.0 * det_log(u1))
    c, s = det_cos_sin_turns(w_ang)
    return np.where(use_sin, r * s, r * c)


def normal_f32(seed: int, stream: int, start: int, count: int) -> np.ndarray:
    """normal_f64 rounded to float32 (round to nearest even)."""
    return normal_f64(seed, stream, start, count).astype(np.float32)


# --------------------------------------------------------------------------
# Self-test
# --------------------------------------------------------------------------

# Random123 known-answer vectors for philox4x32_10: (ctr, key, expected out).
KNOWN_ANSWERS = [
    ([0x00000000, 0x00000000, 0x00000000, 0x00000000], [0x00000000, 0x00000000],
     [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF], [0xFFFFFFFF, 0xFFFFFFFF],
     [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


def _philox_scalar(ctr: list[int], key: list[int]) -> list[int]:
    """Plain-Python Philox4x32-10 (one block), used only to cross-check."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for rnd in range(PHILOX_ROUNDS):
        if rnd > 0:
            k0 = (k0 + int(PHILOX_W0)) & 0xFFFFFFFF
            k1 = (k1 + int(PHILOX_W1)) & 0xFFFFFFFF
        p0 = int(PHILOX_M0) * c0
        p1 = int(PHILOX_M1) * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & 0xFFFFFFFF,
                          (p0 >> 32) ^ c3 ^ k1, p0 & 0xFFFFFFFF)
    return [c0, c1, c2, c3]


def _normal_scalar(seed: int, stream: int, i: int) -> float:
    """Plain-Python (math module, one element) normal_f64, to cross-check the
    vectorised indexing; Python floats are IEEE binary64 like numpy's."""
    import math
    b = i // 4
    w = _philox_scalar([b & 0xFFFFFFFF, b >> 32, stream & 0xFFFFFFFF, stream >> 32],
                       [seed & 0xFFFFFFFF, seed >> 32])
    p, j = (i % 4) // 2, i % 2
    u1 = (float(w[2 * p]) + 0.5) * 2.0**-32
    m, e = math.frexp(u1)
    if m < SQRT_HALF:
        m, e = m * 2.0, e - 1
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    acc = _LOG_C[12]
    for k in range(11, -1, -1):
        acc = acc * z + _LOG_C[k]
    r = math.sqrt(-2.0 * (float(e) * LN2 + (2.0 * s) * acc))
    c, sn = det_cos_sin_turns(np.array([w[2 * p + 1]], dtype=np.uint64))
    return r * float(c[0]) if j == 0 else r * float(sn[0])


def self_test() -> None:
    for ctr, key, expected in KNOWN_ANSWERS:
        got = [int(v) for v in philox4x32_10(ctr, key)]
        if got != expected:
            raise AssertionError(
                f"philox4x32_10 KAT failed for ctr={ctr} key={key}: "
                f"got {[f'{v:08x}' for v in got]}, expected {[f'{v:08x}' for v in expected]}")
    # Vectorised evaluation must match one-at-a-time evaluation.
    ctrs = np.array([c for c, _, _ in KNOWN_ANSWERS], dtype=np.uint64)
    outs = np.stack([philox4x32_10(c, k) for c, k, _ in KNOWN_ANSWERS])
    for n, (_, key, _) in enumerate(KNOWN_ANSWERS):
        assert np.array_equal(philox4x32_10(ctrs[n:n + 1], key)[0], outs[n])
    # The deterministic elementary functions must track libm closely.
    x = (np.arange(1, 200001, dtype=np.float64) - 0.5) / 200000.0
    assert np.max(np.abs(det_log(x) - np.log(x))) < 1e-14
    wv = np.arange(0, 2**32, 2**32 // 100003, dtype=np.uint64)
    c, s = det_cos_sin_turns(wv)
    ang = wv.astype(np.float64) * (2.0 * np.pi / 2.0**32)
    assert np.max(np.abs(c - np.cos(ang))) < 1e-14
    assert np.max(np.abs(s - np.sin(ang))) < 1e-14
    # Vectorised draws (any start index, any seed/stream) match the scalar path.
    for seed, stream in [(0, 0), (7, 1), (2**64 - 1, 2**64 - 1)]:
        vec = normal_f64(seed, stream, 1001, 11)
        ref = [_normal_scalar(seed, stream, 1001 + n) for n in range(11)]
        assert vec.tolist() == ref, (seed, stream)
        w = words(seed, stream, 2**32 * 4 - 2, 4)  # crosses the 32-bit block carry
        for n in range(4):
            i = 2**32 * 4 - 2 + n
            blk = _philox_scalar([(i // 4) & 0xFFFFFFFF, (i // 4) >> 32,
                                  stream & 0xFFFFFFFF, stream >> 32],
                                 [seed & 0xFFFFFFFF, seed >> 32])
            assert int(w[n]) == blk[i % 4]
    print("philox self-test: 3 Random123 known-answer vectors OK; det_log/det_cos_sin OK")


if __name__ == "__main__":
    self_test()
