# SPDX-License-Identifier: BSD-3-Clause
"""Section "kernel": the host's kernel device (kernel_host.py), then the
guest paths (kernel_vm.py).
"""
from .kernel_host import host_kernel_rows, kernel_unavailable
from .kernel_vm import vm_section


def kernel_section(workdir, runtime, reps, quick, progress):
    """The host's kernel device (nbdfuse + loop), then the guest paths
    (largeblock-vm under TCG); either is skipped on its own."""
    why = kernel_unavailable()
    out = ({"skipped": why} if why else
           host_kernel_rows(workdir, runtime, reps, quick, progress))
    out["vm"] = vm_section(workdir, runtime, reps, quick, progress)
    return out
