/*
 * CRC-32 (the ZIP/zlib polynomial 0x04C11DB7, bit-reflected) at memory speed.
 *
 * Three kernels, chosen once at run time:
 *   - x86-64 with VPCLMULQDQ and AVX-512: the same folding on 512-bit registers, four
 *     accumulators (256 bytes per step);
 *   - x86-64 with PCLMULQDQ: carry-less-multiply folding (Gopal et al., "Fast CRC
 *     Computation for Generic Polynomials Using PCLMULQDQ Instruction", Intel, 2009),
 *     eight 128-bit accumulators (128 bytes per step) to hide the multiply latency;
 *   - AArch64 with the CRC32 extension: the __crc32d instruction;
 *   - anything else: slice-by-8 tables.
 * Every kernel also has a "copy" form that stores the bytes it reads into a destination,
 * so that appending an entry to a mapped archive reads the source once.
 *
 * Folding constants: K(n) = reflect32(x^n mod P) << 1. A fold over a distance of D bits
 * multiplies the low and high 64-bit halves of an accumulator by K(D + 32) and K(D - 32).
 * tests/kernels/test_crc32.py recomputes every constant below from the polynomial.
 *
 * Conventions match zlib: dz_crc32(0, p, n) == zlib.crc32(bytes(p[:n])), and the value
 * returned for a prefix may be passed back in to continue.
 */
#ifndef DAFZARR_CRC32_KERNEL_H
#define DAFZARR_CRC32_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DZ_HAVE_X86_CLMUL 1
#include <immintrin.h>
#endif

#if defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#define DZ_HAVE_ARM_CRC 1
#include <arm_acle.h>
#endif

/* --- slice-by-8 tables (portable path, tails, and the final 16-byte reduction) --- */

static uint32_t dz_crc_table[8][256];
static int dz_crc_kind = -1; /* -1 unset, 0 table, 1 x86 clmul, 2 arm crc */

static void dz_crc_build_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : (c >> 1);
        dz_crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = dz_crc_table[0][i];
        for (int t = 1; t < 8; t++) {
            c = dz_crc_table[0][c & 0xFF] ^ (c >> 8);
            dz_crc_table[t][i] = c;
        }
    }
}

/* The raw register update (no pre/post inversion). */
static inline uint32_t dz_crc_raw_bytes(uint32_t reg, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        reg = dz_crc_table[0][(reg ^ *p++) & 0xFF] ^ (reg >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= reg; /* little-endian hosts only; the package targets x86-64 and AArch64 */
        reg = dz_crc_table[7][w & 0xFF] ^ dz_crc_table[6][(w >> 8) & 0xFF] ^
              dz_crc_table[5][(w >> 16) & 0xFF] ^ dz_crc_table[4][(w >> 24) & 0xFF] ^
              dz_crc_table[3][(w >> 32) & 0xFF] ^ dz_crc_table[2][(w >> 40) & 0xFF] ^
              dz_crc_table[1][(w >> 48) & 0xFF] ^ dz_crc_table[0][(w >> 56) & 0xFF];
        p += 8;
        n -= 8;
    }
    while (n--) reg = dz_crc_table[0][(reg ^ *p++) & 0xFF] ^ (reg >> 8);
    return reg;
}

#if defined(DZ_HAVE_X86_CLMUL)

/* Fold an accumulator forward by the distance encoded in k, then add the next block. */
__attribute__((target("pclmul,sse4.1"))) static inline __m128i
dz_fold(__m128i acc, __m128i k, __m128i next) {
    __m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/*
 * Raw register update over n >= 128 bytes. When dst is not NULL the bytes are also
 * stored to dst (which must not overlap src). Returns the register after the whole
 * 16-byte-multiple prefix; *done receives how many bytes were consumed.
 */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
dz_crc_clmul(uint32_t reg, unsigned char *dst, const unsigned char *src, size_t n, size_t *done,
             int stream) {
    const __m128i k1024 = _mm_set_epi64x(0x14a7fe880LL, 0x1e88ef372LL); /* D = 1024 */
    const __m128i k128 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);  /* D = 128 */
    __m128i a[8];
    size_t off = 0;
    for (int i = 0; i < 8; i++) a[i] = _mm_loadu_si128((const __m128i *)(src + 16 * i));
    if (dst)
        for (int i = 0; i < 8; i++) _mm_storeu_si128((__m128i *)(dst + 16 * i), a[i]);
    a[0] = _mm_xor_si128(a[0], _mm_cvtsi32_si128((int)reg));
    off = 128;
    while (n - off >= 128) {
        __m128i b[8];
        for (int i = 0; i < 8; i++) b[i] = _mm_loadu_si128((const __m128i *)(src + off + 16 * i));
        if (dst && stream)
            for (int i = 0; i < 8; i++) _mm_stream_si128((__m128i *)(dst + off + 16 * i), b[i]);
        else if (dst)
            for (int i = 0; i < 8; i++) _mm_storeu_si128((__m128i *)(dst + off + 16 * i), b[i]);
        for (int i = 0; i < 8; i++) a[i] = dz_fold(a[i], k1024, b[i]);
        off += 128;
    }
    __m128i x = a[0];
    for (int i = 1; i < 8; i++) x = dz_fold(x, k128, a[i]);
    while (n - off >= 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(src + off));
        if (dst) _mm_storeu_si128((__m128i *)(dst + off), b);
        x = dz_fold(x, k128, b);
        off += 16;
    }
    /* x is congruent to the message so far: its CRC register from zero is the result. */
    unsigned char last[16];
    _mm_storeu_si128((__m128i *)last, x);
    *done = off;
    return dz_crc_raw_bytes(0, last, 16);
}

