/* SPDX-License-Identifier: BSD-3-Clause */
/* largeblock-vm: the guest's root file system -- an initramfs holding
 * busybox, largeblock-vm-init as /init, the kernel modules the disks
 * and XFS need, the usual storage tools and the project's own programs
 * (with their libraries), and /lbvm: this run's configuration and
 * command.  Packed by largeblock-vm-helper: the part that stays the
 * same (busybox, modules, tools, libraries) once per kernel into the
 * cache, the rest fresh for every run (well under a second).
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"
#include "vm.h"

#define MAX_FILES 64

/* Found on PATH and put in the guest at the same place; a missing one
 * is simply absent there (fio, say), except those the attach needs.
 */
static const char *const guest_tools[] = {
  "bash",      "socat",    "nbd-client", "mkfs.xfs", "xfs_io",  "xfs_repair",
  "xfs_db",    "blockdev", "losetup",    "mount",    "umount",  "fio",
  "sha256sum", "md5sum",   "cmp",        "dd",       "sync",    "stat",
  "truncate",  "findmnt",  "blkid",      "nbdkit",   "nbdinfo", "nbdsh",
  "fsfreeze",  "fstrim",   "mkfs.ext4",  NULL
};

/* Our own programs, looked for next to largeblock-vm first (installed,
 * they all are), then on PATH (in a build tree they live in server/run/
 * and tools/, which tests/vm-functions.sh puts on PATH).
 */
static const char *const own_programs[] = { "largeblock-run",
                                            "largeblock-verify", NULL };

static bool
find_in_path (const char *name, char *path, size_t len)
{
  const char *dirs = getenv ("PATH");

  if (dirs == NULL || *dirs == '\0')
    dirs = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  for (;;) {
    size_t n = strcspn (dirs, ":");

    snprintf (path, len, "%.*s/%s", (int) n, dirs, name);
    if (n > 0 && access (path, X_OK) == 0)
      return true;
    if (dirs[n] == '\0')
      break;
    dirs += n + 1;
  }
  /* Tools in sbin are not on every user's PATH. */
  snprintf (path, len, "/usr/sbin/%s", name);
  return access (path, X_OK) == 0;
}

static int
write_file (const char *path, const char *text)
{
  FILE *fp = fopen (path, "w");

  if (fp == NULL || fputs (text, fp) == EOF || fclose (fp) == EOF) {
    fprintf (stderr, VM_PROG ": %s: %m\n", path);
    if (fp)
      fclose (fp);
    return -1;
  }
  return 0;
}

static int
write_config (const struct vm *vm, const char *tree, const char *plugin)
{
  char path[PATH_MAX + 64], text[1024];

  snprintf (path, sizeof path, "%s/lbvm", tree);
  if (mkdir (path, 0755) == -1 && errno != EEXIST) {
    fprintf (stderr, VM_PROG ": mkdir %s: %m\n", path);
    return -1;
  }
  snprintf (text, sizeof text,
            "LBVM_ATTACH=%s\nLBVM_DISKS=%u\nLBVM_CONNECTIONS=%u\n"
            "LBVM_LOGICAL=%u\nLBVM_PHYSICAL=%u\n%s%s%s",
            vm->opt.attach, vm->opt.disks, vm->opt.connections, vm->logical,
            vm->physical, plugin ? "export LARGEBLOCK_PLUGIN=" : "",
            plugin ? plugin : "", plugin ? "\n" : "");
  snprintf (path, sizeof path, "%s/lbvm/config", tree);
  if (write_file (path, text) == -1)
    return -1;
  snprintf (path, sizeof path, "%s/lbvm/command", tree);
  return write_file (path, vm->opt.command);
}

/* The plugin's shared object, so largeblock-run works in the guest. */
static bool
find_plugin (const struct vm *vm, char *path, size_t len)
{
  if (strchr (vm->opt.plugin, '/'))
    snprintf (path, len, "%s", vm->opt.plugin);
  else
    snprintf (path, len, "%s/nbdkit-%s-plugin.so", LARGEBLOCK_PLUGINDIR,
              vm->opt.plugin);
  return access (path, R_OK) == 0;
}

