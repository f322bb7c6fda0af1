#!/usr/bin/python3
"""A TCP proxy for the delivery tests: one agent's link to the collector.

    tcp_proxy.py LISTEN_PORT TARGET_HOST:TARGET_PORT [--listen-host H] [--ready FILE]

Forwards every connection to LISTEN_PORT on 127.0.0.1 (or --listen-host) to
the target, byte for byte. The link is cut by stopping the proxy (SIGTERM or
SIGKILL: every connection through it is reset, new ones are refused) and
restored by starting it again on the same port. While running:
  SIGUSR1  black-holes the link: connections stay open (new ones too) but
           nothing is forwarded either way, as when packets are dropped on
           the wire;
  SIGUSR2  restores forwarding (what was held is then delivered).
--ready FILE is written once the port listens. Stdlib only.
"""
import argparse
import selectors
import signal
import socket
import sys


class Proxy:
    def __init__(self, listen_host, listen_port, target):
        self.target = target
        self.sel = selectors.DefaultSelector()
        self.paused = False
        self.peer = {}  # socket -> the socket at the other end
        self.held = {}  # socket -> bytes read but not yet written to its peer
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((listen_host, listen_port))
        self.lsock.listen(64)
        self.lsock.setblocking(False)
        self.sel.register(self.lsock, selectors.EVENT_READ)

    def accept(self):
        client, _ = self.lsock.accept()
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError as e:
            print("tcp_proxy: cannot reach %s:%d: %s" % (self.target + (e,)), file=sys.stderr)
            client.close()
            return
        for s in (client, upstream):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.held[s] = b""
        self.peer[client], self.peer[upstream] = upstream, client
        self.rearm(client)
        self.rearm(upstream)

    def rearm(self, s):
        """Read from s while not paused and its peer keeps up; write what is held for s."""
        events = 0
        if not self.paused and len(self.held[self.peer[s]]) < (1 << 20):
            events |= selectors.EVENT_READ
        if self.held[s] and not self.paused:
            events |= selectors.EVENT_WRITE
        try:
            self.sel.modify(s, events) if events else self.sel.unregister(s)
        except KeyError:
            if events:
                self.sel.register(s, events)
        except ValueError:
            pass

    def close(self, s):
        for x in (s, self.peer.get(s)):
            if x is None or x not in self.held:
                continue
            try:
                self.sel.unregister(x)
            except (KeyError, ValueError):
                pass
            x.close()
            self.held.pop(x, None)
            self.peer.pop(x, None)

    def service(self, s, mask):
        if mask & selectors.EVENT_READ:
            try:
                data = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                data = b""
            if data == b"":
                self.close(s)
                return
            if data:
                self.held[self.peer[s]] += data
        if mask & selectors.EVENT_WRITE and self.held.get(s):
            try:
                n = s.send(self.held[s])
                self.held[s] = self.held[s][n:]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self.close(s)
                return
        if s in self.held:
            self.rearm(s)
            self.rearm(self.peer[s])

    def set_paused(self, paused):
        self.paused = paused
        for s in list(self.held):
            self.rearm(s)

    def run(self):
        while True:
            for key, mask in self.sel.select(timeout=0.5):
                if key.fileobj is self.lsock:
                    self.accept()
                elif key.fileobj in self.held:
                    self.service(key.fileobj, mask)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("listen_port", type=int)
    ap.add_argument("target", help="HOST:PORT")
    ap.add_argument("--listen-host", default="127.0.0.1")
    ap.add_argument("--ready", help="file written once the port listens")
    a = ap.parse_args()
    host, _, port = a.target.rpartition(":")
    if not host or not port.isdigit():
        ap.error("target must be HOST:PORT, got %r" % a.target)
    try:
        proxy = Proxy(a.listen_host, a.listen_port, (host, int(port)))
    except OSError as e:
        print("tcp_proxy: cannot listen on %s:%d: %s" % (a.listen_host, a.listen_port, e),
              file=sys.stderr)
        return 1
    signal.signal(signal.SIGUSR1, lambda *_: proxy.set_paused(True))
    signal.signal(signal.SIGUSR2, lambda *_: proxy.set_paused(False))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if a.ready:
        with open(a.ready, "w") as f:
            f.write("%d\n" % a.listen_port)
    try:
        proxy.run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
