/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock: lib/disk/slab unit tests.
 *
 * Proves that folios come back zero-filled (fresh and reused), that a
 * freed folio's memory really leaves the process (mincore says its pages
 * are no longer resident), that sub-page folios give their page back only
 * when the page's last folio goes, that many arenas work, that a
 * freed run is handed out again in address order, and that freeing in two
 * halves (discard, then recycle) does what freeing in one does.
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "suites.h"
#include "slab.h"

static const size_t folio_sizes[] = {
  512, 1024, 2048, 4096, 16384, 65536, 1 << 20, 2 << 20, 4 << 20,
};
#define NR_SIZES (sizeof folio_sizes / sizeof folio_sizes[0])

static size_t
page (void)
{
  return (size_t) sysconf (_SC_PAGESIZE);
}

/* Is the page holding addr resident? */
static int
resident (const void *addr)
{
  unsigned char vec = 0;
  void *p = (void *) ((uintptr_t) addr & ~(uintptr_t) (page () - 1));

  ck_assert_int_eq (mincore (p, page (), &vec), 0);
  return vec & 1;
}

static int
all_zero (const unsigned char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i])
      return 0;
  return 1;
}

START_TEST (test_alloc_is_zeroed_and_reuse_is_zeroed)
{
  struct lb_slab s;
  size_t bytes = folio_sizes[_i];
  unsigned char *a, *b;

  lb_slab_init (&s, bytes);
  a = lb_slab_alloc (&s);
  ck_assert_ptr_nonnull (a);
  ck_assert (all_zero (a, bytes));
  memset (a, 0xa5, bytes);
  lb_slab_free (&s, a);
  b = lb_slab_alloc (&s);
  ck_assert_ptr_eq (a, b); /* freed slots are reused first */
  ck_assert (all_zero (b, bytes));
  lb_slab_destroy (&s);
}
END_TEST

START_TEST (test_free_returns_memory_to_os)
{
  struct lb_slab s;
  size_t bytes = folio_sizes[_i];
  unsigned char *f;

  if (bytes < page ())
    return; /* covered by the sub-page test */
  lb_slab_init (&s, bytes);
  f = lb_slab_alloc (&s);
  memset (f, 1, bytes);
  ck_assert (resident (f));
  ck_assert (resident (f + bytes - 1));
  lb_slab_free (&s, f);
  ck_assert (!resident (f));
  ck_assert (!resident (f + bytes - 1));
  lb_slab_destroy (&s);
}
END_TEST

START_TEST (test_sub_page_folios_release_whole_pages)
{
  struct lb_slab s;
  size_t bytes = folio_sizes[_i];
  size_t per_page = page () / bytes;
  unsigned char *f[64];

  if (bytes >= page ())
    return;
  ck_assert_uint_le (per_page, 64);
  lb_slab_init (&s, bytes);
  for (size_t i = 0; i < per_page; i++) {
    f[i] = lb_slab_alloc (&s);
    memset (f[i], 0x5a, bytes);
  }
  /* One page holds them all, and it is not the arena header page. */
  for (size_t i = 1; i < per_page; i++)
    ck_assert_ptr_eq ((void *) ((uintptr_t) f[i] & ~(uintptr_t) (page () - 1)),
                      (void *) ((uintptr_t) f[0] &
                                ~(uintptr_t) (page () - 1)));
  for (size_t i = 0; i + 1 < per_page; i++) {
    lb_slab_free (&s, f[i]);
    ck_assert (resident (f[0]));        /* still has a live folio */
    ck_assert (all_zero (f[i], bytes)); /* freed folio reads zero */
  }
  ck_assert (!all_zero (f[per_page - 1], bytes));
  lb_slab_free (&s, f[per_page - 1]);
  ck_assert (!resident (f[0]));
  lb_slab_destroy (&s);
}
END_TEST

START_TEST (test_many_arenas_distinct_folios)
{
  struct lb_slab s;
  size_t bytes = folio_sizes[_i];
  size_t n = (size_t) (8 << 20) / bytes + 3; /* spans several arenas */
  unsigned char **f = calloc (n, sizeof *f);

  ck_assert_ptr_nonnull (f);
  lb_slab_init (&s, bytes);
  for (size_t i = 0; i < n; i++) {
    f[i] = lb_slab_alloc (&s);
    ck_assert_ptr_nonnull (f[i]);
    ck_assert (all_zero (f[i], bytes));
    /* Stamp the first and last byte: overlap would show up below. */
    f[i][0] = (unsigned char) i;
    f[i][bytes - 1] = (unsigned char) (i >> 8);
  }
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_eq (f[i][0], (unsigned char) i);
    ck_assert_uint_eq (f[i][bytes - 1], (unsigned char) (i >> 8));
  }
  ck_assert_uint_ge (s.nr_arenas, 2);
  ck_assert_uint_gt (lb_slab_metadata_bytes (&s), 0);
  /* Free every other folio, allocate them again: all reused, all zero. */
  for (size_t i = 0; i < n; i += 2)
    lb_slab_free (&s, f[i]);
  size_t arenas = s.nr_arenas;
  for (size_t i = 0; i < n; i += 2) {
    unsigned char *g = lb_slab_alloc (&s);
    ck_assert (all_zero (g, bytes));
  }
  ck_assert_uint_eq (s.nr_arenas, arenas);
  lb_slab_destroy (&s);
  free (f);
}
END_TEST