/*
 * The same folding with 512-bit registers (VPCLMULQDQ + AVX-512): four accumulators of
 * four 128-bit lanes each, 256 bytes per step. Lane i of a register holds bytes
 * [16 i, 16 i + 16) of its 64-byte block.
 */
__attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1"))) static inline __m512i
dz_fold512(__m512i acc, __m512i k, __m512i next) {
    __m512i lo = _mm512_clmulepi64_epi128(acc, k, 0x00);
    __m512i hi = _mm512_clmulepi64_epi128(acc, k, 0x11);
    return _mm512_ternarylogic_epi64(lo, hi, next, 0x96); /* lo ^ hi ^ next */
}

__attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1"))) static uint32_t
dz_crc_vpclmul(uint32_t reg, unsigned char *dst, const unsigned char *src, size_t n, size_t *done,
               int stream) {
    const __m512i k2048 = _mm512_set_epi64(0x1322d1430LL, 0x11542778aLL, 0x1322d1430LL, 0x11542778aLL,
                                           0x1322d1430LL, 0x11542778aLL, 0x1322d1430LL, 0x11542778aLL);
    const __m512i k512 = _mm512_set_epi64(0x1c6e41596LL, 0x154442bd4LL, 0x1c6e41596LL, 0x154442bd4LL,
                                          0x1c6e41596LL, 0x154442bd4LL, 0x1c6e41596LL, 0x154442bd4LL);
    /* lanes 0, 1, 2 fold forward by 384, 256 and 128 bits onto lane 3 */
    const __m512i klanes = _mm512_set_epi64(0, 0, 0x0ccaa009eLL, 0x1751997d0LL,
                                            0x15a546366LL, 0x0f1da05aaLL, 0x174359406LL, 0x03db1ecdcLL);
    const __m128i k128 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    __m512i a0 = _mm512_loadu_si512((const void *)(src + 0));
    __m512i a1 = _mm512_loadu_si512((const void *)(src + 64));
    __m512i a2 = _mm512_loadu_si512((const void *)(src + 128));
    __m512i a3 = _mm512_loadu_si512((const void *)(src + 192));
    size_t off = 256;
    if (dst) {
        _mm512_storeu_si512((void *)(dst + 0), a0);
        _mm512_storeu_si512((void *)(dst + 64), a1);
        _mm512_storeu_si512((void *)(dst + 128), a2);
        _mm512_storeu_si512((void *)(dst + 192), a3);
    }
    a0 = _mm512_xor_si512(a0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)reg)));
    while (n - off >= 256) {
        __m512i b0 = _mm512_loadu_si512((const void *)(src + off + 0));
        __m512i b1 = _mm512_loadu_si512((const void *)(src + off + 64));
        __m512i b2 = _mm512_loadu_si512((const void *)(src + off + 128));
        __m512i b3 = _mm512_loadu_si512((const void *)(src + off + 192));
        if (dst && stream) {
            _mm512_stream_si512((void *)(dst + off + 0), b0);
            _mm512_stream_si512((void *)(dst + off + 64), b1);
            _mm512_stream_si512((void *)(dst + off + 128), b2);
            _mm512_stream_si512((void *)(dst + off + 192), b3);
        } else if (dst) {
            _mm512_storeu_si512((void *)(dst + off + 0), b0);
            _mm512_storeu_si512((void *)(dst + off + 64), b1);
            _mm512_storeu_si512((void *)(dst + off + 128), b2);
            _mm512_storeu_si512((void *)(dst + off + 192), b3);
        }
        a0 = dz_fold512(a0, k2048, b0);
        a1 = dz_fold512(a1, k2048, b1);
        a2 = dz_fold512(a2, k2048, b2);
        a3 = dz_fold512(a3, k2048, b3);
        off += 256;
    }
    __m512i x = dz_fold512(a0, k512, a1);
    x = dz_fold512(x, k512, a2);
    x = dz_fold512(x, k512, a3);
    while (n - off >= 64) {
        __m512i b = _mm512_loadu_si512((const void *)(src + off));
        if (dst) _mm512_storeu_si512((void *)(dst + off), b);
        x = dz_fold512(x, k512, b);
        off += 64;
    }
    /* fold the four lanes into one: lanes 0..2 move forward onto lane 3 */
    __m512i moved = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, klanes, 0x00),
                                              _mm512_clmulepi64_epi128(x, klanes, 0x11),
                                              _mm512_setzero_si512(), 0x96);
    __m128i r = _mm512_extracti32x4_epi32(x, 3);
    r = _mm_xor_si128(r, _mm512_extracti32x4_epi32(moved, 0));
    r = _mm_xor_si128(r, _mm512_extracti32x4_epi32(moved, 1));
    r = _mm_xor_si128(r, _mm512_extracti32x4_epi32(moved, 2));
    while (n - off >= 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(src + off));
        if (dst) _mm_storeu_si128((__m128i *)(dst + off), b);
        r = dz_fold(r, k128, b);
        off += 16;
    }
    unsigned char last[16];
    _mm_storeu_si128((__m128i *)last, r);
    *done = off;
    return dz_crc_raw_bytes(0, last, 16);
}
#endif

