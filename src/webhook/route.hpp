#pragma once
// Serving the hooks of webhook hooks files (contract §6b): one route per hook at /{urlprefix}/{id},
// answering as webhook 2.8's hook handler does and in its order (404, 405, rules, command), with
// idem's extra properties on top: its signature check (401), body limit (413), key (400 without
// one), dedupe through the attempt engine (delivery.hpp's keyed run), timeout and concurrency cap.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "front/route.hpp"
#include "hooks/delivery.hpp"
#include "hooks/route.hpp"
#include "webhook/file.hpp"

namespace idem::webhook {

// What the command line says about serving hooks files.
struct ServeOptions {
  std::vector<std::string> files;  // --hooks, in order
  HooksFileOptions file_options;   // --urlprefix, --template
  // --response-header NAME=VALUE: on every answer of a hook past its method check, as webhook's
  // -header (a hook's own response-headers of the same name win on a triggered answer).
  std::vector<std::pair<std::string, std::string>> response_headers;
  // --http-methods: the methods of a hook that names none; empty: every method.
  std::vector<std::string> http_methods;
};

// Parses --response-header's NAME=VALUE (a token name, a value without CR, LF or NUL); throws
// UsageError naming the flag.
std::pair<std::string, std::string> parse_response_header(std::string_view text);
// Parses --http-methods' comma-separated list: trimmed, upper-cased, none empty.
std::vector<std::string> parse_http_methods(std::string_view text);

// Reads every file of `options.files` and parses them as one set (a template's getenv, cat and
// credential from this process's environment and files). Throws ConfigError naming the file.
HooksFiles load_hooks_files(const ServeOptions& options);

// The route of one hook: requests whose path, percent-decoded, is hook.served_path (never, when
// that path is not clean: webhook redirects it). The hook's native.withheld_env is what its
// command never inherits (the daemon sets every secret of every hook there).
std::shared_ptr<const front::Route> hook_route(WebhookHook hook, const ServeOptions& options,
                                               std::shared_ptr<hooks::HookSlots> slots,
                                               hooks::RouteServices services);

// The effect of a stored delivery of `hook` (hooks::SerialLine::effect): its request rebuilt
// (headers, query, body, the sender's address) and its command run as a delivery's; its rules
// passed when it was accepted. Credential headers read "[redacted]".
std::function<std::unique_ptr<hooks::DeliveryEffect>(const core::Record&, const std::string&)>
stored_effect(const WebhookHook& hook);

// What webhook's router answers itself, for the paths no hook's route took: "/" (200 "OK", any
// method), a path with a bad escape (400 "400 Bad Request", connection closed), a path that is
// not clean once decoded (301 to its cleaned form, the query kept: "//hooks/x" to "/hooks/x"),
// and every other path under /{urlprefix}/ (every path with an empty prefix) once decoded: 404
// "Hook not found.", as webhook answers an id it has not loaded. Put last, when no proxy takes
// those paths; other paths are left to the daemon's 404.
std::shared_ptr<const front::Route> not_found_route(const std::string& urlprefix);

// The Content-Type Go's net/http gives a body written without one (http.DetectContentType, what
// webhook's answers carry): text/html, text/xml, a few binary formats by their magic numbers,
// "text/plain; charset=utf-8" for text, "application/octet-stream" for other bytes; "" for an
// empty body, which gets none.
std::string sniffed_content_type(std::string_view body);

// The Content-Type of an answer made of a command's output: sniffed_content_type's, except that
// HTML and XML (which a browser would run script in) are "text/plain; charset=utf-8". A hook's
// response-headers may still name another type.
std::string command_output_type(std::string_view output);

// The executable webhook runs for `command` in `directory` (command-working-directory): the
// command itself when it is absolute or there is no directory (a bare name is looked up on
// PATH), else the directory joined with it, made absolute, since the command starts inside it.
std::string executable(const std::string& command, const std::string& directory);

}  // namespace idem::webhook
