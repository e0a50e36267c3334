#!/usr/bin/env bash
# Traces (contract §12) against a real OTLP/HTTP receiver of the test's own (no OpenTelemetry
# Collector in Debian: tests/helpers/otlp_receiver.py checks each request's OTLP JSON shape and
# records its spans): 1,000 runs give 1,000 spans, 1,000 replays 1,000 spans each linked to the
# span of the run it replayed; $TRACEPARENT is the parent and the command gets its own span as
# TRACEPARENT, so a child's span nests under idem's; begin and end make one span; export and
# import carry it; a hook's delivery with a traceparent header is parented by it, and the proxy's
# upstream gets the attempt's; a receiver that refuses, or an endpoint idem cannot use, never
# changes an exit code, and a refusing or slow receiver costs no wait.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"
command -v python3 >/dev/null || fail "python3 is missing (scripts/deps.sh installs it)"
unset TRACEPARENT OTEL_SDK_DISABLED OTEL_TRACES_EXPORTER OTEL_EXPORTER_OTLP_TRACES_ENDPOINT \
  OTEL_EXPORTER_OTLP_HEADERS OTEL_RESOURCE_ATTRIBUTES OTEL_SERVICE_NAME OTEL_EXPORTER_OTLP_TIMEOUT
receiver=$_tests_root/helpers/otlp_receiver.py
SPANS=$T/spans.jsonl

# start_receiver NAME [ARG...]: the receiver as bg NAME; sets RPORT once it listens.
start_receiver() {
  local name=$1
  shift
  rm -f "$T/$name.port"
  bg "$name" python3 "$receiver" --port-file "$T/$name.port" --spans "$SPANS" \
    --errors "$T/$name.errors" "$@"
  _receiver_up_or_gone() { [[ -s $T/$name.port ]] || bg_exited "$name"; }
  wait_until "receiver '$name' listens" _receiver_up_or_gone
  [[ -s $T/$name.port ]] || fail "receiver '$name' exited: $(cat "$T/$name.err")"
  RPORT=$(<"$T/$name.port")
}
# spans_count: spans received so far.
spans_count() { wc -l <"$SPANS"; }
# spans_at_least N: the receiver has N spans (the CLI's request is written before it exits, but
# not waited for; the daemon sends later).
spans_at_least() { (($(spans_count) >= $1)); }
# spans_where PYTHON_CONDITION: the received spans (JSON lines) for which the condition on `s`
# holds.
spans_where() {
  python3 -c '
import collections, json, sys
for line in open(sys.argv[1]):
    s = json.loads(line)
    a = collections.defaultdict(lambda: None, s["attributes"])
    if eval("(" + sys.argv[2] + ")"):
        print(line, end="")' "$SPANS" "$1"
}
# span_where PYTHON_CONDITION: as spans_where, once there is such a span (waited for).
span_where() {
  _some_span_where() { [[ -n $(spans_where "$1") ]]; }
  wait_until "a span where $1" _some_span_where "$1"
  spans_where "$1"
}

# 1,000 runs on SQLite; on PostgreSQL (pg: traces), whose claims take longer, 200 prove the same of
# its store (the ids kept with the record, read back by the replay).
N=1000
[[ ${IDEM_TEST_BACKEND:-sqlite} != postgres ]] || N=200

start_receiver receiver
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RPORT OTEL_SERVICE_NAME=traces-test

# N runs: N spans, one per key, each a root span of its own trace.
for i in $(seq $N); do idem run -k "run-$i" -- true; done
wait_until "spans of $N runs" spans_at_least $N
assert_eq $N "$(spans_count)" "spans of $N runs"
assert_eq $N "$(spans_where 'a["idem.outcome"] == "succeeded" and a["idem.front"] == "run"
  and a["idem.attempt"] == 1 and a["process.exit.code"] == 0 and s["parentSpanId"] == ""
  and s["service"] == "traces-test" and s["name"] == "idem run" and s["kind"] == 1' | wc -l)" \
  "run spans with their attributes"
