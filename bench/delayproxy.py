#!/usr/bin/env python3
"""A loopback TCP proxy that adds a fixed network latency, for make bench-wan.

    delayproxy.py --rtt-ms MS --map PORTFILE=TARGETPORT [--map ...]

For each --map it listens on a free port of 127.0.0.1 (written to PORTFILE,
atomically) and forwards every connection to 127.0.0.1:TARGETPORT, as a
network with round-trip time MS would carry it:
  - a new connection costs one round trip before the first byte moves (the
    TCP handshake; the client's connect() returns at once, but nothing it
    sends arrives earlier);
  - every chunk of bytes, in either direction, arrives MS/2 after it was
    sent (the one-way delay), in order, without waiting for the chunks
    before it (a pipe with latency, not a slow link: no bandwidth limit).
So one HTTP request and its answer cost one round trip, a new connection
one more; TLS is passed through untouched (its handshake then costs its own
round trips). Python 3 standard library only; stops on SIGTERM.
"""
import argparse
import asyncio
import os
import signal

ap = argparse.ArgumentParser()
ap.add_argument("--rtt-ms", type=float, required=True)
ap.add_argument("--map", action="append", required=True, metavar="PORTFILE=TARGETPORT")
args = ap.parse_args()
ONE_WAY = args.rtt_ms / 2000.0
IN_FLIGHT_MAX = 32 << 20   # bytes on their way in one direction: reading pauses


class Side(asyncio.Protocol):
    """One end of a proxied connection: what it receives reaches its peer
    ONE_WAY later (never before START)."""

    def __init__(self, start):
        self.loop = asyncio.get_running_loop()
        self.start = start
        self.transport = None
        self.peer = None
        self.held = []          # delivered before the peer was connected
        self.in_flight = 0
        self.paused = False
        self.eof = False

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        when = max(self.loop.time() + ONE_WAY, self.start)
        self.in_flight += len(data)
        if self.in_flight > IN_FLIGHT_MAX and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        self.loop.call_at(when, self.deliver, data)

    def deliver(self, data):
        self.in_flight -= len(data)
        if self.paused and self.in_flight < IN_FLIGHT_MAX // 2:
            self.paused = False
            self.transport.resume_reading()
        if self.peer is None or self.peer.transport is None:
            self.held.append(data)
        elif not self.peer.transport.is_closing():
            self.peer.transport.write(data)

    def eof_received(self):
        when = max(self.loop.time() + ONE_WAY, self.start)
        self.loop.call_at(when, self.deliver_eof)
        return True

    def deliver_eof(self):
        self.eof = True
        if self.peer and self.peer.transport and not self.peer.transport.is_closing():
            if self.peer.transport.can_write_eof():
                self.peer.transport.write_eof()
            else:
                self.peer.transport.close()

    def connection_lost(self, exc):
        when = max(self.loop.time() + ONE_WAY, self.start)
        self.loop.call_at(when, self.close_peer)

    def close_peer(self):
        if self.peer and self.peer.transport:
            self.peer.transport.close()

    def pause_writing(self):
        if self.peer and self.peer.transport:
            self.peer.transport.pause_reading()

    def resume_writing(self):
        if self.peer and self.peer.transport and not self.peer.paused:
            self.peer.transport.resume_reading()


def client_factory(target):
    def make():
        loop = asyncio.get_running_loop()
        client = Side(loop.time() + 2 * ONE_WAY)   # SYN, SYN-ACK

        async def connect():
            try:
                _, server = await loop.create_connection(lambda: Side(client.start),
                                                         "127.0.0.1", target)
            except OSError:
                if client.transport:
                    client.transport.close()
                return
            server.peer, client.peer = client, server
            for data in client.held:
                server.transport.write(data)
            client.held = []
            if client.eof:
                client.deliver_eof()
        loop.create_task(connect())
        return client
    return make


async def main():
    loop = asyncio.get_running_loop()
    servers = []
    for m in args.map:
        portfile, _, target = m.partition("=")
        srv = await loop.create_server(client_factory(int(target)), "127.0.0.1", 0)
        servers.append(srv)
        with open(portfile + ".tmp", "w") as f:
            f.write(str(srv.sockets[0].getsockname()[1]))
        os.rename(portfile + ".tmp", portfile)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


asyncio.run(main())
