/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the folio allocator.
 *
 * Owns the memory behind folios: fixed-size, zero-filled blocks carved
 * from anonymous mmap arenas.  Freeing a folio gives its pages back to the
 * operating system at once (MADV_DONTNEED), so resident memory tracks the
 * folios in use rather than the high-water mark, and the freed address is
 * kept for reuse (it reads as zeros when touched again).  Folios smaller
 * than a page share pages: such a page goes back to the OS when its last
 * folio is freed.  Folios of a huge page or more are asked to be backed by
 * transparent huge pages; smaller ones are kept off them, since a huge page
 * would make one small folio cost 2 MiB.
 *
 * A slab is NOT thread-safe: the owner serialises calls (the RAM store
 * and the write cache keep one slab per lock stripe and call it under
 * that stripe's write lock, so allocation takes no lock of its own; see
 * locking.h for the plugin's locks).
 */
#ifndef LARGEBLOCK_SLAB_H
#define LARGEBLOCK_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lb_slab_arena;

struct lb_slab {
  size_t folio_bytes;
  size_t arena_bytes;
  size_t first_slot_offset; /* bytes reserved for page counts */
  size_t slots_per_arena;
  struct lb_slab_arena *arenas; /* every arena, for destroy */
  char *bump;                   /* next never-used slot in newest arena */
  size_t bump_left;
  void **free_slots; /* stack of freed slots */
  size_t nr_free;
  size_t free_capacity; /* >= every slot ever carved */
  size_t nr_arenas;
};

/* folio_bytes must be a power of two from 512 to 32 MiB.  Maps nothing
 * yet.  Returns 0.
 */
int lb_slab_init (struct lb_slab *s, size_t folio_bytes);

/* A zero-filled folio, or NULL with errno = ENOMEM. */
void *lb_slab_alloc (struct lb_slab *s);

/* Give a folio from lb_slab_alloc back; its memory returns to the OS.
 * Never fails.
 */
void lb_slab_free (struct lb_slab *s, void *folio);

/* Give back nr folios from lb_slab_alloc that lie next to each other in
 * memory, first at the lowest address: like nr calls of lb_slab_free, but
 * folios of a page or more go back to the OS in one madvise.
 */
void lb_slab_free_run (struct lb_slab *s, void *first, size_t nr);

/* lb_slab_free_run in two halves, so the slow one can run outside the
 * owner's lock: lb_slab_discard_run gives the memory of a run of folios
 * of a page or more back to the OS and touches no slab state (no
 * serialisation needed; false, doing nothing, for smaller folios, whose
 * pages are shared: free those with lb_slab_free_run); then
 * lb_slab_recycle_run, serialised as usual, keeps the addresses for reuse.
 */
bool lb_slab_discard_run (const struct lb_slab *s, void *first, size_t nr);
void lb_slab_recycle_run (struct lb_slab *s, void *first, size_t nr);

/* Unmap every arena. */
void lb_slab_destroy (struct lb_slab *s);

/* Bytes of bookkeeping (arena headers and the free stack), for reports. */
size_t lb_slab_metadata_bytes (const struct lb_slab *s);

#endif /* LARGEBLOCK_SLAB_H */
