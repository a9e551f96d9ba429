"""FarmHash's Fingerprint64 (farmhashna::Hash64), the hash TensorFlow's to_hash_bucket_fast takes: Keras's lookup
layers spread out-of-vocabulary strings over num_oov_indices > 1 by it. Pure Python on 64-bit integers."""

import struct

__all__ = ["fingerprint64", "fingerprint_cat64"]

M = (1 << 64) - 1
K0, K1, K2 = 0xc3a5c85c97cb3127, 0xb492b66fbe98f273, 0x9ae16a3b2f90404f


def _rot(v, s):
    return v if s == 0 else ((v >> s) | (v << (64 - s))) & M


def _f64(b, i):
    return struct.unpack_from("<Q", b, i)[0]


def _f32(b, i):
    return struct.unpack_from("<I", b, i)[0]


def _mix(v):
    return v ^ (v >> 47)


def _len16(u, v, mul):
    # HashLen16 with a multiplier
    a = ((u ^ v) * mul) & M
    a ^= a >> 47
    b = ((v ^ a) * mul) & M
    b ^= b >> 47
    return (b * mul) & M


def _weak(b, i, a, c):
    # WeakHashLen32WithSeeds over the 32 bytes at i
    w, x, y, z = _f64(b, i), _f64(b, i + 8), _f64(b, i + 16), _f64(b, i + 24)
    a = (a + w) & M
    c = _rot((c + a + z) & M, 21)
    d = a
    a = (a + x + y) & M
    c = (c + _rot(a, 44)) & M
    return (a + z) & M, (c + d) & M


def fingerprint64(b):
    """The 64-bit fingerprint of the bytes b."""
    n = len(b)
    if n <= 16:
        if n >= 8:
            mul = (K2 + n * 2) & M
            a = (_f64(b, 0) + K2) & M
            c = _f64(b, n - 8)
            cc = (_rot(c, 37) * mul + a) & M
            d = ((_rot(a, 25) + c) * mul) & M
            return _len16(cc, d, mul)
        if n >= 4:
            mul = (K2 + n * 2) & M
            return _len16((n + (_f32(b, 0) << 3)) & M, _f32(b, n - 4), mul)
        if n > 0:
            y = (b[0] + (b[n >> 1] << 8)) & 0xffffffff
            z = (n + (b[n - 1] << 2)) & 0xffffffff
            return (_mix(((y * K2) ^ (z * K0)) & M) * K2) & M
        return K2
    if n <= 32:
        mul = (K2 + n * 2) & M
        a = (_f64(b, 0) * K1) & M
        c0 = _f64(b, 8)
        c = (_f64(b, n - 8) * mul) & M
        d = (_f64(b, n - 16) * K2) & M
        return _len16((_rot((a + c0) & M, 43) + _rot(c, 30) + d) & M, (a + _rot((c0 + K2) & M, 18) + c) & M, mul)
    if n <= 64:
        mul = (K2 + n * 2) & M
        a = (_f64(b, 0) * K2) & M
        c0 = _f64(b, 8)
        c = (_f64(b, n - 8) * mul) & M
        d = (_f64(b, n - 16) * K2) & M
        y = (_rot((a + c0) & M, 43) + _rot(c, 30) + d) & M
        z = _len16(y, (a + _rot((c0 + K2) & M, 18) + c) & M, mul)
        e = (_f64(b, 16) * mul) & M
        f = _f64(b, 24)
        g = ((y + _f64(b, n - 32)) * mul) & M
        h = ((z + _f64(b, n - 24)) * mul) & M
        return _len16((_rot((e + f) & M, 43) + _rot(g, 30) + h) & M, (e + _rot((f + a) & M, 18) + g) & M, mul)
    # over 64 bytes: 64-byte blocks through the state (x, y, z, v, w), then the last 64 bytes
    seed = 81
    x = seed
    y = (seed * K1 + 113) & M
    z = (_mix((y * K2 + 113) & M) * K2) & M
    v, w = (0, 0), (0, 0)
    x = (x * K2 + _f64(b, 0)) & M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    s = 0
    while True:
        x = (_rot((x + y + v[0] + _f64(b, s + 8)) & M, 37) * K1) & M
        y = (_rot((y + v[1] + _f64(b, s + 48)) & M, 42) * K1) & M
        x ^= w[1]
        y = (y + v[0] + _f64(b, s + 40)) & M
        z = (_rot((z + w[0]) & M, 33) * K1) & M
        v = _weak(b, s, (v[1] * K1) & M, (x + w[0]) & M)
        w = _weak(b, s + 32, (z + w[1]) & M, (y + _f64(b, s + 16)) & M)
        z, x = x, z
        s += 64
        if s == end:
            break
    mul = (K1 + ((z & 0xff) << 1)) & M
    s = last64
    w = ((w[0] + ((n - 1) & 63)) & M, w[1])
    v = ((v[0] + w[0]) & M, v[1])
    w = ((w[0] + v[0]) & M, w[1])
    x = (_rot((x + y + v[0] + _f64(b, s + 8)) & M, 37) * mul) & M
    y = (_rot((y + v[1] + _f64(b, s + 48)) & M, 42) * mul) & M
    x ^= (w[1] * 9) & M
    y = (y + v[0] * 9 + _f64(b, s + 40)) & M
    z = (_rot((z + w[0]) & M, 33) * mul) & M
    v = _weak(b, s, (v[1] * mul) & M, (x + w[0]) & M)
    w = _weak(b, s + 32, (z + w[1]) & M, (y + _f64(b, s + 16)) & M)
    z, x = x, z
    return _len16((_len16(v[0], w[0], mul) + _mix(y) * K0 + z) & M, (_len16(v[1], w[1], mul) + x) & M, mul)


def fingerprint_cat64(fp1, fp2):
    """Two fingerprints combined into one (TensorFlow's FingerprintCat64, what its hashed feature crosses chain)."""
    mul = 0xc6a4a7935bd1e995
    result = fp1 ^ mul
    result ^= (_mix((fp2 * mul) & M) * mul) & M
    result = (result * mul) & M
    result = (_mix(result) * mul) & M
    return _mix(result)
