"""deny_unshare.py PROGRAM [ARGS...]: runs PROGRAM where unshare(2) fails with EPERM.

A seccomp filter, as a container runtime's default profile installs (Docker's refuses
unshare to a process without CAP_SYS_ADMIN), so the e2e tests see a real refusal of every
namespace, inherited by everything PROGRAM starts. x86_64 and aarch64; Linux only.
"""
import ctypes
import os
import platform
import struct
import sys

# <linux/filter.h>, <linux/seccomp.h>, <linux/audit.h>
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_RET_K = 0x06
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
ARCHES = {"x86_64": (0xC000003E, 272), "aarch64": (0xC00000B7, 97)}


def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: deny_unshare.py PROGRAM [ARGS...]")
    machine = platform.machine()
    if machine not in ARCHES:
        sys.exit(f"deny_unshare.py: no syscall table for {machine}")
    audit_arch, nr_unshare = ARCHES[machine]
    prog = b"".join([
        insn(BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        insn(BPF_JEQ_K, 1, 0, audit_arch),
        insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),  # another ABI: left alone
        insn(BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        insn(BPF_JEQ_K, 0, 1, nr_unshare),
        insn(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM),
        insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ])
    buf = ctypes.create_string_buffer(prog)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        sys.exit(f"deny_unshare.py: PR_SET_NO_NEW_PRIVS: {os.strerror(ctypes.get_errno())}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        sys.exit(f"deny_unshare.py: PR_SET_SECCOMP: {os.strerror(ctypes.get_errno())}")
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
