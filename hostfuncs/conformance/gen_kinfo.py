#!/usr/bin/env python3
"""Build or read the raw macOS struct kinfo_proc bytes used by the darwin cases.

The cases answer `sysctl <pid>` with {"data": "<base64>"}: 648 bytes laid out
as on darwin/amd64 and darwin/arm64 (LP64, little-endian; KinfoProc in
golang.org/x/sys/unix, procid/darwin.go). Only these fields are set,
every other byte is zero:

    offset  type      field
    0       int64     kp_proc.p_starttime.tv_sec
    8       int32     kp_proc.p_starttime.tv_usec
    36      int8      kp_proc.p_stat (2 SRUN, 5 SZOMB)
    40      int32     kp_proc.p_pid
    243     char[17]  kp_proc.p_comm (NUL-terminated)
    560     int32     kp_eproc.e_ppid

Usage:
    gen_kinfo.py PID PPID COMM SEC USEC [STAT]   print the base64 of one record
    gen_kinfo.py -d BASE64                       decode a record (to review a case)
"""
import base64
import struct
import sys

SIZE = 648


def build(pid, ppid, comm, sec, usec, stat=2):
    """Return the base64 of a kinfo_proc with these fields."""
    b = bytearray(SIZE)
    struct.pack_into("<q", b, 0, sec)
    struct.pack_into("<i", b, 8, usec)
    struct.pack_into("<b", b, 36, stat)
    struct.pack_into("<i", b, 40, pid)
    name = comm.encode()[:16]
    b[243:243 + len(name)] = name
    struct.pack_into("<i", b, 560, ppid)
    return base64.b64encode(bytes(b)).decode()


def decode(data):
    """Return the fields of a base64 kinfo_proc as a dict."""
    b = base64.b64decode(data)
    assert len(b) == SIZE, len(b)
    return {
        "sec": struct.unpack_from("<q", b, 0)[0],
        "usec": struct.unpack_from("<i", b, 8)[0],
        "stat": struct.unpack_from("<b", b, 36)[0],
        "pid": struct.unpack_from("<i", b, 40)[0],
        "comm": b[243:260].split(b"\0", 1)[0].decode(),
        "ppid": struct.unpack_from("<i", b, 560)[0],
    }


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "-d":
        print(decode(sys.argv[2]))
    elif len(sys.argv) in (6, 7):
        a = sys.argv[1:]
        print(build(int(a[0]), int(a[1]), a[2], int(a[3]), int(a[4]), *(int(x) for x in a[5:])))
    else:
        sys.exit(__doc__)
