#!/usr/bin/env python3
"""Prints a port on 127.0.0.1 nothing listens on, for a process started next to listen on.

The port lies below the kernel's ephemeral range: a port from that range (what binding port
0 gives) can be taken by any outgoing connection's local end before the process binds it.
"""
import random
import socket


def free_port():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(200):
        port = random.randrange(10000, max(low, 11000))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise SystemExit("no free port below the ephemeral range on 127.0.0.1")


if __name__ == "__main__":
    print(free_port())
