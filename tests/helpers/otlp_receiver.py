#!/usr/bin/env python3
"""A small OTLP/HTTP JSON receiver for the traces tests (SPEC §12): no OpenTelemetry Collector
in Debian. Listens on 127.0.0.1 on a free port (written to --port-file once listening), accepts
POST /v1/traces (or --path), checks each export request's shape as OTLP/HTTP JSON defines it
(resourceSpans / scopeSpans / spans; traceId 32 and spanId 16 lower-case hex digits, not all
zeros; times as strings of nanoseconds; attributes as {key, value: {stringValue | intValue}};
links), and appends each span as one JSON line to --spans: its ids, parent, name, kind, times,
attributes flattened to {key: value}, links, and the resource's service.name. A request whose
shape is wrong is answered 400 and its reason appended to --errors, which a test expects empty.
--status answers every request with that status instead (a receiver that refuses); --delay-ms
holds each answer that long after the spans are recorded (a slow receiver), and then finds the
client still connected or says so in --errors (a line in PORT_FILE.answered once it looked). A sender that closes its connection once the
answer is on its way, without reading it, is no error.
"""
import argparse
import json
import re
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")
NANOS = re.compile(r"^[0-9]{1,20}$")


class Bad(Exception):
    pass


def need(cond, why):
    if not cond:
        raise Bad(why)


def check_id(value, pattern, what):
    need(isinstance(value, str) and pattern.match(value) and value.strip("0"),
         f"{what} is not lower-case hex of the right length, not all zeros: {value!r}")


def attributes(items, what):
    need(isinstance(items, list), f"{what}.attributes is not a list")
    out = {}
    for a in items:
        need(isinstance(a, dict) and isinstance(a.get("key"), str), f"{what}: attribute without key")
        v = a.get("value")
        need(isinstance(v, dict) and len(v) == 1, f"{what}: attribute {a['key']} without one value")
        if "stringValue" in v:
            need(isinstance(v["stringValue"], str), f"{what}: {a['key']} stringValue not a string")
            out[a["key"]] = v["stringValue"]
        elif "intValue" in v:
            i = v["intValue"]
            need(isinstance(i, (str, int)) and re.match(r"^-?[0-9]+$", str(i)),
                 f"{what}: {a['key']} intValue not an integer: {i!r}")
            out[a["key"]] = int(i)
        else:
            raise Bad(f"{what}: {a['key']} is neither stringValue nor intValue: {v!r}")
    return out


def spans_of(body):
    need(isinstance(body, dict) and isinstance(body.get("resourceSpans"), list),
         "no resourceSpans list")
    found = []
    for rs in body["resourceSpans"]:
        resource = attributes(rs.get("resource", {}).get("attributes", []), "resource")
        need(isinstance(resource.get("service.name"), str), "resource without service.name")
        need(isinstance(rs.get("scopeSpans"), list), "resourceSpans without scopeSpans list")
        for ss in rs["scopeSpans"]:
            need(isinstance(ss.get("spans"), list), "scopeSpans without spans list")
            for s in ss["spans"]:
                check_id(s.get("traceId"), HEX32, "traceId")
                check_id(s.get("spanId"), HEX16, "spanId")
                if "parentSpanId" in s:
                    check_id(s["parentSpanId"], HEX16, "parentSpanId")
                need(isinstance(s.get("name"), str) and s["name"], "span without name")
                for t in ("startTimeUnixNano", "endTimeUnixNano"):
                    need(isinstance(s.get(t), str) and NANOS.match(s[t]), f"{t} not a string of digits")
                need(int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]), "span ends before it starts")
                links = []
                for link in s.get("links", []):
                    check_id(link.get("traceId"), HEX32, "link traceId")
                    check_id(link.get("spanId"), HEX16, "link spanId")
                    links.append({"traceId": link["traceId"], "spanId": link["spanId"]})
                found.append({
                    "traceId": s["traceId"],
                    "spanId": s["spanId"],
                    "parentSpanId": s.get("parentSpanId", ""),
                    "name": s["name"],
                    "kind": s.get("kind", 0),
                    "start": s["startTimeUnixNano"],
                    "end": s["endTimeUnixNano"],
                    "attributes": attributes(s.get("attributes", []), "span"),
                    "links": links,
                    "status": s.get("status", {}),
                    "service": resource["service.name"],
                    "resource": resource,
                })
    return found


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--spans", required=True)
    p.add_argument("--errors", required=True)
    p.add_argument("--path", default="/v1/traces")
    p.add_argument("--status", type=int, default=0)
    p.add_argument("--headers-log", default="")
    p.add_argument("--delay-ms", type=int, default=0)
    args = p.parse_args()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def answer(self, status, text=b""):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(text)))
            try:
                self.end_headers()
                self.wfile.write(text)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the sender did not wait for the answer

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            if args.headers_log:
                with lock, open(args.headers_log, "a") as f:
                    f.write(json.dumps(dict(self.headers.items())) + "\n")
            if args.status:
                return self.answer(args.status)
            try:
                need(self.path == args.path, f"posted to {self.path}, not {args.path}")
                need(self.headers.get("Content-Type", "").startswith("application/json"),
                     "Content-Type is not application/json")
                spans = spans_of(json.loads(raw))
            except (Bad, ValueError) as e:
                with lock, open(args.errors, "a") as f:
                    f.write(f"{e}\n")
                return self.answer(400, json.dumps({"error": str(e)}).encode())
            with lock, open(args.spans, "a") as f:
                for s in spans:
                    f.write(json.dumps(s) + "\n")
            if args.delay_ms:
                time.sleep(args.delay_ms / 1000)
                # A Go receiver cancels the request of a client that went away before its answer
                # (and may drop its spans): the client must still be there.
                readable, _, _ = select.select([self.connection], [], [], 0)
                if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                    with lock, open(args.errors, "a") as f:
                        f.write("the client closed its connection before the answer\n")
                with lock, open(args.port_file + ".answered", "a") as f:  # the look was taken
                    f.write("answered\n")
            self.answer(200, b"{}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    open(args.errors, "a").close()
    open(args.spans, "a").close()
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
