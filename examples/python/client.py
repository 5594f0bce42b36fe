#!/usr/bin/env python3
"""A small client for a kspool agent's kspool.v1.Spool service.

    client.py [--agent HOST:PORT] send --topic T [--key K] [--wait kafka|wal] VALUE...
    client.py [--agent HOST:PORT] watch --from SEQ [--count N]

`send` sends one request (one message per VALUE). With --wait kafka (the default here)
the agent answers once every message is in Kafka or discarded, and this prints, per
message, its sequence number, state, partition and offset. A Send refused with
RESOURCE_EXHAUSTED (WAL full) or UNAVAILABLE (WAL I/O error) is tried again after the
`retry-after-ms` the agent puts in the trailing metadata (capped by --retry-cap-ms), at
most --max-attempts times in all. If the deadline (--timeout-s) passes after the agent
accepted the messages, it prints their sequence numbers (trailing metadata
`kspool-sequences`) and exits with 5: they will be delivered; ask later.

`watch` follows WatchDeliveries from a sequence number: every outcome in sequence order.
When the agent goes away (UNAVAILABLE), it reconnects from the last sequence seen + 1,
so it misses nothing and sees nothing twice.

Output, one line per status on stdout:
    seq=5 state=DELIVERED topic=orders partition=1 offset=42
Retries and reconnects are reported on stderr ("retry: ...", "reconnect: ...").
Exit codes: 0 ok; 1 error; 2 usage; 5 accepted but not confirmed before the deadline.

The stubs are generated from proto/ by gen_stubs.sh into gen/ beside this file (or
--stubs DIR, or $KSPOOL_PY_STUBS); see README.md.
"""
import argparse
import os
import sys
import time

import grpc

# Codes after which a Send may be tried again. RESOURCE_EXHAUSTED: nothing was written.
# UNAVAILABLE: maybe it was (a failed fsync's bytes can still reach Kafka), so a retry can
# create a duplicate: give messages an id of your own when that matters.
RETRYABLE = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)
EXIT_NOT_CONFIRMED = 5

pb = None  # kspool.v1.spool_pb2, set by load_stubs()
pb_grpc = None  # kspool.v1.spool_pb2_grpc


def load_stubs(stubs_dir):
    """Imports the generated modules from stubs_dir (which holds kspool/v1/)."""
    global pb, pb_grpc
    if not os.path.isfile(os.path.join(stubs_dir, "kspool", "v1", "spool_pb2.py")):
        sys.exit(f"client.py: no stubs in {stubs_dir}: run gen_stubs.sh {stubs_dir}")
    sys.path.insert(0, stubs_dir)
    from kspool.v1 import spool_pb2, spool_pb2_grpc  # noqa: E402 (generated)
    pb, pb_grpc = spool_pb2, spool_pb2_grpc


def log(line):
    print(line, file=sys.stderr, flush=True)


def trailer(err, key):
    """A trailing metadata value of a failed call, or None."""
    for md in err.trailing_metadata() or ():
        if md[0] == key:
            return md[1]
    return None


def retry_after_ms(err):
    value = trailer(err, "retry-after-ms")
    try:
        return max(0, int(value)) if value is not None else None
    except ValueError:
        return None


def send_with_retry(stub, request, timeout_s, max_attempts, cap_ms, backoff_ms=100):
    """Send, tried again on RESOURCE_EXHAUSTED/UNAVAILABLE after the agent's
    retry-after-ms (or an exponential backoff when it gives none), each wait at most
    cap_ms, at most max_attempts calls in all. Raises the last grpc.RpcError, at once
    when it carries kspool-sequences (the messages were accepted)."""
    for attempt in range(1, max_attempts + 1):
        try:
            return stub.Send(request, timeout=timeout_s)
        except grpc.RpcError as err:
            # kspool-sequences: the messages are durable (a WAIT_FOR_KAFKA call the agent
            # ended early, at its deadline or its shutdown): sending again would duplicate.
            durable = trailer(err, "kspool-sequences") is not None
            if err.code() not in RETRYABLE or durable or attempt == max_attempts:
                raise
            hint = retry_after_ms(err)
            wait_ms = min(hint if hint is not None else backoff_ms, cap_ms)
            backoff_ms = min(backoff_ms * 2, cap_ms)
            log(f"retry: {err.code().name} on attempt {attempt}/{max_attempts}: "
                f"retry-after-ms={hint if hint is not None else 'none'}, waiting {wait_ms} ms")
            time.sleep(wait_ms / 1000)
    raise AssertionError("unreachable")


