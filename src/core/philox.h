/* The dropout random stream of the Ascend 950 kernel (spec 5.1): Philox-4x32
 * with 7 rounds.  Stream element e (one byte) for (seed, offset) is byte e % 16
 * of block ceil(offset / 16) + e / 16; a block is the 4 output words, each
 * little-endian.  Bit-exact with the golden and the device. */
#ifndef ATTNOPS_PHILOX_H
#define ATTNOPS_PHILOX_H

#include <stddef.h>
#include <stdint.h>

typedef struct ao_philox {
    uint32_t key[2];  /* seed low, high 32 bits */
    uint32_t base[4]; /* ceil(offset / 16) as a 128-bit little-word-first counter */
} ao_philox;

/* Philox-4x32 with 10 rounds over counter + n (a 128-bit counter, lowest word
 * first): the generator of TensorFlow's stateless random ops, which CANN's
 * DropOutGenMask golden (ops-math dsa_gen_bit_mask) reproduces the A2/A3
 * mask with.  Same multipliers and key schedule as the 950's. */
void ao_philox10_block(const uint32_t key[2], const uint32_t counter[4], uint64_t n, uint32_t out[4]);

ao_philox ao_philox_make(uint64_t seed, uint64_t offset);
/* The 4 words of block base + n. */
void ao_philox_block(const ao_philox *g, uint64_t n, uint32_t out[4]);
/* Stream elements [first, first + count). */
void ao_philox_bytes(const ao_philox *g, uint64_t first, size_t count, uint8_t *out);

#endif
