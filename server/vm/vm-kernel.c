/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-vm: the guest's kernel -- the user's own build
 * (--kernel, --modules), Debian kernel packages (--kernel-deb), or by
 * default a Debian cloud kernel fetched once into the cache directory
 * (--kernel-release: lbs, Debian 13 backports' newest >= 6.15, which
 * takes logical blocks above the page size; or 6.12).  The file work,
 * apt included, is largeblock-vm-helper's; this file decides what to
 * ask of it and takes its answer: the image and the modules directory.
 * Single-threaded.
 */
#include <config.h>

#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vm.h"

/* DIR itself when it holds modules, else its only lib/modules/VERSION
 * or usr/lib/modules/VERSION (6.16+ packages).
 */
static int
find_module_dir (const char *dir, const char *what, char *moddir, size_t len)
{
  static const char *const under[] = { "lib/modules", "usr/lib/modules" };
  char path[PATH_MAX];
  struct dirent *e;
  DIR *d;
  int found = 0;

  snprintf (path, sizeof path, "%s/kernel", dir);
  if (access (path, R_OK) == 0) {
    snprintf (moddir, len, "%s", dir);
    return 0;
  }
  for (int i = 0; i < 2; i++) {
    snprintf (path, sizeof path, "%s/%s", dir, under[i]);
    d = opendir (path);
    while (d && (e = readdir (d)) != NULL) {
      if (e->d_name[0] == '.')
        continue;
      if (snprintf (moddir, len, "%s/%s", path, e->d_name) < (int) len)
        found++;
    }
    if (d)
      closedir (d);
  }
  if (found == 1)
    return 0;
  fprintf (stderr,
           VM_PROG ": %s=%s: expected a (usr/)lib/modules/VERSION directory "
                   "(or a tree holding exactly one), found %d\n",
           what, dir, found);
  return -1;
}

/* The helper's answer: the image's path, then the modules directory's. */
static int
take_kernel_paths (struct vm *vm, char *out)
{
  char *nl = strchr (out, '\n'), *end;

  if (nl == NULL || (end = strchr (nl + 1, '\n')) == NULL) {
    fprintf (stderr,
             VM_PROG ": largeblock-vm-helper gave no kernel image and "
                     "modules directory\n");
    return -1;
  }
  *nl = *end = '\0';
  snprintf (vm->kernel, sizeof vm->kernel, "%s", out);
  snprintf (vm->moddir, sizeof vm->moddir, "%s", nl + 1);
  vm_verbose (vm, "kernel %s, modules %s", vm->kernel, vm->moddir);
  return 0;
}

static int
fetch_default_kernel (struct vm *vm)
{
  char dir[PATH_MAX], out[2 * PATH_MAX + 2];
  char *args[] = { "fetch-kernel", dir, (char *) vm->opt.kernel_release,
                   NULL };

  vm_cache_dir (dir, sizeof dir);
  vm_verbose (vm, "kernel: --kernel-release=%s, cached in %s",
              vm->opt.kernel_release, dir);
  if (vm_run_helper (vm, args, out, sizeof out) == -1)
    return -1;
  return take_kernel_paths (vm, out);
}

static int
unpack_kernel_debs (struct vm *vm)
{
  char tree[PATH_MAX], out[2 * PATH_MAX + 2];
  char *args[3 + VM_MAX_KERNEL_DEBS] = { "unpack-deb", tree };
  unsigned i;

  snprintf (tree, sizeof tree, "%s/kernel", vm->workdir);
  for (i = 0; i < vm->opt.nr_kernel_debs; i++)
    args[2 + i] = (char *) vm->opt.kernel_debs[i];
  args[2 + i] = NULL;
  if (vm_run_helper (vm, args, out, sizeof out) == -1)
    return -1;
  return take_kernel_paths (vm, out);
}

int
vm_find_kernel (struct vm *vm)
{
  if (vm->opt.nr_kernel_debs)
    return unpack_kernel_debs (vm);
  if (!vm->opt.kernel)
    return fetch_default_kernel (vm);
  if (access (vm->opt.kernel, R_OK) == -1) {
    fprintf (stderr, VM_PROG ": --kernel=%s: cannot read it: %m\n",
             vm->opt.kernel);
    return -1;
  }
  snprintf (vm->kernel, sizeof vm->kernel, "%s", vm->opt.kernel);
  vm->moddir[0] = '\0';
  if (vm->opt.modules)
    return find_module_dir (vm->opt.modules, "--modules", vm->moddir,
                            sizeof vm->moddir);
  return 0;
}
