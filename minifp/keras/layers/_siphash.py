"""SipHash-2-4 (Aumasson and Bernstein's keyed hash), the hash TensorFlow's to_hash_bucket_strong takes: Keras's
Hashing layer uses it when given a salt (the two 64-bit key words). Pure Python on 64-bit integers."""

import struct

__all__ = ["siphash24"]

M = (1 << 64) - 1


def _rotl(v, s):
    return ((v << s) | (v >> (64 - s))) & M


def _rounds(v, n):
    """n SipRounds over the state v = [v0, v1, v2, v3]."""
    v0, v1, v2, v3 = v
    for _ in range(n):
        v0 = (v0 + v1) & M
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & M
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & M
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & M
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash24(key0, key1, data):
    """The 64-bit SipHash-2-4 of bytes `data` under the key (key0, key1)."""
    k0, k1 = key0 & M, key1 & M
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d, k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    whole = len(data) // 8 * 8
    # the last word: the leftover bytes, with the length's low byte on top
    tail = int.from_bytes(data[whole:], "little") | ((len(data) & 0xFF) << 56)
    for m in [struct.unpack_from("<Q", data, i)[0] for i in range(0, whole, 8)] + [tail]:
        v[3] ^= m
        v = _rounds(v, 2)
        v[0] ^= m
    v[2] ^= 0xFF
    v = _rounds(v, 4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]
