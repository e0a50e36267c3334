#include "webhook/route.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/response.hpp"
#include "engine/command_effect.hpp"
#include "hooks/signature.hpp"
#include "proc/runner.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"
#include "webhook/request.hpp"

namespace idem::webhook {

namespace {

constexpr int64_t k_max_output = 16 * 1024 * 1024;  // as a native hook's stored answer
constexpr const char* k_text = "text/plain; charset=utf-8";
constexpr const char* k_command_failed =
    "Error occurred while executing the hook's command. Please check your logs for more details.";

front::Answer text_answer(int status, std::string body, std::string outcome) {
  front::Answer a;
  a.status = status;
  a.content_type = sniffed_content_type(body);
  a.body = std::move(body);
  a.outcome = std::move(outcome);
  return a;
}

// An answer of the command's output (include-command-output-in-response): typed as Go would,
// except that output that looks like HTML or XML is text. Whatever a handler echoes (a request's
// field, an error page) must not become a page of this origin that runs script.
front::Answer output_answer(int status, std::string output, std::string outcome) {
  front::Answer a = text_answer(status, std::move(output), std::move(outcome));
  a.content_type = command_output_type(a.body);
  return a;
}

// The files of pass-file-to-command, each 0600 in a directory of its own (0700) made for one run
// and removed with them once it is over.
class CommandFiles {
 public:
  explicit CommandFiles(const std::vector<CommandFile>& files) {
    if (files.empty()) return;
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/idem-hook-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot make a directory for the hook's files: " +
                               std::string(strerror(errno)));
    dir_ = pattern;
    for (const auto& file : files) write(file);
  }
  ~CommandFiles() {
    for (const auto& path : paths_) ::unlink(path.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  CommandFiles(const CommandFiles&) = delete;
  CommandFiles& operator=(const CommandFiles&) = delete;
  // Each file's variable and path.
  const std::vector<std::pair<std::string, std::string>>& env() const { return env_; }

 private:
  void write(const CommandFile& file) {
    std::string path = dir_ + "/" + file.envname + "-XXXXXX";
    util::Fd fd(::mkstemp(path.data()));  // 0600
    if (!fd.valid())
      throw std::runtime_error("cannot write the hook's file " + file.envname + ": " +
                               strerror(errno));
    paths_.push_back(path);
    std::string_view rest = file.content;
    while (!rest.empty()) {
      ssize_t n = ::write(fd.get(), rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw std::runtime_error("cannot write the hook's file " + file.envname + ": " +
                                 strerror(errno));
      rest.remove_prefix(size_t(n));
    }
    env_.emplace_back(file.envname, path);
  }

  std::string dir_;
  std::vector<std::string> paths_;
  std::vector<std::pair<std::string, std::string>> env_;
};

// Why a command failed, for the log.
std::string why_failed(const proc::RunResult& result) {
  if (!result.started) return std::string("could not start: ") + strerror(result.exec_errno);
  if (result.timed_out) return "stopped by the hook's timeout";
  if (result.signal) return "command killed by signal " + std::to_string(*result.signal);
  return "command exited " + std::to_string(result.exit_code.value_or(0));
}

// What one delivery's command is, prepared before it runs (command_for is pure), and how its
// answer reads; shared with a run that outlives the request.
struct PreparedRun {
  std::string hook;  // its path, for IDEM_HOOK
  std::vector<std::string> argv;
  std::string cwd;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<CommandFile> files;
  std::vector<std::string> withheld_env;
  int64_t timeout_ms = 0;
  bool capture = false;
  bool capture_on_error = false;
  int success_code = 200;
  std::string response_message;
};

// The answer of a hook that does not capture its output: at once, before the command has run;
// also every duplicate's of a running or succeeded delivery.
front::Answer early_answer(const PreparedRun& run, const std::string& key,
                           const std::string& outcome) {
  front::Answer a = text_answer(run.success_code, run.response_message, outcome);
  a.key = key;
  return a;
}

// A webhook hook's command, run once for an attempt: webhook's argv, HOOK_ environment and
// files, its working directory, stdin empty, stdout and stderr captured as one stream.
class WebhookEffect final : public hooks::CommandDelivery {
 public:
  WebhookEffect(std::shared_ptr<const PreparedRun> run, std::string key)
      : run_(std::move(run)), key_(std::move(key)) {}

  core::Outcome perform(const engine::Attempt& attempt) override {
    core::Outcome o = command().perform(attempt);
    answer_ = answer_of(command().result(), o);
    o.response = core::Response{answer_.status, {}};
    if (!answer_.content_type.empty())
      o.response->headers.emplace_back("Content-Type", answer_.content_type);
    return o;
  }
  std::string performed() const override { return "the hook's command ran"; }
  front::Answer& answer() override { return answer_; }

 private:
  std::unique_ptr<engine::CommandEffect> make_command() override {
    files_.emplace(run_->files);
    null_ = util::Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!null_.valid()) throw std::runtime_error("cannot open /dev/null");
    return std::make_unique<engine::CommandEffect>(proc::spawning_runner(),
                                                   spec(*files_, null_.get()));
  }

  proc::RunSpec spec(const CommandFiles& files, int stdin_fd) const {
    proc::RunSpec spec;
    spec.argv = run_->argv;
    spec.cwd = run_->cwd;
    spec.stdin_fd = stdin_fd;
    spec.live_stdout_fd = -1;
    spec.live_stderr_fd = -1;
    spec.stderr_to_stdout = true;  // webhook answers with CombinedOutput
    spec.max_output = k_max_output;
    spec.timeout_ms = run_->timeout_ms;
    spec.kill_after_ms = 5000;
    spec.extra_env = run_->env;
    for (const auto& variable : files.env()) spec.extra_env.push_back(variable);
    spec.extra_env.emplace_back("IDEM_HOOK", run_->hook);
    spec.extra_env.emplace_back("IDEM_KEY", key_);
    spec.unset_env = run_->withheld_env;
    return spec;
  }

  front::Answer answer_of(const proc::RunResult& result, core::Outcome& o) const {
    std::string output = result.output.stream_bytes(core::Stream::out);
    front::Answer a;
    if (o.status == core::Status::succeeded) {
      a = run_->capture ? output_answer(run_->success_code, std::move(output), "ran")
                        : early_answer(*run_, key_, "ran");
      if (result.output.truncated()) a.headers.emplace_back("Idem-Output-Truncated", "true");
    } else {
      const int status = result.timed_out ? 504 : 500;
      a = run_->capture_on_error ? output_answer(status, std::move(output), "failed")
                                 : text_answer(status, k_command_failed, "failed");
      if (!run_->capture_on_error) a.content_type = k_text;
      if (result.timed_out) {
        a.outcome = "timeout";
        o.note = "stopped by the hook's timeout";
      }
      a.error = why_failed(result);
    }
    a.key = key_;
    return a;
  }

  const std::shared_ptr<const PreparedRun> run_;
  const std::string key_;
  std::optional<CommandFiles> files_;  // removed once the command has run
  util::Fd null_;                      // its stdin
  front::Answer answer_;
};

// The command a delivery of `hook` runs, from its request: webhook's argv, environment and files.
std::shared_ptr<const PreparedRun> prepared_run(const WebhookHook& hook, const Request& request) {
  const hooks::Hook& native = hook.native;
  Command command = command_for(hook, request);
  auto run = std::make_shared<PreparedRun>();
  run->hook = native.path;
  run->argv = std::move(command.argv);
  if (!run->argv.empty()) run->argv[0] = executable(run->argv[0], hook.working_directory);
  run->cwd = hook.working_directory;
  run->env = std::move(command.env);
  run->files = std::move(command.files);
  run->withheld_env = native.withheld_env;
  run->timeout_ms = native.timeout_ms;
  run->capture = hook.capture_output;
  run->capture_on_error = hook.capture_output_on_error;
  run->success_code = known_status(hook.success_code) ? hook.success_code : 200;
  run->response_message = hook.response_message;
  return run;
}

// The peer as Go's RemoteAddr shows it, as webhook passes it: host and port, an IPv6 host in
// brackets.
std::string remote_address(const std::string& remote, int port) {
  return (remote.find(':') != std::string::npos ? "[" + remote + "]" : remote) + ":" +
         std::to_string(port);
}

class WebhookRoute final : public front::Route {
 public:
  WebhookRoute(WebhookHook hook, const ServeOptions& options,
               std::shared_ptr<hooks::HookSlots> slots, hooks::RouteServices services)
      : hook_(std::move(hook)),
        native_(hook_.native),
        methods_(hook_.http_methods.empty() ? options.http_methods : hook_.http_methods),
        servable_(cleaned_path(hook_.served_path) == hook_.served_path),
        global_headers_(options.response_headers),
        slots_(std::move(slots)),
        services_(std::move(services)) {
    // A hook that does not capture its output answers before its command runs.
    native_.async = !hook_.capture_output;
  }

  // As webhook's router: on the decoded path; a path that is not clean is redirected instead.
  bool matches(std::string_view path) const override {
    if (!servable_) return false;
    if (path.find('%') == std::string_view::npos) return path == hook_.served_path;
    auto decoded = decoded_path(path);
    return decoded && *decoded == hook_.served_path;
  }

  net::Admission admit(const net::RequestHead& head) const override {
    if (!methods_.empty() &&
        std::find(methods_.begin(), methods_.end(), head.method) == methods_.end()) {
      front::Answer a;
      a.status = 405;  // webhook's: no body, no Allow
      a.outcome = "bad_method";
      return net::Admission{front::to_response(std::move(a), native_.path), 0};
    }
    if (!head.chunked && head.content_length > uint64_t(native_.max_body))
      return net::Admission{too_large(std::to_string(head.content_length)), 0};
    return net::Admission{std::nullopt, uint64_t(native_.max_body)};
  }

  net::Response handle(net::Request& req) const override {
    if (int64_t(req.body.size()) > native_.max_body)  // a reload lowered the limit meanwhile
      return too_large(std::to_string(req.body.size()));
    services_.in_flight(1);
    front::Answer a = answer(req);
    services_.in_flight(-1);
    for (const auto& [name, value] : global_headers_) front::set_header(a.headers, name, value);
    return front::to_response(std::move(a), native_.path);
  }

  const std::string& hook() const override { return native_.path; }

 private:
  net::Response too_large(const std::string& size) const {
    front::Answer a = front::problem(413, "Body too large",
                                     "the body is " + size + " bytes; hook " + native_.path +
                                         " accepts at most " + std::to_string(native_.max_body));
    a.outcome = "too_large";
    return front::to_response(std::move(a), native_.path);
  }

  // webhook's hook handler from its method check on, with idem's steps where they belong.
  front::Answer answer(net::Request& req) const {
    hooks::Delivery d = hooks::delivery_of(req.head);  // its body once make_request has read it
    d.remote = remote_address(req.remote, req.remote_port);
    if (auto refusal = hooks::signature_refusal(native_, d, req.body)) return std::move(*refusal);
    const std::string& target = req.head.target;
    const size_t question = target.find('?');
    Request request =
        make_request(hook_, req.head.method, d.remote, d.headers,
                     question == std::string::npos ? std::string_view()
                                                   : std::string_view(target).substr(question + 1),
                     std::move(req.body), util::process_clock().now_ms() / 1000);
    if (!request.form_error.empty()) {
      front::Answer a =
          text_answer(500, "Error occurred while parsing multipart form.", "form_error");
      a.error = request.form_error;
      return a;
    }
    RuleResult rules = evaluate(hook_, request);
    if (rules.error) {
      front::Answer a =
          text_answer(500, "Error occurred while evaluating hook rules.", "rules_error");
      a.error = *rules.error;
      return a;
    }
    if (!rules.ok) {
      int code = known_status(hook_.mismatch_code) ? hook_.mismatch_code : 200;
      return text_answer(code, "Hook rules were not satisfied.", "mismatch");
    }
    front::Answer a = triggered(request, d);
    for (const auto& [name, value] : hook_.response_headers)
      front::set_header(a.headers, name, value);
    return a;
  }

  // The rules passed: run the command, once per key when the hook has one.
  front::Answer triggered(Request& request, hooks::Delivery& d) const {
    std::optional<core::Key> key;
    if (hook_.key) {
      std::optional<std::string> text = value_of(*hook_.key, request);
      if (!text || text->empty()) {
        front::Answer a = front::problem(
            400, "No idempotency key",
            "hook " + native_.path + " takes its key from a value this delivery does not carry");
        a.outcome = "no_key";
        return a;
      }
      std::string why;
      key = core::Key::parse(*text, why);
      if (!key) {
        front::Answer a = front::problem(400, "Bad idempotency key", why);
        a.outcome = "no_key";
        return a;
      }
    }
    auto run = prepared_run(hook_, request);
    d.body = std::move(request.body);
    hooks::DeliveryPolicy policy;
    policy.effect = [run](const std::string& k) -> std::unique_ptr<hooks::DeliveryEffect> {
      return std::make_unique<WebhookEffect>(run, k);
    };
    policy.early_answer = [run](const std::string& k, const std::string& outcome) {
      return early_answer(*run, k, outcome);
    };
    policy.span_front = "hooks-file";
    if (!key) return hooks::deliver_unkeyed(native_, *slots_, services_.delivery, policy);
    return hooks::deliver_keyed(native_, *slots_, d, services_.delivery, *key, policy);
  }

  const WebhookHook hook_;
  hooks::Hook native_;  // the hook's native side, async when it answers before running
  const std::vector<std::string> methods_;  // empty: every method
  const bool servable_;                     // its served path is clean
  const std::vector<std::pair<std::string, std::string>> global_headers_;
  const std::shared_ptr<hooks::HookSlots> slots_;
  const hooks::RouteServices services_;
};

// What webhook's router answers without a hook (see not_found_route).
class NotFoundRoute final : public front::Route {
 public:
  explicit NotFoundRoute(const std::string& urlprefix)
      : base_(urlprefix.empty() ? "/" : "/" + urlprefix + "/") {}
  bool matches(std::string_view path) const override {
    if (path == "/") return true;
    auto decoded = decoded_path(path);
    if (!decoded) return true;
    // The target of "OPTIONS *" is no path.
    return (path.starts_with('/') && cleaned_path(*decoded) != *decoded) ||
           decoded->starts_with(base_);
  }
  net::Admission admit(const net::RequestHead& head) const override {
    return net::Admission{answer(head), 0};
  }
  net::Response handle(net::Request& req) const override { return answer(req.head); }

 private:
  static net::Response plain(int status, std::string body, std::string outcome) {
    net::Response r;
    r.status = status;
    r.content_type = sniffed_content_type(body);
    r.body = std::move(body);
    r.log_fields.emplace_back("outcome", std::move(outcome));
    return r;
  }

  // In the order of webhook's: Go's server refuses a bad escape before anything else, then
  // gorilla/mux redirects, then its routes "/" and /{urlprefix}/{id} answer.
  net::Response answer(const net::RequestHead& head) const {
    if (head.path == "/") return plain(200, "OK", "root");  // no --response-header, as webhook
    auto decoded = decoded_path(head.path);
    if (!decoded) {
      net::Response r = plain(400, "400 Bad Request", "bad_path");
      r.close = true;
      return r;
    }
    if (std::string clean = cleaned_path(*decoded); clean != *decoded) {
      const size_t question = head.target.find('?');
      net::Response r = plain(301, "", "redirect");
      r.headers.emplace_back(
          "Location",
          go_escaped_path(clean) +
              (question == std::string::npos ? std::string() : head.target.substr(question)));
      return r;
    }
    return plain(404, "Hook not found.", "not_found");
  }

  std::string base_;
};

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

// Go's htmlSig: the tag, case-insensitive, then a space or '>'.
bool html_like(std::string_view text) {
  // clang-format off
  static const char* const tags[] = {"<!DOCTYPE HTML", "<HTML", "<HEAD", "<SCRIPT", "<IFRAME",
                                     "<H1", "<DIV", "<FONT", "<TABLE", "<A", "<STYLE", "<TITLE",
                                     "<B", "<BODY", "<BR", "<P", "<!--"};
  // clang-format on
  for (std::string_view tag : tags) {
    if (!starts_with_ci(text, tag) || text.size() == tag.size()) continue;
    char next = text[tag.size()];
    if (next == ' ' || next == '>') return true;
  }
  return false;
}

bool binary_byte(unsigned char c) {
  return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1A) || (c >= 0x1C && c <= 0x1F);
}

}  // namespace

std::string command_output_type(std::string_view output) {
  std::string type = sniffed_content_type(output);
  if (type.rfind("text/html", 0) == 0 || type.rfind("text/xml", 0) == 0) return k_text;
  return type;
}

std::string sniffed_content_type(std::string_view body) {
  if (body.empty()) return "";
  body = body.substr(0, 512);
  size_t first = body.find_first_not_of("\t\n\x0c\r ");
  std::string_view text = first == std::string_view::npos ? std::string_view() : body.substr(first);
  if (html_like(text)) return "text/html; charset=utf-8";
  if (text.substr(0, 5) == "<?xml") return "text/xml; charset=utf-8";
  auto starts = [&](std::string_view magic) { return body.substr(0, magic.size()) == magic; };
  if (starts("%PDF-")) return "application/pdf";
  if (starts("%!PS-Adobe-")) return "application/postscript";
  if (starts("\xFE\xFF")) return "text/plain; charset=utf-16be";
  if (starts("\xFF\xFE")) return "text/plain; charset=utf-16le";
  if (starts("\xEF\xBB\xBF")) return k_text;
  if (starts("GIF87a") || starts("GIF89a")) return "image/gif";
  if (starts("\x89PNG\x0D\x0A\x1A\x0A")) return "image/png";
  if (starts("\xFF\xD8\xFF")) return "image/jpeg";
  if (starts("\x1F\x8B\x08")) return "application/x-gzip";
  if (starts("PK\x03\x04")) return "application/zip";
  if (std::any_of(body.begin(), body.end(),
                  [](char c) { return binary_byte(static_cast<unsigned char>(c)); }))
    return "application/octet-stream";
  return k_text;
}

std::string executable(const std::string& command, const std::string& directory) {
  if (directory.empty() || command.empty() || command.front() == '/') return command;
  std::string joined = directory + "/" + command;
  if (joined.front() == '/') return joined;
  char here[4096];
  if (::getcwd(here, sizeof here) == nullptr) return joined;
  return std::string(here) + "/" + joined;
}

std::pair<std::string, std::string> parse_response_header(std::string_view text) {
  const size_t equals = text.find('=');
  std::string name(text.substr(0, equals));
  auto token = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  };
  if (equals == std::string_view::npos || name.empty() ||
      !std::all_of(name.begin(), name.end(), token))
    throw UsageError("bad --response-header '" + std::string(text) + "': use NAME=VALUE");
  std::string value(text.substr(equals + 1));
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
    throw UsageError("bad --response-header '" + name + "': its value holds a line break");
  return {name, value};
}

