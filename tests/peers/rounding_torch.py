#!/usr/bin/env python3
"""PyTorch (CPU) as a real platform for the rounding probes (`kind: rounding`, compare/rounding.cc).

Run by hand (needs torch, tests/peers/requirements.txt):  python3 tests/peers/rounding_torch.py

The same add/mul probes the harness builds, computed by PyTorch's own bf16/f16 kernels, against
the round-to-nearest-even answer of each exact result: a platform that rounds to nearest even must
match on every probe, and most probes must land off the grid (else they tell no rounding apart).
Exit 1 if PyTorch's outputs are not nearest-even's.
"""

import sys

import torch


def probes(op: str, p: int, emin: int) -> list[tuple[float, float]]:
    u, mn, out = 2.0 ** -p, 2.0 ** emin, []

    def both(x: float, y: float) -> None:
        out.append((x, y))
        out.append((-x, -y) if op == "add" else (-x, y))

    if op == "add":
        both(1 + 2 * u, u / 2); both(1 + 3 * u, u / 2); both(1 + 2 * u, 3 * u / 4)
        both(1 + 2 * u, u / 4); both(1.5 * mn, -mn)
    else:
        h, q = 2.0 ** (p - 1), 2.0 ** (p - 2)
        both(1 + u, 1 + h * u); both(1 + 2 * u, 1 + q * u); both(1 + 3 * u, 1 + q * u)
        both(1 + u, 1 + q * u); both(1.5 * mn, 0.5)
    return out


def main() -> int:
    ok = True
    for dtype, p, emin in [(torch.bfloat16, 7, -126), (torch.float16, 10, -14)]:
        for op in ("add", "mul"):
            ps = probes(op, p, emin)
            x = torch.tensor([a for a, _ in ps], dtype=torch.float64).to(dtype)
            y = torch.tensor([b for _, b in ps], dtype=torch.float64).to(dtype)
            got = (x + y if op == "add" else x * y).double()
            exact = torch.tensor([a + b if op == "add" else a * b for a, b in ps],
                                 dtype=torch.float64)
            nearest = exact.to(dtype).double()  # PyTorch's cast rounds to nearest even
            match, off_grid = int((got == nearest).sum()), int((nearest != exact).sum())
            print(f"{dtype} {op}: {match} of {len(ps)} outputs nearest-even's; "
                  f"{off_grid} probes off the grid")
            ok = ok and match == len(ps) and off_grid >= len(ps) - 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
