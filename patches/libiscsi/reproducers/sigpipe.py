"""A target that resets the connection between a PDU's header and its data
kills a libiscsi application with SIGPIPE.

    python3 sigpipe.py [--ignore-sigpipe] [--libdir DIR]

Builds write_client.c (one WRITE(10) with immediate data through libiscsi)
and slow_payload.c (an LD_PRELOAD that delays writev()/sendmsg(), the
calls that send a PDU's data, by 300 ms: a preempted client), then serves
the client's login from a minimal target on 127.0.0.1 that, on the SCSI
command's header, sends FIN and then RST, as a target dropping a
connection at ERL 0 does when the client's data is already on its way.

Exit 1: the client was killed by SIGPIPE (libiscsi wrote the data with
writev(), which raises it on a reset connection). Exit 0: the client saw
the write fail and returned. --libdir runs the client against the
libiscsi.so.7 in DIR (a patched build); --ignore-sigpipe runs it with
SIGPIPE ignored, as an application may choose to.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
IQN = "iqn.2026-11.org.cxgbit-ext:sigpipe"
LOGIN_REQ, LOGIN_RSP, SCSI_CMD = 0x03, 0x23, 0x01
TARGET_KEYS = {
    "HeaderDigest": "None", "DataDigest": "None", "InitialR2T": "Yes", "ImmediateData": "Yes",
    "MaxBurstLength": "262144", "FirstBurstLength": "65536", "DefaultTime2Wait": "2",
    "DefaultTime2Retain": "0", "MaxOutstandingR2T": "1", "DataPDUInOrder": "Yes",
    "DataSequenceInOrder": "Yes", "ErrorRecoveryLevel": "0", "MaxConnections": "1",
}  # fmt: skip


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the client closed the connection")
        buf += chunk
    return buf


def recv_rest(s: socket.socket, bhs: bytes) -> bytes:
    """The data segment of the PDU whose header is ``bhs``."""
    dlen = int.from_bytes(bhs[5:8], "big")
    return recv_exact(s, bhs[4] * 4 + (dlen + 3) // 4 * 4)[bhs[4] * 4 :][:dlen]


def login_response(req: bytes, data: bytes, statsn: int) -> bytes:
    flags, itt, cmdsn = req[1], req[16:20], int.from_bytes(req[24:28], "big")
    csg, nsg, final = (flags >> 2) & 3, flags & 3, flags & 0x80
    keys = dict(kv.split("=", 1) for kv in data.decode().split("\0") if "=" in kv)
    if csg == 0:
        answer = {"AuthMethod": "None"} if "AuthMethod" in keys else {}
    else:
        answer = {k: TARGET_KEYS[k] for k in keys if k in TARGET_KEYS}
        answer["MaxRecvDataSegmentLength"] = "262144"
    body = b"".join(f"{k}={v}\0".encode() for k, v in answer.items())
    tsih = b"\x00\x01" if final and nsg == 3 else b"\x00\x00"
    bhs = struct.pack(">BBBBB3s6s2s4s4xIII2B10x", LOGIN_RSP, final | (csg << 2) | nsg, 0, 0, 0,
                      len(body).to_bytes(3, "big"), req[8:14], tsih, itt, statsn, cmdsn, cmdsn + 16, 0, 0)  # fmt: skip
    return bhs + body + b"\0" * (-len(body) % 4)


def serve(listener: socket.socket, seen: list[str]) -> None:
    conn, _ = listener.accept()
    statsn = 1
    while True:
        bhs = recv_exact(conn, 48)
        op = bhs[0] & 0x3F
        if op == LOGIN_REQ:
            conn.sendall(login_response(bhs, recv_rest(conn, bhs), statsn))
            statsn += 1
        elif op == SCSI_CMD:
            seen.append("SCSI command header")
            # drop the connection on the header, its data still to come:
            # FIN, then RST (unread data, or none, alike)
            conn.shutdown(socket.SHUT_WR)
            time.sleep(0.05)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            return


def build(tmp: Path) -> tuple[Path, Path]:
    client, shim = tmp / "write_client", tmp / "slow_payload.so"
    subprocess.run(["gcc", "-O2", "-Wall", "-o", str(client), str(HERE / "write_client.c"), "-l:libiscsi.so.7"],
                   check=True)  # fmt: skip
    subprocess.run(["gcc", "-O2", "-Wall", "-shared", "-fPIC", "-o", str(shim), str(HERE / "slow_payload.c"), "-ldl"],
                   check=True)  # fmt: skip
    return client, shim


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ignore-sigpipe", action="store_true", help="run the client with SIGPIPE ignored")
    ap.add_argument("--libdir", type=Path, help="a directory holding the libiscsi.so.7 to run against")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as t, socket.socket() as listener:
        client, shim = build(Path(t))
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        seen: list[str] = []
        server = threading.Thread(target=serve, args=(listener, seen), daemon=True)
        server.start()
        env = dict(os.environ, LD_PRELOAD=str(shim), SLOW_PAYLOAD_MS="300")
        if args.libdir:
            env["LD_LIBRARY_PATH"] = str(args.libdir)
        port = listener.getsockname()[1]
        p = subprocess.run([str(client), f"127.0.0.1:{port}", IQN], env=env, capture_output=True, text=True,
                           timeout=30, restore_signals=not args.ignore_sigpipe)  # fmt: skip
        server.join(timeout=10)
    print(f"target: {', '.join(seen) or 'no SCSI command'}; client: {p.stdout.strip()} {p.stderr.strip()}".rstrip())
    if p.returncode == -13:
        print("client killed by SIGPIPE: libiscsi wrote the PDU's data to the reset connection with writev()")
        return 1
    if p.returncode == 0 and seen:
        print("client survived the reset connection")
        return 0
    print(f"client exited {p.returncode}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