/* "SRC=DEST" arguments for the helper, in files[] (strings owned by
 * the caller's store): the tools, then "--" and the project's own
 * programs and plugin, which change with every build (the helper packs
 * them apart from the tools, which it keeps in its cache).
 */
static int
list_guest_files (const struct vm *vm, char store[][2 * PATH_MAX + 2],
                  char **files, bool *have_plugin)
{
  char path[PATH_MAX];
  int n = 0;

  for (int i = 0; guest_tools[i] && n < MAX_FILES - 5; i++)
    if (find_in_path (guest_tools[i], path, sizeof path)) {
      snprintf (store[n], sizeof store[n], "%s", path);
      files[n] = store[n];
      n++;
    }
  files[n++] = "--";
  for (int i = 0; own_programs[i]; i++) {
    if (vm_find_own_file (own_programs[i], path, sizeof path) == -1 &&
        !find_in_path (own_programs[i], path, sizeof path))
      continue;
    snprintf (store[n], sizeof store[n], "%s=/usr/local/bin/%s", path,
              own_programs[i]);
    files[n] = store[n];
    n++;
  }
  *have_plugin = find_plugin (vm, path, sizeof path);
  if (*have_plugin) {
    snprintf (store[n], sizeof store[n],
              "%s=/usr/local/lib/nbdkit-largeblock-plugin.so", path);
    files[n] = store[n];
    n++;
  }
  files[n] = NULL;
  return n;
}

static int
check_attach_tools (const struct vm *vm)
{
  char path[PATH_MAX];
  const char *need[] = { "bash", "socat", "nbd-client" };
  int needed = strcmp (vm->opt.attach, "nbd") == 0 ? 3 : 1;

  for (int i = 0; i < needed; i++)
    if (!find_in_path (need[i], path, sizeof path)) {
      fprintf (stderr,
               VM_PROG ": %s is needed in the guest and was not found "
                       "(apt-get install %s)\n",
               need[i], need[i]);
      return -1;
    }
  return 0;
}

int
vm_build_initramfs (struct vm *vm)
{
  static char store[MAX_FILES][2 * PATH_MAX + 2];
  char *files[MAX_FILES], tree[PATH_MAX], init[PATH_MAX], cache[PATH_MAX];
  char *args[8 + MAX_FILES];
  bool have_plugin;
  int n = 0, nfiles;

  if (check_attach_tools (vm) == -1)
    return -1;
  if (vm_find_own_file ("largeblock-vm-init", init, sizeof init) == -1) {
    fprintf (stderr, VM_PROG ": cannot find largeblock-vm-init in %s\n",
             LARGEBLOCK_PKGLIBEXECDIR);
    return -1;
  }
  snprintf (tree, sizeof tree, "%s/tree", vm->workdir);
  snprintf (vm->initrd, sizeof vm->initrd, "%s/initrd", vm->workdir);
  if (mkdir (tree, 0755) == -1) {
    fprintf (stderr, VM_PROG ": mkdir %s: %m\n", tree);
    return -1;
  }
  nfiles = list_guest_files (vm, store, files, &have_plugin);
  if (write_config (vm, tree,
                    have_plugin ? "/usr/local/lib/nbdkit-largeblock-plugin.so"
                                : NULL) == -1)
    return -1;
  args[n++] = "initramfs";
  args[n++] = vm->initrd;
  args[n++] = init;
  args[n++] = vm->moddir[0] ? vm->moddir : "-";
  args[n++] = "virtio_blk,nbd,xfs,loop";
  args[n++] = tree;
  vm_cache_dir (cache, sizeof cache);
  args[n++] = cache;
  for (int i = 0; i < nfiles; i++)
    args[n++] = files[i];
  args[n] = NULL;
  return vm_run_helper (vm, args, NULL, 0);
}