assert_eq $N "$(spans_where 'True' | python3 -c '
import json, sys
print(len({json.loads(l)["attributes"]["idem.key"] for l in sys.stdin}))')" "distinct keys"
assert_empty "$T/receiver.errors"

# N replays: N more spans, each linked to the span of the run it replayed.
for i in $(seq $N); do idem run -k "run-$i" -- true; done
wait_until "spans of $N replays" spans_at_least $((2 * N))
assert_eq $((2 * N)) "$(spans_count)" "spans after $N replays"
python3 - "$SPANS" "$N" <<'EOF' || fail "replay spans are not linked to the runs they replayed"
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1])]
runs = {s["attributes"]["idem.key"]: s for s in spans if s["attributes"]["idem.outcome"] == "succeeded"}
replays = [s for s in spans if s["attributes"]["idem.outcome"] == "replayed"]
assert len(replays) == int(sys.argv[2]), len(replays)
for r in replays:
    run = runs[r["attributes"]["idem.key"]]
    assert r["links"] == [{"traceId": run["traceId"], "spanId": run["spanId"]}], r
    assert r["spanId"] != run["spanId"]
EOF
: >"$SPANS"

# $TRACEPARENT is the parent; the command's TRACEPARENT is idem's span, so the span a child
# sends (as otel-cli or an SDK would) nests under it. A failure is a span with status ERROR.
cat >"$T/child.py" <<'EOF'
import json, os, time, urllib.request
_, trace, parent, _ = os.environ["TRACEPARENT"].split("-")
now = str(time.time_ns())
span = {"traceId": trace, "spanId": os.urandom(8).hex(), "parentSpanId": parent, "name": "child",
        "kind": 1, "startTimeUnixNano": now, "endTimeUnixNano": now, "attributes": []}
body = {"resourceSpans": [{"resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "child"}}]},
        "scopeSpans": [{"scope": {"name": "child"}, "spans": [span]}]}]}
request = urllib.request.Request(os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] + "/v1/traces",
                                 json.dumps(body).encode(), {"Content-Type": "application/json"})
urllib.request.urlopen(request).read()
print(os.environ["TRACEPARENT"])
EOF
parent_trace=4bf92f3577b34da6a3ce929d0e0e4736 parent_span=00f067aa0ba902b7
capture nested env TRACEPARENT="00-$parent_trace-$parent_span-01" \
  "$IDEM_BIN" run -k nested -- sh -c 'python3 "$0" && exit 3' "$T/child.py"
expect_rc 3
wait_until "two spans" spans_at_least 2
idem_span=$(spans_where 's["name"] == "idem run"')
child_span=$(spans_where 's["name"] == "child"')
assert_eq "$parent_trace" "$(jsonq /traceId <<<"$idem_span")" "idem's trace"
assert_eq "$parent_span" "$(jsonq /parentSpanId <<<"$idem_span")" "idem's parent"
assert_eq failed "$(jsonq /attributes/idem.outcome <<<"$idem_span")" "outcome"
assert_eq 3 "$(jsonq /attributes/process.exit.code <<<"$idem_span")" "exit code"
assert_eq 2 "$(jsonq /status/code <<<"$idem_span")" "status ERROR"
assert_eq "$parent_trace" "$(jsonq /traceId <<<"$child_span")" "child's trace"
assert_eq "$(jsonq /spanId <<<"$idem_span")" "$(jsonq /parentSpanId <<<"$child_span")" \
  "child's parent is idem's span"
assert_eq "00-$parent_trace-$(jsonq /spanId <<<"$idem_span")-01" "$(cat "$T/nested.out")" \
  "the command's TRACEPARENT"
# A traceparent that is not strictly W3C's is ignored: a new root.
env TRACEPARENT="00-$parent_trace-$parent_span-1" "$IDEM_BIN" run -k bad-parent -- true
root=$(span_where 'a["idem.key"] == "bad-parent"')
assert_eq "" "$(jsonq /parentSpanId <<<"$root")" "parent of a bad traceparent"
[[ $(jsonq /traceId <<<"$root") != "$parent_trace" ]] || fail "a bad traceparent's trace was kept"