START_TEST (test_huge_folios_are_aligned)
{
  struct lb_slab s;
  size_t bytes = folio_sizes[_i];
  void *f;

  lb_slab_init (&s, bytes);
  f = lb_slab_alloc (&s);
  /* Folios are aligned to their size up to the huge page size. */
  size_t align = bytes < (2u << 20) ? bytes : (2u << 20);
  ck_assert_uint_eq ((uintptr_t) f % align, 0);
  lb_slab_destroy (&s);
}
END_TEST

/* A run freed in one piece comes back in address order, so a range
 * written again after a trim gets neighbouring folios and its next trim
 * can free them as one run (reversed, every folio was its own madvise).
 */
START_TEST (test_freed_run_is_reused_in_address_order)
{
  struct lb_slab s;
  size_t bytes = folio_sizes[_i];
  enum { NR = 8 };
  char *first, *again;

  lb_slab_init (&s, bytes);
  if (s.slots_per_arena < NR)
    return; /* one folio per arena: no neighbours to keep */
  first = lb_slab_alloc (&s);
  ck_assert_ptr_nonnull (first);
  for (size_t i = 1; i < NR; i++)
    ck_assert_ptr_eq (lb_slab_alloc (&s), first + i * bytes);
  lb_slab_free_run (&s, first, NR);
  for (size_t i = 0; i < NR; i++) {
    again = lb_slab_alloc (&s);
    ck_assert_ptr_eq (again, first + i * bytes);
  }
  lb_slab_destroy (&s);
}
END_TEST

/* The reclaim worker's way: discard (no slab state touched), then
 * recycle.  Sub-page folios refuse the discard and are freed whole.
 */
START_TEST (test_discard_then_recycle_is_free_run)
{
  struct lb_slab s;
  size_t bytes = folio_sizes[_i];
  enum { NR = 4 };
  char *first;
  size_t nr_free;

  lb_slab_init (&s, bytes);
  if (s.slots_per_arena < NR)
    return;
  first = lb_slab_alloc (&s);
  for (size_t i = 1; i < NR; i++)
    ck_assert_ptr_eq (lb_slab_alloc (&s), first + i * bytes);
  memset (first, 0x5a, NR * bytes);
  nr_free = s.nr_free;
  if (bytes < page ()) {
    ck_assert (!lb_slab_discard_run (&s, first, NR));
    ck_assert_int_eq (first[NR * bytes - 1], 0x5a); /* untouched */
    ck_assert_uint_eq (s.nr_free, nr_free);
    lb_slab_free_run (&s, first, NR);
  }
  else {
    ck_assert (lb_slab_discard_run (&s, first, NR));
    ck_assert (!resident (first));
    ck_assert (!resident (first + NR * bytes - 1));
    ck_assert_uint_eq (s.nr_free, nr_free); /* not reusable yet */
    lb_slab_recycle_run (&s, first, NR);
  }
  ck_assert_uint_eq (s.nr_free, nr_free + NR);
  for (size_t i = 0; i < NR; i++) {
    char *again = lb_slab_alloc (&s);

    ck_assert_ptr_eq (again, first + i * bytes);
    ck_assert (all_zero ((unsigned char *) again, bytes));
  }
  lb_slab_destroy (&s);
}
END_TEST

static Suite *
slab_suite (void)
{
  Suite *s = suite_create ("slab");
  TCase *tc = tcase_create ("slab");

  tcase_set_timeout (tc, 60);
  tcase_add_loop_test (tc, test_alloc_is_zeroed_and_reuse_is_zeroed, 0,
                       NR_SIZES);
  tcase_add_loop_test (tc, test_free_returns_memory_to_os, 0, NR_SIZES);
  tcase_add_loop_test (tc, test_sub_page_folios_release_whole_pages, 0,
                       NR_SIZES);
  tcase_add_loop_test (tc, test_many_arenas_distinct_folios, 0, NR_SIZES);
  tcase_add_loop_test (tc, test_huge_folios_are_aligned, 0, NR_SIZES);
  tcase_add_loop_test (tc, test_freed_run_is_reused_in_address_order, 0,
                       NR_SIZES);
  tcase_add_loop_test (tc, test_discard_then_recycle_is_free_run, 0, NR_SIZES);
  suite_add_tcase (s, tc);
  return s;
}

LB_UNIT_SUITE (slab_suite);
