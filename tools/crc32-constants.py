#!/usr/bin/env python3
"""The constants of Sources/CObjectLogStoreSupport/CRC32Folding.c, derived from the polynomial.

Each is printed in the reflected 64-bit layout the code uses: the coefficient of x^d at bit
63 - d. Run it to check the C file after any change to the folding distances.
"""

P = 0x104C11DB7  # x^32 + x^26 + x^23 + ... + 1, zlib's CRC-32


def remainder(a, p=P):
    """a mod p, over GF(2)."""
    degree = p.bit_length() - 1
    while a.bit_length() - 1 >= degree:
        a ^= p << (a.bit_length() - 1 - degree)
    return a


def quotient(a, p=P):
    """a / p, over GF(2)."""
    degree = p.bit_length() - 1
    q = 0
    while a.bit_length() - 1 >= degree:
        shift = a.bit_length() - 1 - degree
        q |= 1 << shift
        a ^= p << shift
    return q


def reflected(poly):
    return sum(1 << (63 - d) for d in range(64) if poly >> d & 1)


def x_to_the(n):
    return remainder(1 << n)


constants = [
    ("fold over 16 bytes, lane of the first 8 bytes", x_to_the(128 + 63)),
    ("fold over 16 bytes, lane of the last 8 bytes", x_to_the(127)),
    ("fold over 64 bytes, lane of the first 8 bytes", x_to_the(512 + 63)),
    ("fold over 64 bytes, lane of the last 8 bytes", x_to_the(511)),
    ("128 bits to 64", x_to_the(95)),
    ("96 bits to 64", x_to_the(63)),
    ("Barrett mu = x^64 / P", quotient(1 << 64)),
    ("Barrett P", P),
]
for name, value in constants:
    print(f"0x{reflected(value):016X}  {name}")
