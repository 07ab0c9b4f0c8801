#!/usr/bin/env python3
"""A kazoo peer for zk-queue's interop tests: kazoo's own Queue and
LockingQueue (kazoo.recipe.queue) on a real ZooKeeper server.

    kazoo_peer.py <mode> <connect> <path> [args...]

Modes (every line printed is one JSON object; data is UTF-8 text):
  put <queue|locking>         put each stdin line "<priority> <data>", in order;
                              prints {"put": data, "priority": p} per item
  get <queue>                 Queue.get() until it returns None;
                              prints {"data": data} per item
  consume <count> <timeout>   LockingQueue: get(timeout) then consume(), count
                              times; prints {"data": data, "name": entry} per
                              item, {"none": true} when a get timed out (then stops)
  hold <timeout>              LockingQueue: get(timeout) and keep the lock;
                              prints {"held": data, "name": entry} (or
                              {"none": true}), then does each stdin line:
                              "release", "consume" or "holds" (prints
                              {"holds": bool}); exits at end of input

With PEER_WAIT_GO=1 in the environment, the get and consume modes start
only once a "go" line comes on stdin (after {"ready": true}), so that several
peers start together.

The whole run ends with exit code 3 after PEER_TIMEOUT seconds (env, default 60),
so a stuck peer never outlives its test.
"""
import json
import os
import signal
import sys

from kazoo.client import KazooClient
from kazoo.recipe.queue import LockingQueue, Queue

EXIT_TIMEOUT = 3


def emit(obj):
    print(json.dumps(obj), flush=True)


def on_alarm(signum, frame):
    sys.stderr.write("kazoo_peer: whole-run timeout\n")
    os._exit(EXIT_TIMEOUT)


def put(client, path, kind):
    queue = Queue(client, path) if kind == "queue" else LockingQueue(client, path)
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        priority, data = line.split(" ", 1)
        queue.put(data.encode("utf-8"), priority=int(priority))
        emit({"put": data, "priority": int(priority)})


def get(client, path):
    queue = Queue(client, path)
    while True:
        data = queue.get()
        if data is None:
            return
        emit({"data": data.decode("utf-8")})


def consume(client, path, count, timeout):
    queue = LockingQueue(client, path)
    for _ in range(count):
        data = queue.get(timeout)
        if data is None:
            emit({"none": True})
            return
        name = queue.processing_element[0]
        if not queue.consume():
            raise SystemExit("kazoo_peer: consume() of %s failed" % name)
        emit({"data": data.decode("utf-8"), "name": name})


def hold(client, path, timeout):
    queue = LockingQueue(client, path)
    data = queue.get(timeout)
    if data is None:
        emit({"none": True})
        return
    emit({"held": data.decode("utf-8"), "name": queue.processing_element[0]})
    for line in sys.stdin:
        command = line.strip()
        if command == "release":
            emit({"released": queue.release()})
        elif command == "consume":
            emit({"consumed": queue.consume()})
        elif command == "holds":
            emit({"holds": queue.holds_lock()})
        elif command:
            raise SystemExit("kazoo_peer: unknown command %r" % command)


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(os.environ.get("PEER_TIMEOUT", "60")))
    mode, connect, path, args = argv[1], argv[2], argv[3], argv[4:]
    client = KazooClient(hosts=connect, timeout=10.0)
    client.start(timeout=15)
    emit({"ready": True})
    if os.environ.get("PEER_WAIT_GO") == "1" and mode in ("get", "consume"):
        if sys.stdin.readline().strip() != "go":
            raise SystemExit("kazoo_peer: expected a go line")
    try:
        if mode == "put":
            put(client, path, args[0])
        elif mode == "get":
            get(client, path)
        elif mode == "consume":
            consume(client, path, int(args[0]), float(args[1]))
        elif mode == "hold":
            hold(client, path, float(args[0]))
        else:
            raise SystemExit("kazoo_peer: unknown mode %r" % mode)
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    main(sys.argv)
