#!/usr/bin/env python3
"""Sends malformed frames out of eth0 of the namespace it runs in (AF_PACKET, raw).

usage: garbage.py ROUTER_MAC COUNT SEED
Half the frames are IPv4 to the router MAC with a broken header (cut short, bad checksum, bad
version, total length beyond the frame); half are random bytes with random EtherTypes.
"""
import random
import socket
import struct
import sys

router = bytes.fromhex(sys.argv[1].replace(":", ""))
count = int(sys.argv[2])
rng = random.Random(int(sys.argv[3]))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
src = bytes.fromhex(open("/sys/class/net/eth0/address").read().strip().replace(":", ""))
for i in range(count):
    if i % 2 == 0:
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20, 1, 0, 64, 17, 0,
                                   bytes([10, 1, 0, 2]), bytes([10, 1, 1, 3])))
        kind = i // 2 % 4
        if kind == 0:
            ip = ip[: rng.randrange(1, 19)]          # header cut short
        elif kind == 1:
            ip[10:12] = b"\xde\xad"                   # bad checksum
        elif kind == 2:
            ip[0] = 0x65                              # version 6 in an IPv4 EtherType
        else:
            ip[2:4] = struct.pack("!H", 1400)         # total length beyond the frame
        frame = router + src + b"\x08\x00" + bytes(ip)
    else:
        frame = router + src + struct.pack("!H", rng.randrange(0x0600, 0xFFFF)) + \
            bytes(rng.randrange(256) for _ in range(rng.randrange(0, 120)))
    s.send(frame)
print(count)