std::vector<std::string> parse_http_methods(std::string_view text) {
  std::vector<std::string> methods;
  for (size_t at = 0; at <= text.size();) {
    size_t comma = std::min(text.find(',', at), text.size());
    std::string method(text.substr(at, comma - at));
    at = comma + 1;
    const size_t begin = method.find_first_not_of(" \t");
    const size_t end = method.find_last_not_of(" \t");
    method = begin == std::string::npos ? "" : method.substr(begin, end - begin + 1);
    for (char& c : method) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (method.empty() || !std::all_of(method.begin(), method.end(), [](char c) {
          return std::isupper(static_cast<unsigned char>(c)) || c == '-' || c == '_';
        }))
      throw UsageError("bad --http-methods '" + std::string(text) +
                       "': give methods separated by commas, e.g. POST,PUT");
    methods.push_back(method);
  }
  return methods;
}

HooksFiles load_hooks_files(const ServeOptions& options) {
  auto read = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  std::vector<HooksFileText> texts;
  for (const auto& file : options.files) {
    auto text = read(file);
    if (!text) throw front::ConfigError(file + ": cannot read the hooks file");
    texts.push_back(HooksFileText{file, std::move(*text)});
  }
  return parse_hooks_files(
      texts, options.file_options,
      [](const std::string& name) {
        const char* v = std::getenv(name.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
      },
      read);
}

std::shared_ptr<const front::Route> hook_route(WebhookHook hook, const ServeOptions& options,
                                               std::shared_ptr<hooks::HookSlots> slots,
                                               hooks::RouteServices services) {
  return std::make_shared<WebhookRoute>(std::move(hook), options, std::move(slots),
                                        std::move(services));
}

std::shared_ptr<const front::Route> not_found_route(const std::string& urlprefix) {
  return std::make_shared<NotFoundRoute>(urlprefix);
}

std::function<std::unique_ptr<hooks::DeliveryEffect>(const core::Record&, const std::string&)>
stored_effect(const WebhookHook& hook) {
  auto kept = std::make_shared<const WebhookHook>(hook);
  return [kept](const core::Record& r,
                const std::string& key) -> std::unique_ptr<hooks::DeliveryEffect> {
    std::optional<hooks::Delivery> d = hooks::stored_delivery(r.request);
    if (!d) return nullptr;
    Request request = make_request(*kept, d->method, d->remote, d->headers, d->query,
                                   std::move(d->body), util::process_clock().now_ms() / 1000);
    if (!request.form_error.empty()) return nullptr;
    return std::make_unique<WebhookEffect>(prepared_run(*kept, request), key);
  };
}

}  // namespace idem::webhook
