/* Large copies and CRC-32s split over threads.
 *
 * Storing a large entry into fresh file pages costs a page-cache allocation, a zero-fill and
 * a fault per page besides the copy and the CRC; one core cannot do all of that at memory
 * speed. Here each thread populates, copies and checksums its own slice of the range, and the
 * slices' CRCs are joined with GF(2) polynomial arithmetic:
 *
 *     crc(A || B) = crc(A) * x^(8 |B|)  mod P   xor   crc(B)
 *
 * which holds for the pre- and post-inverted CRC-32 of zlib (the inversions cancel).
 * Polynomials are kept bit-reflected, as the CRC itself: bit 31 is x^0, bit 0 is x^31.
 */
#ifndef DAFZARR_CRC32_PARALLEL_H
#define DAFZARR_CRC32_PARALLEL_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "_crc32_kernel.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define DZ_POLY_REFLECTED 0xEDB88320u
#define DZ_X0 0x80000000u             /* the polynomial 1 */
#define DZ_MAX_THREADS 16
/* Slices smaller than this are not worth a thread (start-up ~20 us, ~5 ms of copying). */
#define DZ_MIN_SLICE ((size_t)16 << 20)
#define DZ_SLICE_ALIGN ((size_t)2 << 20)

static int dz_threads = 1;

static void dz_set_threads(int n) { dz_threads = n < 1 ? 1 : n > DZ_MAX_THREADS ? DZ_MAX_THREADS : n; }
static int dz_get_threads(void) { return dz_threads; }

/* a(x) * b(x) mod P. */
static uint32_t dz_gf2_mulmod(uint32_t a, uint32_t b) {
    uint32_t product = 0;
    for (int i = 0; i < 32 && a; i++) {
        if (a & DZ_X0) product ^= b;
        a <<= 1;                                          /* next coefficient of a */
        b = (b & 1) ? (b >> 1) ^ DZ_POLY_REFLECTED : b >> 1; /* b *= x, reduced */
    }
    return product;
}

/* x^(8 n) mod P, by squaring. */
static uint32_t dz_x_pow_8n(uint64_t n) {
    uint32_t result = DZ_X0;
    uint32_t base = DZ_X0 >> 8; /* x^8 */
    while (n) {
        if (n & 1) result = dz_gf2_mulmod(result, base);
        base = dz_gf2_mulmod(base, base);
        n >>= 1;
    }
    return result;
}

/* The CRC-32 of A || B from crc(A), crc(B) and |B|. */
static uint32_t dz_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
    return dz_gf2_mulmod(dz_x_pow_8n(len_b), crc_a) ^ crc_b;
}

typedef struct {
    unsigned char *dst;
    const unsigned char *src;
    size_t n;
    uint32_t crc;
    int populate;
} dz_slice;

/* Best effort (Linux >= 5.14): fault a destination range's pages in one call instead of one
 * fault per page. Failure (older kernels: EINVAL) changes nothing. */
static void dz_populate_write(unsigned char *dst, size_t n) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)dst & ~(page - 1);
    uintptr_t stop = ((uintptr_t)dst + n + page - 1) & ~(page - 1);
    madvise((void *)start, stop - start, MADV_POPULATE_WRITE);
}

static void dz_slice_run(dz_slice *s) {
    if (s->dst && s->populate) dz_populate_write(s->dst, s->n);
    s->crc = dz_crc32_copy(0, s->dst, s->src, s->n);
}

static void *dz_slice_thread(void *arg) {
    dz_slice_run((dz_slice *)arg);
    return NULL;
}

/* Number of slices for n bytes with the configured thread count. */
static int dz_slice_count(size_t n) {
    size_t k = n / DZ_MIN_SLICE;
    if (k > (size_t)dz_threads) k = (size_t)dz_threads;
    return k < 1 ? 1 : (int)k;
}

/* CRC-32 of src[0:n] continued from crc; copies to dst unless dst is NULL. Large ranges are
 * split over up to dz_threads threads; a thread that cannot be started runs inline. Worker
 * threads block every signal, so signals keep reaching the interpreter's thread. The caller
 * must have run dz_crc_init(). */
static uint32_t dz_crc32_copy_mt(uint32_t crc, unsigned char *dst, const unsigned char *src,
                                 size_t n, int populate) {
    int k = dz_slice_count(n);
    if (k == 1) {
        if (dst && populate) dz_populate_write(dst, n);
        return dz_crc32_copy(crc, dst, src, n);
    }
    dz_slice slices[DZ_MAX_THREADS];
    pthread_t tids[DZ_MAX_THREADS];
    int started[DZ_MAX_THREADS] = {0};
    size_t per = (n / (size_t)k + DZ_SLICE_ALIGN - 1) & ~(DZ_SLICE_ALIGN - 1);
    size_t off = 0;
    int used = 0;
    for (int i = 0; i < k && off < n; i++, used++) {
        size_t len = (i == k - 1 || n - off < per) ? n - off : per;
        slices[i] = (dz_slice){dst ? dst + off : NULL, src + off, len, 0, populate};
        off += len;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (int i = 1; i < used; i++)
        started[i] = pthread_create(&tids[i], NULL, dz_slice_thread, &slices[i]) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    dz_slice_run(&slices[0]);
    for (int i = 1; i < used; i++) {
        if (started[i])
            pthread_join(tids[i], NULL);
        else
            dz_slice_run(&slices[i]);
    }
    uint32_t total = dz_crc32_combine(crc, slices[0].crc, slices[0].n);
    for (int i = 1; i < used; i++) total = dz_crc32_combine(total, slices[i].crc, slices[i].n);
    return total;
}

/* Write src[0:n] to fd at offset with pwrite(2), retrying short writes and EINTR.
 * Returns 0 or an errno value. */
static int dz_pwrite_all(int fd, off_t offset, const unsigned char *src, size_t n) {
    while (n) {
        ssize_t rc = pwrite(fd, src, n, offset);
        if (rc < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (rc == 0) return EIO;
        src += rc;
        offset += rc;
        n -= (size_t)rc;
    }
    return 0;
}

/* Into pages the process has not touched yet, the kernel's write path is several times
 * faster than stores through a shared mapping (one fault and one page_mkwrite per page).
 * This writes src[0:n] at offset in cache-sized pieces, each checksummed first and then
 * copied by the kernel while still in cache: the source is read from memory once. The CRC
 * continues from *crc and is stored back there. Returns 0 or an errno value. */
#define DZ_PWRITE_PIECE ((size_t)1 << 20)
static int dz_crc32_pwrite(int fd, off_t offset, const unsigned char *src, size_t n,
                           uint32_t *crc) {
    uint32_t c = *crc;
    int err = 0;
    while (n && !err) {
        size_t len = n < DZ_PWRITE_PIECE ? n : DZ_PWRITE_PIECE;
        c = dz_crc32(c, src, len);
        err = dz_pwrite_all(fd, offset, src, len);
        src += len;
        offset += (off_t)len;
        n -= len;
    }
    *crc = c;
    return err;
}

#endif /* DAFZARR_CRC32_PARALLEL_H */
