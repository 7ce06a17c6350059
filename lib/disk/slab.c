/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: the folio allocator -- see slab.h for what it owns and why
 * it has no lock of its own.
 *
 * Layout: arenas are anonymous mappings aligned to the huge page size, of
 * max(2 MiB, folio) bytes, carved into folios from a bump pointer; freed
 * folios go on a stack and are reused first, in address order within a
 * freed run.  The stack's capacity always
 * covers every slot carved, so freeing never allocates and never fails.
 *
 * Folios of a page or more: freeing is one madvise(MADV_DONTNEED); the
 * kernel hands back zero pages on the next touch.  A run of neighbouring
 * folios is freed with one madvise for all of them (lb_slab_free_run):
 * each call costs a TLB shootdown, which dominates freeing small folios.
 *
 * Sub-page folios (512, 1k, 2k): the arena's first page holds a live count
 * per page.  Freeing zeroes the folio, and when a page's count drops to
 * zero the whole page goes back to the OS.  Arenas of sub-page folios are
 * exactly one huge page and aligned to it, so a folio finds its arena's
 * header by masking its address.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "slab.h"

#define HUGE_PAGE_BYTES ((size_t) 2 << 20)

struct lb_slab_arena {
  struct lb_slab_arena *next;
  char *base;
  size_t bytes;
};

static size_t
page_bytes (void)
{
  static size_t cached;

  if (cached == 0)
    cached = (size_t) sysconf (_SC_PAGESIZE);
  return cached;
}

static bool
is_sub_page (const struct lb_slab *s)
{
  return s->folio_bytes < page_bytes ();
}

int
lb_slab_init (struct lb_slab *s, size_t folio_bytes)
{
  memset (s, 0, sizeof *s);
  s->folio_bytes = folio_bytes;
  s->arena_bytes = folio_bytes > HUGE_PAGE_BYTES ? folio_bytes
                                                 : HUGE_PAGE_BYTES;
  /* Sub-page slabs keep one uint16_t live count per page in page 0. */
  s->first_slot_offset = is_sub_page (s) ? page_bytes () : 0;
  assert (s->arena_bytes / page_bytes () * sizeof (uint16_t) <=
            page_bytes () ||
          !is_sub_page (s));
  s->slots_per_arena = (s->arena_bytes - s->first_slot_offset) / folio_bytes;
  return 0;
}

/* Map bytes of zeroed memory aligned to HUGE_PAGE_BYTES, by mapping a
 * little more and unmapping the unaligned ends.
 */
static char *
map_aligned (size_t bytes)
{
  size_t span = bytes + HUGE_PAGE_BYTES;
  char *raw, *aligned;
  size_t head, tail;

  raw = mmap (NULL, span, PROT_READ | PROT_WRITE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED)
    return NULL;
  aligned = (char *) (((uintptr_t) raw + HUGE_PAGE_BYTES - 1) &
                      ~(uintptr_t) (HUGE_PAGE_BYTES - 1));
  head = (size_t) (aligned - raw);
  tail = span - head - bytes;
  if (head)
    munmap (raw, head);
  if (tail)
    munmap (aligned + bytes, tail);
  return aligned;
}

/* Huge pages pay off only when a folio fills them; for smaller folios a
 * huge page would make a single folio cost 2 MiB of RSS and make freeing
 * it split the page, so opt those arenas out explicitly.
 */
static void
advise_huge_pages (const struct lb_slab *s, char *base)
{
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  madvise (base, s->arena_bytes,
           s->folio_bytes >= HUGE_PAGE_BYTES ? MADV_HUGEPAGE
                                             : MADV_NOHUGEPAGE);
#endif
}

static int
grow_free_stack (struct lb_slab *s, size_t slots_total)
{
  void **p;

  if (s->free_capacity >= slots_total)
    return 0;
  p = realloc (s->free_slots, slots_total * sizeof *p);
  if (p == NULL)
    return -1;
  s->free_slots = p;
  s->free_capacity = slots_total;
  return 0;
}

