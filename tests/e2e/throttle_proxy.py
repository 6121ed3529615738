#!/usr/bin/env python3
"""A TCP proxy that slows what a server sends to its clients, for tests that must catch a
download in the middle (tests/e2e/progress_test.sh, bench/controller/progress_writes.sh).

Usage: throttle_proxy.py LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT BYTES_PER_SECOND
Every connection to 127.0.0.1:LISTEN_PORT is relayed to the upstream; what the upstream
sends back shares one token bucket of BYTES_PER_SECOND across all connections (a download
with many parallel requests is as slow as one), what clients send goes through at once.
Prints "listening" once it accepts connections; runs until killed.
"""
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
                if self.tokens >= n:
                    self.tokens -= n
                    return
                wait = (n - self.tokens) / self.rate
            time.sleep(min(wait, 0.5))


def pump(src, dst, bucket):
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            if bucket is not None:
                bucket.take(len(data))
            dst.sendall(data)
    except OSError:
        pass
    finally:
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
    listen_port, host, port, rate = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    bucket = Bucket(rate)
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