static void dz_crc_init(void) {
    if (dz_crc_kind >= 0) return;
    dz_crc_build_tables();
    dz_crc_kind = 0;
#if defined(DZ_HAVE_X86_CLMUL)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) dz_crc_kind = 1;
    if (dz_crc_kind == 1 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq"))
        dz_crc_kind = 3;
#elif defined(DZ_HAVE_ARM_CRC)
    dz_crc_kind = 2;
#endif
}

/* Name of the kernel in use, for show_config(). */
static const char *dz_crc_kernel_name(void) {
    dz_crc_init();
    switch (dz_crc_kind) {
    case 1: return "x86-64 pclmulqdq fold-by-8";
    case 2: return "aarch64 crc32 instructions";
    case 3: return "x86-64 vpclmulqdq avx-512 fold-by-16";
    default: return "portable slice-by-8";
    }
}

/* From this size on, a copy bypasses the cache (non-temporal stores): the destination of a
 * large append is not read back soon, and skipping the read-for-ownership of every line
 * saves a third of the memory traffic. */
#define DZ_STREAM_THRESHOLD ((size_t)1 << 20)

/* CRC-32 of src[0:n] continued from crc; if dst is not NULL, also copies src to dst. */
static uint32_t dz_crc32_copy(uint32_t crc, unsigned char *dst, const unsigned char *src, size_t n) {
    uint32_t reg = ~crc;
    dz_crc_init();
#if defined(DZ_HAVE_X86_CLMUL)
    int stream = 0;
    if (dst && n >= DZ_STREAM_THRESHOLD && dz_crc_kind >= 1) {
        /* align the destination to a cache line for the streaming stores */
        size_t head = (64 - ((uintptr_t)dst & 63)) & 63;
        memcpy(dst, src, head);
        reg = dz_crc_raw_bytes(reg, src, head);
        src += head;
        dst += head;
        n -= head;
        stream = 1;
    }
    if (dz_crc_kind == 3 && n >= 512) {
        size_t done = 0;
        reg = dz_crc_vpclmul(reg, dst, src, n, &done, stream);
        src += done;
        if (dst) dst += done;
        n -= done;
    } else if (dz_crc_kind >= 1 && n >= 256) {
        size_t done = 0;
        reg = dz_crc_clmul(reg, dst, src, n, &done, stream);
        src += done;
        if (dst) dst += done;
        n -= done;
    }
    if (stream) _mm_sfence(); /* order the streaming stores before any later store */
#elif defined(DZ_HAVE_ARM_CRC)
    if (dz_crc_kind == 2) {
        while (n >= 8) {
            uint64_t w;
            memcpy(&w, src, 8);
            if (dst) {
                memcpy(dst, &w, 8);
                dst += 8;
            }
            reg = __crc32d(reg, w);
            src += 8;
            n -= 8;
        }
    }
#endif
    if (dst && n) memcpy(dst, src, n);
    reg = dz_crc_raw_bytes(reg, src, n);
    return ~reg;
}

static inline uint32_t dz_crc32(uint32_t crc, const unsigned char *src, size_t n) {
    return dz_crc32_copy(crc, NULL, src, n);
}

#endif /* DAFZARR_CRC32_KERNEL_H */
