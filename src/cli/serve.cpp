// `idem serve`: the webhook daemon.
#include "cli/serve.hpp"

#include "core/duration.hpp"
#include "core/errors.hpp"
#include "serve/daemon.hpp"
#include "store/store.hpp"

namespace idem::cli {

CLI::App* register_serve(CLI::App& app, ServeOptions& o) {
  auto* serve = app.add_subcommand(
      "serve",
      "Receive webhooks (run each delivery once), proxy an HTTP app (forward each "
      "Idempotency-Key once) and offer the ledger API; replay duplicates");
  serve
      ->add_option("--config", o.config,
                   "JSON file listing the hooks and the proxy (SIGHUP reloads it)")
      ->type_name("FILE");
  serve
      ->add_option("--hooks", o.hooks,
                   "Serve the hooks of a hooks file of webhook (JSON or YAML) at "
                   "/PREFIX/ID; repeatable (SIGHUP reloads them)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  serve->add_option("--urlprefix", o.urlprefix, "The prefix of the hooks files' hooks (empty: /ID)")
      ->type_name("PREFIX")
      ->capture_default_str();
  serve->add_flag("--template", o.hooks_template,
                  "Expand the hooks files as templates first (getenv, cat, credential)");
  serve
      ->add_option("--response-header", o.response_headers,
                   "A header on every answer of the hooks files' hooks; repeatable")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  serve
      ->add_option("--http-methods", o.http_methods,
                   "Methods of the hooks files' hooks that name none (default: any method)")
      ->type_name("LIST");
  serve
      ->add_option("--upstream", o.upstream,
                   "Idempotency-Key proxy: forward requests to URL, POST and PATCH once per key")
      ->type_name("URL");
  serve->add_flag("--ledger", o.ledger,
                  "Serve the ledger API (/v1/claim, /v1/heartbeat, /v1/finish, /v1/records/KEY) "
                  "on --listen, behind the bearer token of the file beside the store (its path + "
                  ".token, created 0600)");
  serve->add_flag("--ui", o.ui,
                  "Serve the delivery-log page at /ui/ on a listener of its own (a free loopback "
                  "port after --listen's, printed at start with a one-time login link; the "
                  "token of the file beside the store, its path + .ui-token, logs in too)");
  serve
      ->add_option("--ui-listen", o.ui_listen,
                   "The page's own address (implies --ui; other than loopback needs "
                   "--allow-remote)")
      ->type_name("HOST:PORT");
  serve
      ->add_option("--socket", o.socket,
                   "Also serve the ledger API, /healthz and /metrics on a Unix socket at PATH "
                   "(created 0600; no token asked on it)")
      ->type_name("PATH");
  serve->add_option("--listen", o.listen, "Address to listen on; port 0 picks a free port")
      ->type_name("HOST:PORT")
      ->capture_default_str();
  serve->add_flag("--allow-remote", o.allow_remote, "Allow a --listen address other than loopback");
  serve->add_option("--port-file", o.port_file, "Write the bound port to FILE once listening")
      ->type_name("FILE");
  serve
      ->add_option("--max-connections", o.max_connections,
                   "Connections served at once; as many more may wait, further ones are "
                   "answered 503 with Retry-After: 1 (a TLS one is closed); also the proxy's "
                   "max_forwards unless its config gives one")
      ->type_name("N")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  serve
      ->add_option("--request-timeout", o.request_timeout,
                   "Deadline for receiving a whole request (headers and body); slower clients "
                   "are cut off")
      ->type_name("DURATION")
      ->capture_default_str();
  serve->add_option("--grace", o.grace, "On SIGTERM, how long in-flight handlers may finish")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--busy-timeout", o.busy_timeout,
                   "How long a delivery or /healthz waits for a locked store before answering "
                   "503 (IDEM_BUSY_TIMEOUT does not apply to serve)")
      ->type_name("DURATION")
      ->capture_default_str();
  serve
      ->add_option("--keep-attempts", o.keep_attempts,
                   "Attempts of a key its history keeps, the newest; older ones are counted, "
                   "not kept (default: $IDEM_KEEP_ATTEMPTS, else 100)")
      ->type_name("N");
  add_lease_option(*serve, o.lease);
  auto* cert = serve
                   ->add_option("--cert", o.cert,
                                "Serve HTTPS on --listen: the certificate chain, PEM (SIGHUP "
                                "reads it again)")
                   ->type_name("FILE");
  auto* key =
      serve->add_option("--key", o.key, "The private key of --cert, PEM")->type_name("FILE");
  cert->needs(key);
  key->needs(cert);
  serve->add_option("--tls-min-version", o.tls_min_version, "The lowest TLS version accepted")
      ->type_name("1.2|1.3")
      ->capture_default_str()
      ->check(CLI::IsMember({"1.2", "1.3"}))
      ->needs(cert);
  serve
      ->add_option("--pidfile", o.pidfile,
                   "Write the daemon's process id to PATH once listening, remove it at exit "
                   "(refused while a live process's id is there)")
      ->type_name("PATH");
  serve->footer(
      "Examples:\n"
      "  GITHUB_WEBHOOK_SECRET=... idem serve --config examples/serve.json --listen "
      "127.0.0.1:8787\n"
      "  idem serve --hooks hooks.json --listen 127.0.0.1:9000\n"
      "  idem serve --upstream http://127.0.0.1:3000 --listen 127.0.0.1:8787\n"
      "  idem serve --ledger --socket /run/user/$UID/idem.sock");
  return serve;
}

int run_serve(const GlobalOptions& global, const ServeOptions& o) {
  if (o.config.empty() && o.hooks.empty() && o.upstream.empty() && !o.ledger && o.socket.empty() &&
      !o.ui && o.ui_listen.empty())
    throw UsageError(
        "nothing to serve: give --config FILE, --hooks FILE, --upstream URL, "
        "--ledger or --socket PATH");
  if (o.hooks.empty() && (o.hooks_template || o.urlprefix != "hooks" ||
                          !o.response_headers.empty() || !o.http_methods.empty()))
    throw UsageError("--urlprefix, --template, --response-header and --http-methods need --hooks");
  serve::DaemonOptions d;
  d.config_path = o.config;
  d.upstream = o.upstream;
  d.hooks.files = o.hooks;
  d.hooks.file_options.urlprefix = o.urlprefix;
  d.hooks.file_options.as_template = o.hooks_template;
  for (const auto& header : o.response_headers)
    d.hooks.response_headers.push_back(webhook::parse_response_header(header));
  if (!o.http_methods.empty()) d.hooks.http_methods = webhook::parse_http_methods(o.http_methods);
  d.ledger = o.ledger;
  d.ui = o.ui || !o.ui_listen.empty();
  d.ui_listen = o.ui_listen;
  d.socket_path = o.socket;
  d.listen = o.listen;
  d.allow_remote = o.allow_remote;
  d.port_file = o.port_file;
  d.max_connections = o.max_connections;
  d.request_timeout_ms = core::duration_arg("--request-timeout", o.request_timeout);
  d.grace_ms = core::duration_arg("--grace", o.grace);
  d.busy_timeout_ms = core::duration_arg("--busy-timeout", o.busy_timeout);
  if (!o.keep_attempts.empty())
    d.keep_attempts = store::keep_attempts_arg("--keep-attempts", o.keep_attempts);
  if (d.request_timeout_ms <= 0) throw UsageError("--request-timeout must be above zero");
  d.lease_ms = configured_lease_ms(o.lease);
  d.tls_cert = o.cert;
  d.tls_key = o.key;
  d.tls_min_version = o.tls_min_version;
  d.pidfile = o.pidfile;
  d.store = store_location(global);
  return serve::run_daemon(d);
}

}  // namespace idem::cli
