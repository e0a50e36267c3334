# shellcheck shell=bash
# Sourced by the scripts that time idem with traces on (bench/traces.sh, scripts/link_order.sh).
# otlp_sink_setup PREFIX: makes $dir, a temp dir named after PREFIX, and cds into it; at exit the
# receiver, if one runs, is stopped and $dir removed.
# otlp_sink_start: starts bench/node/otlp_sink.js on a free port of 127.0.0.1 (what it took is
# written to $dir/sink.out when it is stopped), sets receiver_pid and otlp_endpoint.
otlp_sink_setup() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  receiver_pid=
  trap otlp_sink_cleanup EXIT
  cd "$dir" || exit 1
}
otlp_sink_cleanup() {
  [[ -z $receiver_pid ]] || kill -TERM "$receiver_pid" 2>/dev/null || true
  rm -rf "$dir"
}
# shellcheck disable=SC2154  # root: the sourcing script's
otlp_sink_start() {
  node "$root/bench/node/otlp_sink.js" "$dir/port" >"$dir/sink.out" &
  receiver_pid=$!
  disown "$receiver_pid"  # its end, killed, is not a job to report
  for _ in $(seq 100); do [[ -s $dir/port ]] && break; sleep 0.1; done
  [[ -s $dir/port ]] || { echo "${0##*/}: the OTLP receiver did not start" >&2; exit 1; }
  # shellcheck disable=SC2034  # read by the sourcing script
  otlp_endpoint=http://127.0.0.1:$(<"$dir/port")
}