# begin and end: one span, stored with the claim by begin and ended by end.
idem begin -k script
idem end -k script --exit 0
script_span=$(span_where 'a["idem.key"] == "script"')
assert_eq begin "$(jsonq /attributes/idem.front <<<"$script_span")" "begin's front"
assert_eq succeeded "$(jsonq /attributes/idem.outcome <<<"$script_span")" "begin's outcome"

# Export and import carry the span, so a replay in the other store links to the same attempt.
idem export --prefix run-1 >"$T/run-1.jsonl"
exported=$(grep '"key":"run-1"' "$T/run-1.jsonl" | jsonq /span/span_id)
[[ $exported =~ ^[0-9a-f]{16}$ ]] || fail "exported span: $(cat "$T/run-1.jsonl")"
fresh_store other
env "$FRESH_STORE" "$IDEM_BIN" import <"$T/run-1.jsonl"
env "$FRESH_STORE" "$IDEM_BIN" run -k run-1 -- true
linked=$(span_where 'a["idem.key"] == "run-1" and a["idem.outcome"] == "replayed"')
assert_eq "$exported" "$(jsonq /links/0/spanId <<<"$linked")" "imported record's replay link"
assert_empty "$T/receiver.errors"
: >"$SPANS"

# The daemon: a delivery's traceparent header is the parent of its span (the handler's
# TRACEPARENT its span), and the proxy's upstream gets the attempt's span as its traceparent.
start_upstream up
cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
printf '%s' "$TRACEPARENT"
EOF
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF
{"hooks": [{"path": "/hooks/jobs", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}}],
 "proxy": {"upstream": "$UURL"}}
EOF
start_daemon "$T/serve.json"
post /hooks/jobs '{}' "X-Key: d1" "traceparent: 00-$parent_trace-$parent_span-01"
expect_http 200
wait_until "the delivery's span" spans_at_least 1
hook_span=$(spans_where 'a["idem.key"] == "/hooks/jobs#d1"')
assert_eq "$parent_span" "$(jsonq /parentSpanId <<<"$hook_span")" "delivery's parent"
assert_eq "$parent_trace" "$(jsonq /traceId <<<"$hook_span")" "delivery's trace"
assert_eq hook "$(jsonq /attributes/idem.front <<<"$hook_span")" "delivery's front"
assert_eq 200 "$(jsonq /attributes/http.response.status_code <<<"$hook_span")" "delivery status"
assert_eq 2 "$(jsonq /kind <<<"$hook_span")" "a server span"
assert_eq "00-$parent_trace-$(jsonq /spanId <<<"$hook_span")-01" "$(cat "$T/resp.body")" \
  "the handler's TRACEPARENT"
post /hooks/jobs '{}' "X-Key: d1"  # a duplicate: a replay's span, linked
wait_until "the replay's span" spans_at_least 2
replayed=$(spans_where 'a["idem.key"] == "/hooks/jobs#d1" and a["idem.outcome"] == "replayed"')
assert_eq "$(jsonq /spanId <<<"$hook_span")" "$(jsonq /links/0/spanId <<<"$replayed")" \
  "delivery replay's link"

post /orders '{"n":1}' "Idempotency-Key: p1" "traceparent: 00-$parent_trace-$parent_span-01"
expect_http 200
wait_until "the proxy's span" spans_at_least 3
proxy_span=$(spans_where 'a["idem.front"] == "proxy"')
assert_eq "$parent_span" "$(jsonq /parentSpanId <<<"$proxy_span")" "proxied request's parent"
# The upstream echoes its request's headers as a flat list: one traceparent, the attempt's.
assert_eq "00-$parent_trace-$(jsonq /spanId <<<"$proxy_span")-01" "$(python3 -c '
import json, sys
h = json.load(sys.stdin)["headers"]
print(" ".join(v for n, v in zip(h[::2], h[1::2]) if n.lower() == "traceparent"))' <"$T/resp.body")" \
  "traceparent the upstream got"
