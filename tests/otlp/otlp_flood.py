#!/usr/bin/env python3
"""otlp_flood.py: OTLP/protobuf request bodies built by hand (the wire format, no protobuf
library) and a flood of junk span names over many service names, sent from many loopback
peer addresses. Used by test_otlp_security.py, and on its own to measure dqd's memory
under the flood (docs/otlp.md, "The name budget"):

    python3 tests/otlp/otlp_flood.py PORT NAMES SERVICES [PEERS]

posts NAMES spans, each a new span name, spread over SERVICES service names, from PEERS
source addresses (127.0.0.2 on), and prints what dqd answered as one JSON line."""
import http.client
import json
import os
import struct
import sys
import time


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    """A length-delimited field."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def fixed64(num, v):
    return varint(num << 3 | 1) + struct.pack("<Q", v)


def span(name, i, start_ns, end_ns, attrs=b"", trace=None, parent=None):
    """A Span: span id from i, trace id from trace (else i), the parent's span id from
    parent (an i, or none), name as bytes (any bytes)."""
    t = i if trace is None else trace
    p = b"" if parent is None else field(4, struct.pack(">Q", parent + 1))
    return (field(1, struct.pack(">QQ", 1, t + 1)) + field(2, struct.pack(">Q", i + 1)) + p +
            field(5, name) + fixed64(7, start_ns) + fixed64(8, end_ns) + attrs)


def attribute(key, value):
    return field(1, key) + field(2, field(1, value))


def resource_spans(service, spans):
    """A ResourceSpans of service (bytes) with the encoded spans."""
    res = field(1, attribute(b"service.name", service))
    return field(1, res) + field(2, b"".join(field(2, s) for s in spans))


def request(groups):
    """An ExportTraceServiceRequest of (service, [span bytes]) groups."""
    return b"".join(field(1, resource_spans(svc, spans)) for svc, spans in groups)


def post(port, body, source="127.0.0.1", headers=None, host=None):
    """(status, headers, body) of POST /v1/traces from source."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                      source_address=(source, 0))
    h = {"Content-Type": "application/x-protobuf"}
    h.update(headers or {})
    if host:
        conn.putrequest("POST", "/v1/traces", skip_host=True)
        conn.putheader("Host", host)
        for k, v in h.items():
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
    else:
        conn.request("POST", "/v1/traces", body=body, headers=h)
    r = conn.getresponse()
    out = r.status, dict(r.getheaders()), r.read()
    conn.close()
    return out


def partial(body):
    """(rejected_spans, error_message) of an ExportTraceServiceResponse, (0, "") if none."""
    def fields(b):
        i = 0
        while i < len(b):
            tag, i = read_varint(b, i)
            wt = tag & 7
            if wt == 0:
                v, i = read_varint(b, i)
                yield tag >> 3, v
            elif wt == 2:
                n, i = read_varint(b, i)
                yield tag >> 3, b[i:i + n]
                i += n
            else:
                return
    for num, ps in fields(body):
        if num == 1:
            rej, msg = 0, ""
            for k, v in fields(ps):
                if k == 1:
                    rej = v
                elif k == 2:
                    msg = v.decode("utf-8", "replace")
            return rej, msg
    return 0, ""


def read_varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i


_VARINT = [varint(v) for v in range(1 << 14)]  # the lengths of flood_request's fields


def flood_request(prefix, first, n, services, start_ns, end_ns):
    """The request flood() posts: spans first…first+n-1, span j named PREFIX_%07d (j) in
    service PREFIX-svc-%05d (j % services); the same bytes as request() of those groups,
    built from preformatted parts (span() for each took 25 CPU-s a million spans, most of
    otlp_security's CPU in make test)."""
    def vlen(b):
        return _VARINT[len(b)] if len(b) < len(_VARINT) else varint(len(b))
    times = fixed64(7, start_ns) + fixed64(8, end_ns)
    head = struct.Struct(">2sQQ2sQ")
    groups = {}
    for j in range(first, first + n):
        name = b"%s_%07d" % (prefix, j)
        body = b"".join((head.pack(b"\x0a\x10", 1, j + 1, b"\x12\x08", j + 1), b"\x2a",
                         vlen(name), name, times))
        spans = groups.get(j % services)
        if spans is None:
            spans = groups[j % services] = []
        spans.append(b"\x12" + vlen(body) + body)
    out = []
    for s, spans in groups.items():
        svc = b"%s-svc-%05d" % (prefix, s)
        value = b"\x0a" + vlen(svc) + svc
        attr = b"\x0a\x0cservice.name\x12" + vlen(value) + value
        res = b"\x0a" + vlen(attr) + attr
        scope = b"".join(spans)
        rs = b"".join((b"\x0a", vlen(res), res, b"\x12", vlen(scope), scope))
        out.append(b"\x0a" + vlen(rs) + rs)
    return b"".join(out)


def flood(port, names, services, peers, per_request=5000, prefix="junk"):
    """Posts `names` spans, each a new name, over `services` services from `peers` source
    addresses; returns the totals of the answers."""
    now = time.time_ns()
    sent = rejected = requests = 0
    statuses = {}
    k = 0
    while k < names:
        n = min(per_request, names - k)
        body = flood_request(prefix.encode(), k, n, services, now - 2000000, now - 1000000)
        source = "127.0.0.%d" % (2 + requests % peers)
        st, _, answer = post(port, body, source=source)
        statuses[st] = statuses.get(st, 0) + 1
        if st == 200:
            rejected += partial(answer)[0]
        sent += n
        k += n
        requests += 1
    return {"sent": sent, "rejected": rejected, "requests": requests,
            "statuses": {str(s): c for s, c in statuses.items()}}


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    port, names, services = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    peers = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    t0 = time.time()
    res = flood(port, names, services, peers)
    res["seconds"] = round(time.time() - t0, 2)
    print(json.dumps(res))
    sys.stdout.flush()
    os._exit(0)