static int
add_arena (struct lb_slab *s)
{
  struct lb_slab_arena *a;
  size_t slots_total = (s->nr_arenas + 1) * s->slots_per_arena;

  if (grow_free_stack (s, slots_total) == -1)
    goto nomem;
  a = malloc (sizeof *a);
  if (a == NULL)
    goto nomem;
  a->base = map_aligned (s->arena_bytes);
  if (a->base == NULL) {
    free (a);
    goto nomem;
  }
  advise_huge_pages (s, a->base);
  a->bytes = s->arena_bytes;
  a->next = s->arenas;
  s->arenas = a;
  s->nr_arenas++;
  s->bump = a->base + s->first_slot_offset;
  s->bump_left = s->slots_per_arena;
  return 0;

nomem:
  errno = ENOMEM;
  return -1;
}

/* The live count of the page holding a sub-page folio. */
static uint16_t *
page_live_count (const struct lb_slab *s, void *folio)
{
  uintptr_t addr = (uintptr_t) folio;
  uint16_t *counts = (uint16_t *) (addr & ~(uintptr_t) (s->arena_bytes - 1));
  size_t page = (addr & (s->arena_bytes - 1)) / page_bytes ();

  return &counts[page];
}

void *
lb_slab_alloc (struct lb_slab *s)
{
  void *folio;

  if (s->nr_free > 0)
    folio = s->free_slots[--s->nr_free];
  else {
    if (s->bump_left == 0 && add_arena (s) == -1)
      return NULL;
    folio = s->bump;
    s->bump += s->folio_bytes;
    s->bump_left--;
  }
  if (is_sub_page (s))
    (*page_live_count (s, folio))++;
  return folio;
}

void
lb_slab_free (struct lb_slab *s, void *folio)
{
  assert (s->nr_free < s->free_capacity);

  if (!is_sub_page (s))
    madvise (folio, s->folio_bytes, MADV_DONTNEED);
  else {
    uint16_t *live = page_live_count (s, folio);

    assert (*live > 0);
    if (--*live == 0)
      madvise ((void *) ((uintptr_t) folio & ~(uintptr_t) (page_bytes () - 1)),
               page_bytes (), MADV_DONTNEED);
    else
      memset (folio, 0, s->folio_bytes);
  }
  s->free_slots[s->nr_free++] = folio;
}

void
lb_slab_free_run (struct lb_slab *s, void *first, size_t nr)
{
  char *folio = first;

  if (!lb_slab_discard_run (s, first, nr)) {
    for (size_t i = nr; i > 0; i--) /* highest first: see recycle */
      lb_slab_free (s, folio + (i - 1) * s->folio_bytes);
    return;
  }
  lb_slab_recycle_run (s, first, nr);
}

bool
lb_slab_discard_run (const struct lb_slab *s, void *first, size_t nr)
{
  if (is_sub_page (s))
    return false;
  madvise (first, nr * s->folio_bytes, MADV_DONTNEED);
  return true;
}

void
lb_slab_recycle_run (struct lb_slab *s, void *first, size_t nr)
{
  char *folio = first;

  assert (s->nr_free + nr <= s->free_capacity);
  /* Pushed highest first, so the stack hands the run out again in address
   * order: a range written after this trim gets neighbouring folios in
   * ascending order, and its own trim can free them as one run again.
   * (Pushed lowest first, every later run would come back reversed and a
   * trim would pay one madvise per folio.)
   */
  for (size_t i = nr; i > 0; i--)
    s->free_slots[s->nr_free++] = folio + (i - 1) * s->folio_bytes;
}

void
lb_slab_destroy (struct lb_slab *s)
{
  struct lb_slab_arena *a, *next;

  for (a = s->arenas; a != NULL; a = next) {
    next = a->next;
    munmap (a->base, a->bytes);
    free (a);
  }
  free (s->free_slots);
  memset (s, 0, sizeof *s);
}

size_t
lb_slab_metadata_bytes (const struct lb_slab *s)
{
  size_t bytes = s->nr_arenas * sizeof (struct lb_slab_arena) +
    s->free_capacity * sizeof (void *);

  if (s->folio_bytes && is_sub_page (s))
    bytes += s->nr_arenas * page_bytes ();
  return bytes;
}
