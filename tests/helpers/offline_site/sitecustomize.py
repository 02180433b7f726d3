"""Loaded by every Python process whose PYTHONPATH starts with this folder (tests/helpers/offline.py):
each attempt to reach another host -- a name lookup or a connection to an address outside the
loopback range -- is appended to the file named by YOLOPROF_TEST_NET_LOG and then refused, so a
test sees every download a library tried, even one the library catches and hides.
"""

from __future__ import annotations

import os
import socket

_LOG = os.environ.get("YOLOPROF_TEST_NET_LOG")
_LOCAL = ("localhost", "127.", "::1", "0.0.0.0", "")


def _refuse(what: str, target: object) -> None:
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as fh:
            fh.write(f"{what} {target!r}\n")
    raise OSError(f"network access refused by the test ({what} {target!r})")


def _is_local(host: object) -> bool:
    return isinstance(host, str) and (host.startswith(_LOCAL[1]) or host in _LOCAL)


def _install() -> None:
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not _is_local(host.decode() if isinstance(host, bytes) else host):
            _refuse("lookup", host)
        return real_getaddrinfo(host, *args, **kwargs)

    def _remote(address: object) -> bool:
        return isinstance(address, tuple) and not _is_local(address[0])

    def connect(self, address):  # type: ignore[no-untyped-def]
        if _remote(address):
            _refuse("connect", address)
        return real_connect(self, address)

    def connect_ex(self, address):  # type: ignore[no-untyped-def]
        if _remote(address):
            _refuse("connect", address)
        return real_connect_ex(self, address)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]


if _LOG:
    _install()