get /metrics
grep -qx 'idem_trace_spans_exported_total [1-9][0-9]*' "$T/resp.body" ||
  fail "no exported spans in /metrics: $(grep trace "$T/resp.body")"
grep -qx 'idem_trace_spans_dropped_total 0' "$T/resp.body" || fail "spans dropped"
stop_daemon
assert_empty "$T/receiver.errors"

# A receiver that is down: the same exit codes, and no wait for a refused connection (20 runs
# and 20 replays well within what one export timeout would be).
kill -KILL "$(bg_pid receiver)"
bg_wait receiver
export OTEL_EXPORTER_OTLP_TIMEOUT=1500
start=$(now_ms)
for i in $(seq 20); do
  for pass in run replay; do
    capture down idem run --replay-failures -k "down-$i" -- sh -c 'echo out; exit 4'
    expect_rc 4
    assert_eq out "$(cat "$T/down.out")" "output with the receiver down ($pass)"
    assert_empty "$T/down.err"
  done
done
elapsed=$(($(now_ms) - start))
((elapsed < 1500 * 5)) || fail "40 runs took ${elapsed} ms with the receiver refusing"
# A receiver that answers an error: the same.
start_receiver refusing --status 503
capture refused env OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$RPORT" \
  "$IDEM_BIN" run -k refused -- sh -c 'exit 5'
expect_rc 5
assert_empty "$T/refused.err"
# A receiver slow to answer: the CLI writes its span and exits without waiting for the answer
# (the command has ended: nothing would act on it), where it used to wait up to 2 s; the span
# arrives all the same, and the connection stays open until the answer (a process of idem's
# holds it), as a receiver in Go needs.
# It answers after 1.5 s, within the 2 s the connection is held for (no OTEL_EXPORTER_OTLP_TIMEOUT).
start_receiver slow --delay-ms 1500
start=$(now_ms)
capture slowrun env -u OTEL_EXPORTER_OTLP_TIMEOUT OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$RPORT" \
  "$IDEM_BIN" run -k slow -- sh -c 'exit 7'
expect_rc 7
elapsed=$(($(now_ms) - start))
((elapsed < 1000)) || fail "a run waited ${elapsed} ms for a receiver slow to answer"
assert_empty "$T/slowrun.err"
slow_span=$(span_where 'a["idem.key"] == "slow"')
assert_eq 7 "$(jsonq /attributes/process.exit.code <<<"$slow_span")" "the slow receiver's span"
wait_until "the slow receiver's answer" grep -q . "$T/slow.port.answered"
assert_empty "$T/slow.errors"

# An endpoint idem cannot post to: the CLI says so once and runs without traces; the daemon
# does not start.
capture https env OTEL_EXPORTER_OTLP_ENDPOINT=https://127.0.0.1:1 "$IDEM_BIN" run -k https -- sh -c 'exit 6'
expect_rc 6
assert_lines 1 "$T/https.err"
grep -q '^idem: OTEL_EXPORTER_OTLP_ENDPOINT: .*https.*; running without traces$' "$T/https.err" ||
  fail "https warning: $(cat "$T/https.err")"
capture https_serve env OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=https://127.0.0.1:1 \
  "$IDEM_BIN" serve --listen 127.0.0.1:0 --config "$T/serve.json"
expect_rc 64
grep -q 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' "$T/https_serve.err" ||
  fail "daemon's error: $(cat "$T/https_serve.err")"
# Disabled: nothing is set up, and the command's TRACEPARENT is the one idem was given.
capture off env OTEL_SDK_DISABLED=true TRACEPARENT=kept "$IDEM_BIN" run -k off -- sh -c 'printf %s "$TRACEPARENT"'
assert_eq kept "$(cat "$T/off.out")" "TRACEPARENT with traces off"
