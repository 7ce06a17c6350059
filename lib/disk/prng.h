/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: a small seeded pseudo-random generator.
 *
 * splitmix64 (Steele, Lea and Flood): one 64-bit word of state, every
 * seed valid, the same seed always gives the same sequence on every
 * machine.  Used where a choice must be replayable from a seed the user
 * can type (the power cut's survivors), never for anything secret.
 * A struct lb_prng belongs to one thread; no locking.
 */
#ifndef LARGEBLOCK_PRNG_H
#define LARGEBLOCK_PRNG_H

#include <stdbool.h>
#include <stdint.h>

struct lb_prng {
  uint64_t state;
};

static inline void
lb_prng_init (struct lb_prng *r, uint64_t seed)
{
  r->state = seed;
}

static inline uint64_t
lb_prng_next (struct lb_prng *r)
{
  uint64_t z = (r->state += UINT64_C (0x9e3779b97f4a7c15));

  z = (z ^ (z >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* A fair coin. */
static inline bool
lb_prng_coin (struct lb_prng *r)
{
  return lb_prng_next (r) >> 63;
}

/* Mix a key into a seed, so that independent streams (one per block) come
 * from one seed whatever order they are drawn in.
 */
static inline uint64_t
lb_prng_derive (uint64_t seed, uint64_t key)
{
  struct lb_prng r;

  lb_prng_init (&r, seed ^ (key * UINT64_C (0xd6e8feb86659fd93)));
  return lb_prng_next (&r);
}

#endif /* LARGEBLOCK_PRNG_H */
