"""Reduction kernels for the tests: every operator at every level, on any dtype.

``out[level, op]``: levels gang, worker, vector, parallel_range, gang>vector nested,
gang>worker nested; ops + * max min and or (``reduce_all``) and & | ^ (``reduce_bits``).
Inputs: ``x`` of length g*c (contains 7, no 0), ``p`` of the same length with values
1, 2 or -1 (for the product).
"""
import numpy as np

import pygomp.kernels as omp


def inputs(g, c, dtype, rng):
    """``x`` and ``p`` for g*c elements as the docstring above says, drawn from ``rng``."""
    x = rng.integers(-40, 100, g * c).astype(dtype)
    x[x == 0] = 3
    x[100] = 7
    p = np.ones(g * c, dtype)
    p[rng.choice(g * c, 12, replace=False)] = 2
    p[rng.choice(g * c, 3, replace=False)] = -1
    return x, p


@omp.target(map={"x": "to", "p": "to", "out": "from"})
def reduce_all(x, p, g: int, c: int, out):
    n = g * c
    zero = x[0] - x[0]
    one = zero + 1
    s, pr, mx, mn, la, lo = zero, one, x[0], x[0], one, zero
    for i in omp.gang(n, reduction="+:s;*:pr;max:mx;min:mn;and:la;or:lo"):
        s += x[i]
        pr *= p[i]
        mx = max(mx, x[i])
        mn = min(x[i], mn)
        la = la and x[i] != 7
        lo = lo or x[i] == 7
    out[0, 0], out[0, 1], out[0, 2], out[0, 3], out[0, 4], out[0, 5] = s, pr, mx, mn, la, lo
    s, pr, mx, mn, la, lo = zero, one, x[0], x[0], one, zero
    for i in omp.worker(n, reduction="+:s;*:pr;max:mx;min:mn;and:la;or:lo"):
        s += x[i]
        pr *= p[i]
        mx = max(mx, x[i])
        mn = min(x[i], mn)
        la = la and x[i] != 7
        lo = lo or x[i] == 7
    out[1, 0], out[1, 1], out[1, 2], out[1, 3], out[1, 4], out[1, 5] = s, pr, mx, mn, la, lo
    s, pr, mx, mn, la, lo = zero, one, x[0], x[0], one, zero
    for i in omp.vector(n, reduction="+:s;*:pr;max:mx;min:mn;and:la;or:lo"):
        s += x[i]
        pr *= p[i]
        mx = max(mx, x[i])
        mn = min(x[i], mn)
        la = la and x[i] != 7
        lo = lo or x[i] == 7
    out[2, 0], out[2, 1], out[2, 2], out[2, 3], out[2, 4], out[2, 5] = s, pr, mx, mn, la, lo
    s, pr, mx, mn, la, lo = zero, one, x[0], x[0], one, zero
    for i in omp.parallel_range(n, reduction="+:s;*:pr;max:mx;min:mn;and:la;or:lo"):
        s += x[i]
        pr *= p[i]
        mx = max(mx, x[i])
        mn = min(x[i], mn)
        la = la and x[i] != 7
        lo = lo or x[i] == 7
    out[3, 0], out[3, 1], out[3, 2], out[3, 3], out[3, 4], out[3, 5] = s, pr, mx, mn, la, lo
    s, pr, mx, mn, la, lo = zero, one, x[0], x[0], one, zero
    for b in omp.gang(g, reduction="+:s;*:pr;max:mx;min:mn;and:la;or:lo"):
        for v in omp.vector(c, reduction="+:s;*:pr;max:mx;min:mn;and:la;or:lo"):
            i = b * c + v
            s += x[i]
            pr *= p[i]
            mx = max(mx, x[i])
            mn = min(x[i], mn)
            la = la and x[i] != 7
            lo = lo or x[i] == 7
    out[4, 0], out[4, 1], out[4, 2], out[4, 3], out[4, 4], out[4, 5] = s, pr, mx, mn, la, lo
    s, pr, mx, mn, la, lo = zero, one, x[0], x[0], one, zero
    for b in omp.gang(g, reduction="+:s;*:pr;max:mx;min:mn;and:la;or:lo"):
        for w in omp.worker(c, reduction="+:s;*:pr;max:mx;min:mn;and:la;or:lo"):
            i = b * c + w
            s += x[i]
            pr *= p[i]
            mx = max(mx, x[i])
            mn = min(x[i], mn)
            la = la and x[i] != 7
            lo = lo or x[i] == 7
    out[5, 0], out[5, 1], out[5, 2], out[5, 3], out[5, 4], out[5, 5] = s, pr, mx, mn, la, lo


@omp.target(map={"x": "to", "out": "from"})
def reduce_bits(x, g: int, c: int, out):
    n = g * c
    zero = x[0] - x[0]
    a, o, e = ~zero, zero, zero
    for i in omp.gang(n, reduction="&:a;|:o;^:e"):
        a &= x[i]
        o |= x[i]
        e ^= x[i]
    out[0, 0], out[0, 1], out[0, 2] = a, o, e
    a, o, e = ~zero, zero, zero
    for i in omp.worker(n, reduction="&:a;|:o;^:e"):
        a &= x[i]
        o |= x[i]
        e ^= x[i]
    out[1, 0], out[1, 1], out[1, 2] = a, o, e
    a, o, e = ~zero, zero, zero
    for i in omp.vector(n, reduction="&:a;|:o;^:e"):
        a &= x[i]
        o |= x[i]
        e ^= x[i]
    out[2, 0], out[2, 1], out[2, 2] = a, o, e
    a, o, e = ~zero, zero, zero
    for i in omp.parallel_range(n, reduction="&:a;|:o;^:e"):
        a &= x[i]
        o |= x[i]
        e ^= x[i]
    out[3, 0], out[3, 1], out[3, 2] = a, o, e
    a, o, e = ~zero, zero, zero
    for b in omp.gang(g, reduction="&:a;|:o;^:e"):
        for v in omp.vector(c, reduction="&:a;|:o;^:e"):
            a &= x[b * c + v]
            o |= x[b * c + v]
            e ^= x[b * c + v]
    out[4, 0], out[4, 1], out[4, 2] = a, o, e
    a, o, e = ~zero, zero, zero
    for b in omp.gang(g, reduction="&:a;|:o;^:e"):
        for w in omp.worker(c, reduction="&:a;|:o;^:e"):
            a &= x[b * c + w]
            o |= x[b * c + w]
            e ^= x[b * c + w]
    out[5, 0], out[5, 1], out[5, 2] = a, o, e
