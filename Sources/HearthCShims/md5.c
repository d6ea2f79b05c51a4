#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "HearthCShims.h"

// MD5's compression function (RFC 1321), for the checksums of uploaded objects — not for
// security. Each step's critical path is kept short: everything that does not depend on the
// previous step's result is summed first, and an empty asm statement keeps the compiler from
// re-associating that sum behind the round function (clang otherwise adds a, m and k after
// it, three more cycles per step). G is computed as (b & d) + (c & ~d): the two terms never
// share a bit, so + equals |, and c & ~d is ready before b. About 4% faster than
// BoringSSL's assembly on the machines we measured (docs/performance.md).

static inline uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

// F: d ^ (b & (c ^ d)); G: (b & d) + (c & ~d); H: b ^ (c ^ d); I: c ^ (b | ~d).
#define STEP_F(a, b, c, d, m, k, s) { a += (m) + (k); __asm__("" : "+r"(a)); a += ((c ^ d) & b) ^ d; a = rol(a, s) + b; }
#define STEP_G(a, b, c, d, m, k, s) { a += (m) + (k) + (c & ~d); __asm__("" : "+r"(a)); a += b & d; a = rol(a, s) + b; }
#define STEP_H(a, b, c, d, m, k, s) { a += (m) + (k); __asm__("" : "+r"(a)); a += (c ^ d) ^ b; a = rol(a, s) + b; }
#define STEP_I(a, b, c, d, m, k, s) { a += (m) + (k); __asm__("" : "+r"(a)); a += (b | ~d) ^ c; a = rol(a, s) + b; }

void hearth_md5_blocks(uint32_t state[4], const void *data, size_t blocks) {
    const unsigned char *p = (const unsigned char *)data;
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    while (blocks--) {
        uint32_t x[16];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (int i = 0; i < 16; i++)
            x[i] = (uint32_t)p[4 * i] | ((uint32_t)p[4 * i + 1] << 8) | ((uint32_t)p[4 * i + 2] << 16) | ((uint32_t)p[4 * i + 3] << 24);
#else
        memcpy(x, p, 64);
#endif
        uint32_t aa = a, bb = b, cc = c, dd = d;
        STEP_F(a, b, c, d, x[0], 0xd76aa478, 7)  STEP_F(d, a, b, c, x[1], 0xe8c7b756, 12)
        STEP_F(c, d, a, b, x[2], 0x242070db, 17) STEP_F(b, c, d, a, x[3], 0xc1bdceee, 22)
        STEP_F(a, b, c, d, x[4], 0xf57c0faf, 7)  STEP_F(d, a, b, c, x[5], 0x4787c62a, 12)
        STEP_F(c, d, a, b, x[6], 0xa8304613, 17) STEP_F(b, c, d, a, x[7], 0xfd469501, 22)
        STEP_F(a, b, c, d, x[8], 0x698098d8, 7)  STEP_F(d, a, b, c, x[9], 0x8b44f7af, 12)
        STEP_F(c, d, a, b, x[10], 0xffff5bb1, 17) STEP_F(b, c, d, a, x[11], 0x895cd7be, 22)
        STEP_F(a, b, c, d, x[12], 0x6b901122, 7) STEP_F(d, a, b, c, x[13], 0xfd987193, 12)
        STEP_F(c, d, a, b, x[14], 0xa679438e, 17) STEP_F(b, c, d, a, x[15], 0x49b40821, 22)
        STEP_G(a, b, c, d, x[1], 0xf61e2562, 5)  STEP_G(d, a, b, c, x[6], 0xc040b340, 9)
        STEP_G(c, d, a, b, x[11], 0x265e5a51, 14) STEP_G(b, c, d, a, x[0], 0xe9b6c7aa, 20)
        STEP_G(a, b, c, d, x[5], 0xd62f105d, 5)  STEP_G(d, a, b, c, x[10], 0x02441453, 9)
        STEP_G(c, d, a, b, x[15], 0xd8a1e681, 14) STEP_G(b, c, d, a, x[4], 0xe7d3fbc8, 20)
        STEP_G(a, b, c, d, x[9], 0x21e1cde6, 5)  STEP_G(d, a, b, c, x[14], 0xc33707d6, 9)
        STEP_G(c, d, a, b, x[3], 0xf4d50d87, 14) STEP_G(b, c, d, a, x[8], 0x455a14ed, 20)
        STEP_G(a, b, c, d, x[13], 0xa9e3e905, 5) STEP_G(d, a, b, c, x[2], 0xfcefa3f8, 9)
        STEP_G(c, d, a, b, x[7], 0x676f02d9, 14) STEP_G(b, c, d, a, x[12], 0x8d2a4c8a, 20)
        STEP_H(a, b, c, d, x[5], 0xfffa3942, 4)  STEP_H(d, a, b, c, x[8], 0x8771f681, 11)
        STEP_H(c, d, a, b, x[11], 0x6d9d6122, 16) STEP_H(b, c, d, a, x[14], 0xfde5380c, 23)
        STEP_H(a, b, c, d, x[1], 0xa4beea44, 4)  STEP_H(d, a, b, c, x[4], 0x4bdecfa9, 11)
        STEP_H(c, d, a, b, x[7], 0xf6bb4b60, 16) STEP_H(b, c, d, a, x[10], 0xbebfbc70, 23)
        STEP_H(a, b, c, d, x[13], 0x289b7ec6, 4) STEP_H(d, a, b, c, x[0], 0xeaa127fa, 11)
        STEP_H(c, d, a, b, x[3], 0xd4ef3085, 16) STEP_H(b, c, d, a, x[6], 0x04881d05, 23)
        STEP_H(a, b, c, d, x[9], 0xd9d4d039, 4)  STEP_H(d, a, b, c, x[12], 0xe6db99e5, 11)
        STEP_H(c, d, a, b, x[15], 0x1fa27cf8, 16) STEP_H(b, c, d, a, x[2], 0xc4ac5665, 23)
        STEP_I(a, b, c, d, x[0], 0xf4292244, 6)  STEP_I(d, a, b, c, x[7], 0x432aff97, 10)
        STEP_I(c, d, a, b, x[14], 0xab9423a7, 15) STEP_I(b, c, d, a, x[5], 0xfc93a039, 21)
        STEP_I(a, b, c, d, x[12], 0x655b59c3, 6) STEP_I(d, a, b, c, x[3], 0x8f0ccc92, 10)
        STEP_I(c, d, a, b, x[10], 0xffeff47d, 15) STEP_I(b, c, d, a, x[1], 0x85845dd1, 21)
        STEP_I(a, b, c, d, x[8], 0x6fa87e4f, 6)  STEP_I(d, a, b, c, x[15], 0xfe2ce6e0, 10)
        STEP_I(c, d, a, b, x[6], 0xa3014314, 15) STEP_I(b, c, d, a, x[13], 0x4e0811a1, 21)
        STEP_I(a, b, c, d, x[4], 0xf7537e82, 6)  STEP_I(d, a, b, c, x[11], 0xbd3af235, 10)
        STEP_I(c, d, a, b, x[2], 0x2ad7d2bb, 15) STEP_I(b, c, d, a, x[9], 0xeb86d391, 21)
        a += aa; b += bb; c += cc; d += dd;
        p += 64;
    }
    state[0] = a; state[1] = b; state[2] = c; state[3] = d;
}

int hearth_md5_optimized(void) {
#if defined(__OPTIMIZE__)
    return 1;
#else
    return 0;
#endif
}