def follow_deliveries(stub, from_sequence, max_reconnects, cap_ms):
    """Yields every DeliveryStatus from from_sequence on, in order. On UNAVAILABLE it
    calls again from the last sequence seen + 1, after a backoff; max_reconnects
    failures in a row without a status in between end it (the error is raised)."""
    next_seq = from_sequence
    failures = 0
    backoff_ms = 100
    while True:
        call = stub.WatchDeliveries(pb.WatchDeliveriesRequest(from_sequence=next_seq))
        try:
            for status in call:
                failures, backoff_ms = 0, 100
                next_seq = status.sequence + 1
                yield status
            return  # the agent ended the feed with OK
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.UNAVAILABLE or failures >= max_reconnects:
                raise
            failures += 1
            log(f"reconnect: {err.code().name} ({err.details()}); resuming from {next_seq} "
                f"in {backoff_ms} ms")
            time.sleep(backoff_ms / 1000)
            backoff_ms = min(backoff_ms * 2, cap_ms)
        finally:
            call.cancel()  # a consumer that stops early ends the call


def status_line(d):
    state = pb.DeliveryStatus.State.Name(d.state)
    line = f"seq={d.sequence} state={state}"
    if d.topic:
        line += f" topic={d.topic}"
    if d.state == pb.DeliveryStatus.DELIVERED:
        line += f" partition={d.partition} offset={d.offset}"
    if d.discard_reason:
        line += f" reason={d.discard_reason}"
    if d.error:
        line += f" error={d.error!r}"
    return line


def cmd_send(stub, args):
    request = pb.SendRequest(
        wait_for=pb.WAIT_FOR_KAFKA if args.wait == "kafka" else pb.WAIT_FOR_WAL)
    for value in args.values:
        m = request.messages.add(topic=args.topic, value=value.encode())
        if args.key is not None:
            m.key = args.key.encode()
    try:
        response = send_with_retry(stub, request, args.timeout_s, args.max_attempts,
                                   args.retry_cap_ms)
    except grpc.RpcError as err:
        sequences = trailer(err, "kspool-sequences")
        log(f"client.py: Send: {err.code().name}: {err.details()}")
        if sequences:
            print(f"accepted sequences={sequences} confirmed=false", flush=True)
            return EXIT_NOT_CONFIRMED
        return 1
    if args.wait == "kafka":
        if len(response.deliveries) != len(response.sequence):
            # An agent from before WAIT_FOR_KAFKA ignores the field and answers at the WAL.
            log(f"client.py: the agent accepted sequences {list(response.sequence)} but sent no "
                "outcomes: it does not support WAIT_FOR_KAFKA")
            return 1
        for d in response.deliveries:
            print(status_line(d), flush=True)
    else:
        for seq in response.sequence:
            print(f"seq={seq} state=ACCEPTED", flush=True)
    return 0


def cmd_watch(stub, args):
    seen = 0
    try:
        for d in follow_deliveries(stub, args.from_sequence, args.max_reconnects,
                                   args.retry_cap_ms):
            print(status_line(d), flush=True)
            seen += 1
            if args.count and seen >= args.count:
                return 0
    except grpc.RpcError as err:
        if err.code() == grpc.StatusCode.OUT_OF_RANGE:
            log(f"client.py: the agent no longer keeps these outcomes: {err.details()}")
        else:
            log(f"client.py: WatchDeliveries: {err.code().name}: {err.details()}")
        return 1
    except KeyboardInterrupt:
        return 0
    log("client.py: the agent ended the feed")
    return 1


def whole(minimum):
    """An argparse type: a decimal integer of at least `minimum`."""
    def parse(text):
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number >= {minimum}")
        return int(text)
    return parse


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agent", default="127.0.0.1:7411", help="agent gRPC address")
    p.add_argument("--stubs", default=os.environ.get("KSPOOL_PY_STUBS", os.path.join(here, "gen")),
                   help="directory with the generated kspool/v1 stubs")
    p.add_argument("--retry-cap-ms", type=whole(0), default=10000,
                   help="longest wait between two attempts (retry-after-ms is capped to it)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("send", help="send one request and print each message's outcome")
    s.add_argument("--topic", required=True)
    s.add_argument("--key")
    s.add_argument("--wait", choices=("kafka", "wal"), default="kafka")
    s.add_argument("--timeout-s", type=float, default=30.0, help="deadline of each attempt")
    s.add_argument("--max-attempts", type=whole(1), default=8, help="Send calls at most, in all")
    s.add_argument("values", nargs="+", metavar="VALUE")
    w = sub.add_parser("watch", help="follow WatchDeliveries, reconnecting on UNAVAILABLE")
    w.add_argument("--from", dest="from_sequence", type=whole(0), required=True)
    w.add_argument("--count", type=whole(0), default=0, help="stop after this many (0: never)")
    w.add_argument("--max-reconnects", type=whole(0), default=30,
                   help="failed reconnects in a row before giving up")
    args = p.parse_args(argv)
    load_stubs(args.stubs)
    # Reconnect within a second or two after an agent restart (gRPC's default backoff
    # grows to two minutes).
    options = [("grpc.initial_reconnect_backoff_ms", 200), ("grpc.max_reconnect_backoff_ms", 2000)]
    with grpc.insecure_channel(args.agent, options=options) as channel:
        stub = pb_grpc.SpoolStub(channel)
        return cmd_send(stub, args) if args.command == "send" else cmd_watch(stub, args)


if __name__ == "__main__":
    sys.exit(main())
