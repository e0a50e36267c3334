#!/usr/bin/env python3
"""A client of idem's ledger API (`idem serve --ledger`), standard library only.

Runs a command at most once per key, as `idem run` does, but through the daemon: claim the key,
renew the claim's lease from a thread while the command runs, record the outcome. A duplicate
gets the stored stdout and exit code back.

    idem serve --ledger &                  # prints its address; the token file is the store's
    python3 examples/ledger_client.py --url http://127.0.0.1:8787 --key order-42 -- ./charge.sh 42

(--token-file defaults to the token of the store idem uses: $IDEM_DB + .token, else the XDG path's.)

(--socket PATH instead of --url/--token-file talks to `idem serve --socket PATH`.)
Exit: the command's code; for a replay the stored one; 75 the key is running elsewhere or this
attempt lost its lease to another one (nothing recorded); 69 an earlier attempt was abandoned
(add --retry-abandoned); 65 the key was used for something else.

As a library: `Ledger(url, token).claim(key)` and so on; the calls return the decoded answer.
"""
import argparse
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request


class Conflict(Exception):
    """The ledger answered 409 or 422: `status` and the problem's `detail`."""

    def __init__(self, status, problem):
        super().__init__(problem.get("detail", "HTTP %d" % status))
        self.status = status
        self.problem = problem


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=60):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


class Ledger:
    """The ledger API at `url` (http://HOST:PORT) with `token`, or on the Unix socket `socket_path`."""

    def __init__(self, url=None, token=None, socket_path=None):
        self.url, self.token, self.socket_path = url, token, socket_path

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if self.socket_path:
            conn = _UnixConnection(self.socket_path)
            conn.request(method, path, body=data, headers=headers)
            answer = conn.getresponse()
            status, text = answer.status, answer.read()
            conn.close()
        else:
            request = urllib.request.Request(self.url + path, data=data, headers=headers,
                                             method=method)
            try:
                with urllib.request.urlopen(request, timeout=60) as answer:
                    status, text = answer.status, answer.read()
            except urllib.error.HTTPError as e:
                status, text = e.code, e.read()
        decoded = json.loads(text) if text else {}
        if status in (409, 422):
            raise Conflict(status, decoded)
        if status >= 300:
            raise RuntimeError("%s %s: HTTP %d: %s" % (method, path, status,
                                                       decoded.get("detail", text)))
        return status, decoded

    def claim(self, key, fingerprint="", lease="5m", retry_abandoned=False):
        """(201, {attempt, attempt_token, ...}) to run; (200, {record}) for a stored success."""
        return self._call("POST", "/v1/claim", {"key": key, "fingerprint": fingerprint,
                                                "lease": lease,
                                                "retry_abandoned": retry_abandoned})

    def heartbeat(self, key, token):
        return self._call("POST", "/v1/heartbeat", {"key": key, "attempt_token": token})[1]

    def finish(self, key, token, exit_code, stdout=b"", stderr=b""):
        return self._call("POST", "/v1/finish", {
            "key": key, "attempt_token": token,
            "status": "succeeded" if exit_code == 0 else "failed", "exit_code": exit_code,
            "stdout_b64": base64.b64encode(stdout).decode(),
            "stderr_b64": base64.b64encode(stderr).decode()})[1]

    def record(self, key):
        return self._call("GET", "/v1/records/" + urllib.parse.quote(key, safe=""))[1]


def keep_lease(ledger, key, token, every_s, stop, lost, on_lost):
    """Renews the lease every `every_s` until `stop` is set; on a 409 sets `lost` and calls on_lost."""
    while not stop.wait(every_s):
        try:
            ledger.heartbeat(key, token)
        except Conflict as e:
            print("ledger_client: heartbeat refused: %s" % e, file=sys.stderr)
            lost.set()
            on_lost()
            return
        except Exception as e:  # the daemon restarting: try again at the next turn
            print("ledger_client: heartbeat failed: %s" % e, file=sys.stderr)


def seconds(duration):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    for unit in ("ms", "s", "m", "h", "d"):
        if duration.endswith(unit) and duration[:-len(unit)].isdigit():
            return int(duration[:-len(unit)]) * units[unit]
    return float(duration)


def run_once(ledger, key, command, lease, retry_abandoned):
    try:
        status, answer = ledger.claim(key, fingerprint=json.dumps(command), lease=lease,
                                      retry_abandoned=retry_abandoned)
    except Conflict as e:
        print("ledger_client: %s" % e, file=sys.stderr)
        if e.status == 422:
            return 65
        return 69 if e.problem.get("title", "").endswith("abandoned") else 75
    if status == 200:  # done before: replay
        record = answer["record"]
        sys.stdout.buffer.write(base64.b64decode(record["stdout_b64"]))
        sys.stderr.buffer.write(base64.b64decode(record["stderr_b64"]))
        return record["exit_code"] or 0
    token = answer["attempt_token"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stop, lost = threading.Event(), threading.Event()
    keeper = threading.Thread(target=keep_lease, daemon=True,
                              args=(ledger, key, token, seconds(lease) / 3, stop, lost,
                                    child.terminate))
    keeper.start()
    out, err = child.communicate()
    stop.set()
    keeper.join()
    sys.stdout.buffer.write(out)
    sys.stderr.buffer.write(err)
    code = child.returncode if child.returncode >= 0 else 128 - child.returncode
    try:
        ledger.finish(key, token, code, out, err)
    except Conflict as e:  # another attempt took the key over: this outcome does not count
        print("ledger_client: finish refused: %s" % e, file=sys.stderr)
        return 75
    return 75 if lost.is_set() else code


def default_token_file():
    """The token file of the store idem uses by default: $IDEM_DB, else the XDG state path."""
    db = os.environ.get("IDEM_DB")
    if not db:
        state = os.environ.get("XDG_STATE_HOME", "")
        if not state.startswith("/"):
            state = os.path.join(os.path.expanduser("~"), ".local", "state")
        db = os.path.join(state, "idem", "idem.db")
    return db + ".token"


def main():
    p = argparse.ArgumentParser(description="Run COMMAND at most once per key through idem's "
                                            "ledger API.")
    p.add_argument("--url", default="http://127.0.0.1:8787")
    p.add_argument("--token-file", default=default_token_file(),
                   help="the daemon's token file (the store's path + .token)")
    p.add_argument("--socket", help="the daemon's --socket PATH (no token needed)")
    p.add_argument("--key", required=True)
    p.add_argument("--lease", default="30s", help="e.g. 30s; renewed every third of it")
    p.add_argument("--retry-abandoned", action="store_true")
    p.add_argument("command", nargs="+")
    args = p.parse_args()
    token = None
    if args.token_file and not args.socket:
        with open(os.path.expanduser(args.token_file)) as f:
            token = f.read().strip()
    ledger = Ledger(args.url, token, args.socket)
    sys.exit(run_once(ledger, args.key, args.command, args.lease, args.retry_abandoned))


if __name__ == "__main__":
    main()
