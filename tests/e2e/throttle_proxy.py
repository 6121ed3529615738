#!/usr/bin/env python3
"""A TCP proxy that slows what a server sends to its clients, for tests that must catch a
download in the middle (tests/e2e/progress_test.sh, bench/controller/progress_writes.sh).

Usage: throttle_proxy.py LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT BYTES_PER_SECOND [COUNT_FILE]
Every connection to 127.0.0.1:LISTEN_PORT is relayed to the upstream; what the upstream
sends back shares one token bucket of BYTES_PER_SECOND across all connections (a download
with many parallel requests is as slow as one; 0: no limit), what clients send goes through
at once. With COUNT_FILE, the bytes the upstream has sent to clients so far are written there
(rewritten as they pass): what a store served, for tests that count egress.
Prints "listening" once it accepts connections; runs until killed.
"""
import os
import socket
import sys
import threading
import time

CHUNK = 4096


class Bucket:
    """Tokens are bytes; take() blocks until the bytes may go."""

    def __init__(self, rate):
        self.rate = float(rate)
        self.tokens = 0.0
        self.last = time.monotonic()
        self.lock = threading.Lock()

    def take(self, n):
        while True:
            with self.lock:
                now = time.monotonic()
                self.tokens = min(self.rate, self.tokens + (now - self.last) * self.rate)
                self.last = now
                if self.rate <= 0:
                    return
                if self.tokens >= n:
                    self.tokens -= n
                    return
                wait = (n - self.tokens) / self.rate
            time.sleep(min(wait, 0.5))


class Counter:
    """Bytes sent to clients, written to a file at most every 50 ms and at each connection's end."""

    def __init__(self, path):
        self.path = path
        self.total = 0
        self.written = 0.0
        self.lock = threading.Lock()

    def add(self, n, force=False):
        if self.path is None:
            return
        with self.lock:
            self.total += n
            now = time.monotonic()
            if force or now - self.written >= 0.05:
                self.written = now
                tmp = self.path + ".tmp"
                with open(tmp, "w") as f:
                    f.write(f"{self.total}\n")
                os.replace(tmp, self.path)


COUNTER = Counter(None)


def pump(src, dst, bucket):
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            if bucket is not None:
                bucket.take(len(data))
                COUNTER.add(len(data))
            dst.sendall(data)
    except OSError:
        pass
    finally:
        if bucket is not None:
            COUNTER.add(0, force=True)
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client, upstream, bucket):
    try:
        server = socket.create_connection(upstream)
    except OSError:
        client.close()
        return
    up = threading.Thread(target=pump, args=(client, server, None), daemon=True)
    down = threading.Thread(target=pump, args=(server, client, bucket), daemon=True)
    up.start()
    down.start()
    up.join()
    down.join()
    client.close()
    server.close()


def main():
    global COUNTER
    listen_port, host, port, rate = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    bucket = Bucket(rate)
    if len(sys.argv) > 5:
        COUNTER = Counter(sys.argv[5])
        COUNTER.add(0, force=True)
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", listen_port))
    lsock.listen(128)
    print("listening", flush=True)
    while True:
        client, _ = lsock.accept()
        threading.Thread(target=serve, args=(client, (host, port), bucket), daemon=True).start()


if __name__ == "__main__":
    main()
