"""The constants of onnxruntime's MLAS float32 logistic (Sigmoid) and tanh, the one copy every provider uses.

MLAS (``logistic.cpp``, ``tanh.cpp``) evaluates both as Eigen's rational approximation p(v) / q(v)
of v = x clamped to a range: odd p and even q in v * v, each by Horner's rule with one fused
multiply-add a step, in float32; the logistic adds 0.5 and clamps below at 0. Each provider keeps
its own implementation (numpy passes, numba scalar code, OpenCL C source); only these values are
shared. Coefficients are MLAS's float32 constants, held as the Python floats of those float32
values (exact in float64), highest power first.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = ["LOGISTIC", "TANH", "Rational", "float32"]


def float32(value: float) -> float:
    """``value`` rounded to float32, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


class Rational(NamedTuple):
    """One MLAS rational approximation: input range, p's and q's coefficients (float32 values)."""

    lower: float
    upper: float
    p: tuple[float, ...]
    q: tuple[float, ...]


#: Sigmoid: p(v) / q(v) + 0.5 on v in [-18, 18], floored at 0.
LOGISTIC = Rational(-18.0, 18.0,
                    tuple(map(float32, (4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05,
                                        8.51377133304701e-03, 2.48287947061529e-01))),
                    tuple(map(float32, (6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06,
                                        1.70198817374094e-03, 1.16817656904453e-01, 9.93151921023180e-01))))

#: Tanh: p(v) / q(v) on v in [-9, 9].
TANH = Rational(-9.0, 9.0,
                tuple(map(float32, (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
                                    5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
                                    4.89352455891786e-03))),
                tuple(map(float32, (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
                                    4.89352518554385e-03))))
