#include "ui/route.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "front/store_failure.hpp"
#include "net/ip_range.hpp"
#include "ui/html.hpp"
#include "util/clock.hpp"
#include "util/hex.hpp"
#include "util/random.hpp"
#include "util/secret.hpp"

namespace idem::ui {

namespace {

constexpr std::string_view k_ui_csp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
constexpr std::string_view k_ui_session_cookie = "idem_ui_session";
constexpr uint64_t k_ui_max_body = 64 * 1024;
// A download's reads from the store, each one chunk to the client.
constexpr int64_t k_ui_download_window = 256 * 1024;

net::Response ui_response(int status, const char* content_type, std::string body) {
  net::Response r;
  r.status = status;
  r.content_type = content_type;
  r.body = std::move(body);
  r.headers.emplace_back("Content-Security-Policy", std::string(k_ui_csp));
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("Cache-Control", "no-store");
  r.log_fields.emplace_back("family", "ui");
  return r;
}

net::Response ui_html(int status, std::string body) {
  return ui_response(status, "text/html; charset=utf-8", std::move(body));
}

net::Response ui_message(int status, const std::string& title, const std::string& text) {
  return ui_html(status, render_ui_message(status, title, text));
}

net::Response ui_redirect(const std::string& location) {
  net::Response r = ui_response(303, "text/plain; charset=utf-8", "see " + location + "\n");
  r.headers.emplace_back("Location", location);
  return r;
}

bool ui_get_path(std::string_view path) {
  return ui_stream_name(path).has_value() || path == "/" || path == "/ui" || path == "/ui/" ||
         path == "/ui/rows" || path == "/ui/record" || path == "/ui/output" ||
         path == "/ui/progress" || path == "/ui/app.js" || path == "/ui/app.css" ||
         path == "/ui/icon.svg" || path == "/ui/login" || path == "/ui/queues" ||
         path == "/ui/schedules";
}

// What answers without a login: the login itself, and what its page is drawn with.
bool ui_public_path(std::string_view path) {
  return path == "/" || path == "/ui/login" || path == "/ui/app.css" || path == "/ui/app.js" ||
         path == "/ui/icon.svg";
}

bool ui_post_path(std::string_view path) {
  return path == "/ui/remove" || path == "/ui/rerun" || path == "/ui/rerun-failed" ||
         path == "/ui/login";
}

std::string query_of(const std::string& target) {
  const size_t q = target.find('?');
  return q == std::string::npos ? "" : target.substr(q + 1);
}

std::string first_value(const std::vector<std::pair<std::string, std::string>>& pairs,
                        std::string_view name) {
  for (const auto& [n, v] : pairs)
    if (n == name) return v;
  return "";
}

// The fixed lines a redirect's ?notice= names: never text from the request.
std::string notice_text(const std::string& code) {
  if (code == "removed") return "Record removed.";
  if (code == "not_found") return "No such record (removed meanwhile?).";
  if (code == "running") return "The record is running: it was not removed.";
  if (code == "rerun") return "Re-run done: a new attempt was recorded.";
  if (code == "not_rerun") return "Not re-run: only a failed delivery of a configured hook can be.";
  if (code == "rerun_running") return "The record is running: it was not re-run.";
  if (code == "bulk-started") return "Re-run started in the background: its progress shows here.";
  if (code == "bulk-busy") return "Another re-run is under way: wait for it to end.";
  return "";
}

class UiRoute final : public front::Route {
 public:
  UiRoute(UiBackend backend, UiOptions options)
      : backend_(std::move(backend)), options_(std::move(options)) {}

  // "/" too: the page's listener sends it to /ui/.
  bool matches(std::string_view path) const override { return path == "/" || is_ui_path(path); }

  net::Admission admit(const net::RequestHead& head) const override {
    auto host = head.headers.get("Host");
    if (!host || head.headers.count("Host") != 1 ||
        (options_.loopback && !net::is_loopback_host(*host)))
      return refuse(ui_message(403, "Forbidden", "this page answers only at a loopback address"));
    const bool get = ui_get_path(head.path), post = ui_post_path(head.path);
    if (get || post) {
      const bool allowed = (get && (head.method == "GET" || head.method == "HEAD")) ||
                           (post && head.method == "POST");
      if (!allowed) {
        net::Response r =
            ui_message(405, "Method not allowed", head.method + " is not allowed here");
        r.headers.emplace_back("Allow", get && post ? "GET, HEAD, POST"
                                        : get       ? "GET, HEAD"
                                                    : "POST");
        return refuse(std::move(r));
      }
    }
    if (!ui_public_path(head.path) && !authorized(head)) {
      const bool expired = !session_of(head).empty();
      net::Response r =
          ui_html(401, render_ui_login(expired ? "Your session has ended: log in again." : ""));
      if (expired) r.headers.emplace_back("Set-Cookie", cookie(head, "", 0));
      return refuse(std::move(r));
    }
    if (!head.chunked && head.content_length > k_ui_max_body)
      return refuse(ui_message(413, "Body too large", "a form of the page is smaller"));
    return net::Admission{std::nullopt, k_ui_max_body};
  }

  net::Response handle(net::Request& req) const override {
    const std::string& path = req.head.path;
    if (!ui_get_path(path) && !ui_post_path(path))
      return ui_message(404, "Not found", "the page has no such address");
    if (path == "/") return ui_redirect("/ui");
    if (path == "/ui/app.js")
      return ui_response(200, "text/javascript; charset=utf-8", std::string(ui_app_js()));
    if (path == "/ui/icon.svg")
      return ui_response(200, "image/svg+xml", std::string(ui_icon_svg()));
    if (path == "/ui/app.css")
      return ui_response(200, "text/css; charset=utf-8", std::string(ui_app_css()));
    auto query = parse_form(query_of(req.head.target));
    if (!query) return ui_message(400, "Bad request", "the query is not validly percent-encoded");
    try {
      if (path == "/ui/login") return login(req, *query);
      if (req.head.method == "POST") return post(req, path);
      if (auto name = ui_stream_name(path)) return events(req.head, *name, *query);
      return get(path, *query, csrf_for(session_of(req.head)));
    } catch (const std::exception& e) {
      front::StoreFailureAnswer s = front::store_failure_answer(e);
      net::Response r = ui_message(s.status, s.title, s.detail);
      for (auto& header : s.headers) r.headers.push_back(std::move(header));
      r.log_fields.emplace_back("error", e.what());
      return r;
    }
  }

 private:
  static net::Admission refuse(net::Response r) { return net::Admission{std::move(r), 0}; }

  const UiCredentials& credentials() const { return *options_.credentials; }

  // The session cookie's value as sent (not yet checked); empty: none.
  static std::string session_of(const net::RequestHead& head) {
    auto header = head.headers.get("Cookie");
    return header ? cookie_value(*header, k_ui_session_cookie).value_or("") : "";
  }

  bool bearer(const net::RequestHead& head) const {
    auto value = head.headers.get("Authorization");
    if (!value) return false;
    std::string_view v = *value;
    return v.rfind("Bearer ", 0) == 0 && util::same_secret(v.substr(7), credentials().token);
  }

  // A live session (the cookie of a login), or the UI token as a bearer token (a script's).
  bool authorized(const net::RequestHead& head) const {
    if (bearer(head)) return true;
    const std::string session = session_of(head);
    return !session.empty() && valid_ui_session(credentials().secret, session, backend_.now_ms());
  }

  // The session cookie, Secure where the page is reached over TLS (its own, or a proxy's that
  // says so); an empty value with max_age 0 ends it.
  std::string cookie(const net::RequestHead& head, const std::string& value,
                     int64_t max_age_s) const {
    auto proto = head.headers.get("X-Forwarded-Proto");
    const bool secure = options_.tls || (proto && *proto == "https");
    return std::string(k_ui_session_cookie) + "=" + value +
           "; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=" + std::to_string(max_age_s) +
           (secure ? "; Secure" : "");
  }

  std::string csrf_for(const std::string& session) const {
    return util::hmac_hex(util::Digest::sha256, credentials().secret, "csrf:" + session);
  }

  // A POST comes from this page. A browser says so itself in Sec-Fetch-Site, which no page can
  // set (behind a reverse proxy the Host it rewrites differs from the page's Origin); a client
  // that does not send it must send the Origin of this Host. A form posted with a session also
  // carries the CSRF token of that session; a script sending the UI token as a bearer token
  // needs neither (a browser never adds that header to another site's request).
  std::optional<net::Response> forged(const net::Request& req,
                                      const std::vector<std::pair<std::string, std::string>>& form,
                                      bool check_csrf) const {
    if (check_csrf && bearer(req.head)) return std::nullopt;
    auto origin = req.head.headers.get("Origin");
    auto host = req.head.headers.get("Host");
    auto site = req.head.headers.get("Sec-Fetch-Site");
    const std::string here(host.value_or(""));
    const bool same_origin =
        site ? *site == "same-origin"
             : origin && (*origin == "http://" + here || *origin == "https://" + here);
    if (!same_origin)
      return ui_message(403, "Forbidden", "the request does not come from this page (Origin)");
    if (!check_csrf) return std::nullopt;
    const std::string session = session_of(req.head);
    if (session.empty() || !util::same_secret(first_value(form, "csrf"), csrf_for(session)))
      return ui_message(403, "Forbidden",
                        "the form's CSRF token is missing or wrong; reload the page");
    return std::nullopt;
  }

  // Whether `token` logs in: the UI token, or the one-time token of the printed URL (once).
  bool logs_in(const std::string& token) const {
    UiCredentials& c = *options_.credentials;
    if (util::same_secret(token, c.token)) return true;
    if (!util::same_secret(token, c.login_once)) return false;
    bool unused = false;
    return c.login_once_used.compare_exchange_strong(unused, true);
  }

  // GET /ui/login?token=T (the printed URL) or the form's POST: a session cookie, and a
  // redirect to the list that drops the token from the address bar and the history.
  net::Response login(net::Request& req,
                      const std::vector<std::pair<std::string, std::string>>& query) const {
    std::string token;
    if (req.head.method == "POST") {
      auto form = parse_form(req.body);
      if (!form) return ui_message(400, "Bad request", "the form is not validly encoded");
      if (auto refusal = forged(req, *form, false)) return std::move(*refusal);
      token = first_value(*form, "token");
    } else {
      token = first_value(query, "token");
      if (token.empty()) return ui_html(200, render_ui_login(""));
    }
    if (!logs_in(token)) {
      net::Response r =
          ui_html(401, render_ui_login("That is not the token (the printed link works once; the "
                                       "token file's works always)."));
      r.log_fields.emplace_back("outcome", "login_refused");
      return r;
    }
    const std::string session =
        make_ui_session(credentials().secret, backend_.now_ms(), options_.session_ms);
    net::Response r = ui_redirect("/ui");
    r.headers.emplace_back("Set-Cookie", cookie(req.head, session, options_.session_ms / 1000));
    r.log_fields.emplace_back("outcome", "login");
    return r;
  }

  net::Response get(const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& query,
                    const std::string& csrf) const {
    const int64_t now = backend_.now_ms();
    const std::string notice = notice_text(first_value(query, "notice"));
    if (path == "/ui/progress") {
      const UiBulkRerun::Progress progress = options_.bulk->progress();
      net::Response r = ui_response(200, "text/plain; charset=utf-8", progress.line());
      r.headers.emplace_back("Idem-Rerun-Active", progress.active ? "true" : "false");
      return r;
    }
    if (path == "/ui/record") {
      const std::string key = first_value(query, "key");
      auto record = key.empty() ? std::nullopt : backend_.get(key);
      if (!record) return ui_message(404, "No such record", "there is no record for this key");
      const core::Record& r = *record;
      const UiOutput output = read_ui_output(backend_.open_output(r));
      const int64_t before = std::atoll(first_value(query, "attempts_before").c_str());
      return ui_html(
          200, render_ui_detail(r, output, backend_.attempts(r, std::max<int64_t>(before, 0)), now,
                                csrf, backend_.rerunnable(r), notice));
    }
    if (path == "/ui/output") return download(query);
    if (path == "/ui/queues")
      return ui_html(
          200, render_ui_queues(backend_.queues ? backend_.queues() : std::vector<UiQueue>{}, now,
                                size_t(k_ui_queue_rows)));
    if (path == "/ui/schedules")
      return ui_html(200, render_ui_schedules(backend_.schedules ? backend_.schedules()
                                                                 : std::vector<UiSchedule>{}));
    auto parsed = parse_ui_filter(query);
    if (auto* error = std::get_if<std::string>(&parsed)) {
      UiPage empty;
      if (path == "/ui/rows") return ui_message(400, "Bad filter", *error);
      return ui_html(400, render_ui_list(empty, now, csrf, "", *error));
    }
    UiPage page = collect_ui_page(backend_, std::get<UiFilter>(parsed), now);
    if (path == "/ui/rows") return ui_html(200, render_ui_rows(page, now));
    for (const core::Record& r : page.rows)
      if (backend_.rerunnable(r)) page.rerunnable.push_back(r.key);
    const UiBulkRerun::Progress progress = options_.bulk->progress();
    page.progress = progress.line();
    page.progress_active = progress.active;
    return ui_html(200, render_ui_list(page, now, csrf, notice, ""));
  }

  // GET /ui/output?key=K&stream=stdout|stderr: one stream of the record's output, whole,
  // streamed as it is read from the store a window at a time (never held whole).
  net::Response download(const std::vector<std::pair<std::string, std::string>>& query) const {
    const std::string key = first_value(query, "key");
    const std::string name = first_value(query, "stream");
    if (name != "stdout" && name != "stderr")
      return ui_message(400, "Bad request", "stream must be stdout or stderr");
    auto record = key.empty() ? std::nullopt : backend_.get(key);
    if (!record) return ui_message(404, "No such record", "there is no record for this key");
    const core::Stream wanted = name == "stdout" ? core::Stream::out : core::Stream::err;
    net::Response r = ui_response(200, "application/octet-stream", "");
    r.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + name + "\"");
    r.log_fields.emplace_back("outcome", "download");
    // Copies of the opener and of the record: the stream runs after handle() returned, and
    // holds a store connection only while it runs.
    r.stream = [open = backend_.open_output, rec = std::move(*record),
                wanted](const std::function<bool(std::string_view)>& write) {
      bool sent = true;
      const core::OutputWalk walk = core::walk_output(
          open(rec), [&](core::Stream s) { return s == wanted; },
          [&](core::Stream, std::string_view piece) {
            sent = write(piece);
            return sent ? core::Take::more : core::Take::stop;
          },
          core::WalkLimits{k_ui_download_window, 0});
      // Whole only if the frames met hold every stored byte: a new attempt of the key, which
      // takes this one's output away, cuts the download rather than ending it.
      return sent && walk.complete &&
             walk.size(core::Stream::out) + walk.size(core::Stream::err) == rec.output_bytes;
    };
    return r;
  }

  // GET /ui/attempts/{name}/output: the output of the key's latest attempt as server-sent events
  // (SPEC §10), from the first byte or from the offset of Last-Event-ID, live while it runs; an
  // `end` event once it has ended. At most k_ui_max_streams at once.
  net::Response events(const net::RequestHead& head, const std::string& name,
                       const std::vector<std::pair<std::string, std::string>>& query) const {
    // ?attempt=N: that attempt alone, so a reconnect never resumes inside a later one.
    int64_t attempt = 0;
    if (const std::string a = first_value(query, "attempt"); !a.empty()) {
      if (a.size() > 18 || a.find_first_not_of("0123456789") != std::string::npos)
        return ui_message(400, "Bad request", "attempt must be an attempt's number");
      attempt = std::atoll(a.c_str());
    }
    int64_t from = 0;
    if (auto last = head.headers.get("Last-Event-ID")) {
      const std::string_view id = *last;
      if (id.empty() || id.size() > 18 ||
          id.find_first_not_of("0123456789") != std::string_view::npos)
        return ui_message(400, "Bad request", "Last-Event-ID must be a byte offset");
      from = std::atoll(std::string(id).c_str());
    }
    if (!backend_.get(name))
      return ui_message(404, "No such record", "there is no record for this key");
    if (streams_->fetch_add(1) >= k_ui_max_streams) {
      streams_->fetch_sub(1);
      net::Response r = ui_message(503, "Busy", "too many output streams are open; try again");
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    net::Response r = ui_response(200, "text/event-stream; charset=utf-8", "");
    r.headers.emplace_back("X-Accel-Buffering", "no");  // a proxy in front passes events on
    r.log_fields.emplace_back("outcome", "events");
    // Taken above; given back when the stream (the last copy of its function) is gone.
    class Slot {
     public:
      explicit Slot(std::shared_ptr<std::atomic<int>> streams) : streams_(std::move(streams)) {}
      Slot(const Slot&) = delete;
      Slot& operator=(const Slot&) = delete;
      ~Slot() { streams_->fetch_sub(1); }

     private:
      std::shared_ptr<std::atomic<int>> streams_;
    };
    auto slot = std::make_shared<Slot>(streams_);
    r.stream = [slot, follow = backend_.follow(name, from, attempt), stopping = backend_.stopping,
                now = backend_.now_ms](const std::function<bool(std::string_view)>& write) {
      std::string event;
      int64_t last_write = now();
      bool emitted = false;
      const UiEmit emit = [&](core::Stream stream, std::string_view bytes, int64_t after) {
        emitted = true;
        const int64_t first = after - int64_t(bytes.size());
        for (size_t at = 0; at < bytes.size(); at += k_ui_event_bytes) {
          const std::string_view piece = bytes.substr(at, k_ui_event_bytes);
          event = "event: ";
          event += core::stream_name(stream);
          event += "\nid: " + std::to_string(first + int64_t(at + piece.size())) + "\ndata: ";
          event += util::to_base64(piece);
          event += "\n\n";
          if (!write(event)) return false;
        }
        last_write = now();
        return true;
      };
      // A comment first: the client sees the stream open before any output comes.
      if (!write(": idem\n\n")) return false;
      for (;;) {
        emitted = false;
        std::optional<std::string> end = follow(emit);
        if (end) return write("event: end\ndata: " + *end + "\n\n");
        if (stopping && stopping()) return true;  // the client reconnects with Last-Event-ID
        if (!write({})) return false;             // the client left: its slot is free at once
        if (now() - last_write >= k_ui_stream_keepalive_ms) {
          if (!write(": keepalive\n\n")) return false;
          last_write = now();
        }
        if (!emitted) util::process_clock().sleep_ms(k_ui_stream_pause_ms);
      }
    };
    return r;
  }

  net::Response post(net::Request& req, const std::string& path) const {
    auto form = parse_form(req.body);
    if (!form) return ui_message(400, "Bad request", "the form is not validly encoded");
    if (auto refusal = forged(req, *form, true)) return std::move(*refusal);
    if (path == "/ui/rerun-failed") return rerun_failed(*form);
    const std::string key = first_value(*form, "key");
    if (key.empty()) return ui_message(400, "Bad request", "the form names no key");
    const std::string detail = "/ui/record?key=" + url_component(key);
    if (path == "/ui/remove") {
      switch (backend_.remove(key)) {
        case UiRemoved::removed:
          return ui_redirect("/ui?notice=removed");
        case UiRemoved::not_found:
          return ui_redirect("/ui?notice=not_found");
        case UiRemoved::running:
          return ui_redirect(detail + "&notice=running");
      }
    }
    auto record = backend_.get(key);
    if (!record) return ui_redirect("/ui?notice=not_found");
    if (record->status == core::Status::running)
      return ui_redirect(detail + "&notice=rerun_running");
    if (!backend_.rerunnable(*record)) return ui_redirect(detail + "&notice=not_rerun");
    UiRerun done = backend_.rerun(*record);
    net::Response r = ui_redirect(detail + (done.ran ? "&notice=rerun" : "&notice=not_rerun"));
    r.log_fields.emplace_back("key", key);
    r.log_fields.emplace_back("outcome", done.ran ? "rerun" : "not_rerun");
    return r;
  }

  // The failed deliveries a list page showed (its form names their keys), re-run one after
  // another in the background, each only if it is still a failed delivery of a configured hook;
  // the list shows the progress. One such re-run at a time.
  net::Response rerun_failed(const std::vector<std::pair<std::string, std::string>>& form) const {
    std::vector<std::string> keys;
    for (const auto& [name, value] : form)
      if (name == "key" && !value.empty()) keys.push_back(value);
    if (keys.empty()) return ui_message(400, "Bad request", "the form names no key");
    if (keys.size() > k_ui_bulk_rerun_max)
      return ui_message(400, "Bad request",
                        "at most " + std::to_string(k_ui_bulk_rerun_max) + " keys a re-run");
    if (!options_.bulk->start(keys.size())) return ui_redirect("/ui?notice=bulk-busy");
    auto work = [backend = backend_, bulk = options_.bulk, keys = std::move(keys)] {
      for (const std::string& key : keys) {
        bool ran = false;
        try {
          if (auto fresh = backend.get(key); fresh && backend.rerunnable(*fresh))
            ran = backend.rerun(*fresh).ran;
        } catch (const std::exception&) {
          // A store that failed for one key: counted as not re-run; the next key is tried.
        }
        bulk->step(ran);
      }
      bulk->finish();
    };
    if (backend_.background)
      backend_.background(std::move(work));
    else
      work();
    net::Response r = ui_redirect("/ui?notice=bulk-started");
    r.log_fields.emplace_back("outcome", "rerun_failed");
    return r;
  }
  // Event streams open now (k_ui_max_streams); shared with the streams, which end after the route
  // may have been dropped by a reload.
  const std::shared_ptr<std::atomic<int>> streams_ = std::make_shared<std::atomic<int>>(0);

  const UiBackend backend_;
  const UiOptions options_;
};

}  // namespace

UiListing ui_listing(const UiFilter& filter, int64_t now_ms) {
  UiListing listing;
  listing.status = filter.status;
  listing.prefix = filter.key_prefix();
  listing.kind = filter.kind();
  listing.result = filter.result;
  listing.since_ms = filter.since_ms;
  listing.until_ms = filter.until_ms;
  listing.after = filter.after;
  listing.now_ms = now_ms;
  listing.scan_limit = k_ui_scan_budget;
  return listing;
}

UiPage collect_ui_page(const UiBackend& backend, const UiFilter& filter, int64_t now_ms) {
  UiPage page;
  page.filter = filter;
  bool more = false;
  const std::optional<UiCursor> stop =
      backend.list(ui_listing(filter, now_ms), [&](const core::Record& r) {
        if (page.rows.size() == k_ui_page_rows) {
          more = true;  // one more: there is an older page
          return false;
        }
        page.rows.push_back(r);
        return true;
      });
  page.scanned = int64_t(page.rows.size());
  if (more) {
    page.next = UiCursor{page.rows.back().started_ms, page.rows.back().key};
  } else if (stop) {
    // The store read its budget of entries: the next page goes on after the last one read.
    page.next = stop;
    page.budget_spent = page.rows.size() < k_ui_page_rows;
    if (page.budget_spent) page.scanned = k_ui_scan_budget;
  }
  return page;
}

bool UiBulkRerun::start(size_t total) {
  std::lock_guard lock(mutex_);
  if (progress_.active) return false;
  progress_ = Progress{true, total, 0, 0};
  return true;
}

void UiBulkRerun::step(bool ran) {
  std::lock_guard lock(mutex_);
  ++progress_.done;
  progress_.ran += ran ? 1 : 0;
}

void UiBulkRerun::finish() {
  std::lock_guard lock(mutex_);
  progress_.active = false;
}

UiBulkRerun::Progress UiBulkRerun::progress() const {
  std::lock_guard lock(mutex_);
  return progress_;
}

std::string UiBulkRerun::Progress::line() const {
  if (total == 0) return "";
  const std::string skipped =
      done > ran ? ", " + std::to_string(done - ran) + " skipped (running, or no longer failed)"
                 : "";
  if (active)
    return "Re-running " + std::to_string(total) + " failed deliveries: " + std::to_string(done) +
           " done (" + std::to_string(ran) + " ran again" + skipped + ")…";
  return "Re-run of " + std::to_string(total) + " failed deliveries done: " + std::to_string(ran) +
         " ran again" + skipped + ".";
}

namespace {

// What signs a session cookie's value (its expiry and random id), in hex.
std::string session_mac(const std::string& secret, const std::string& signed_part) {
  return util::hmac_hex(util::Digest::sha256, secret, "session:" + signed_part);
}

}  // namespace

std::string make_ui_session(const std::string& secret, int64_t now_ms, int64_t lifetime_ms) {
  const std::string signed_part = std::to_string(now_ms + lifetime_ms) + "." + util::random_hex(16);
  return signed_part + "." + session_mac(secret, signed_part);
}

bool valid_ui_session(const std::string& secret, std::string_view value, int64_t now_ms) {
  const size_t last = value.rfind('.');
  if (last == std::string_view::npos || value.size() > 256) return false;
  const std::string signed_part(value.substr(0, last));
  if (!util::same_secret(value.substr(last + 1), session_mac(secret, signed_part))) return false;
  const size_t dot = signed_part.find('.');
  int64_t expiry = 0;
  for (size_t i = 0; i < dot && i < signed_part.size(); ++i) {
    if (signed_part[i] < '0' || signed_part[i] > '9' || i >= 18) return false;
    expiry = expiry * 10 + (signed_part[i] - '0');
  }
  return dot != std::string::npos && dot > 0 && now_ms < expiry;
}

std::shared_ptr<const front::Route> ui_route(UiBackend backend, UiOptions options) {
  return std::make_shared<UiRoute>(std::move(backend), std::move(options));
}

std::optional<std::string> ui_stream_name(std::string_view path) {
  constexpr std::string_view prefix = "/ui/attempts/", suffix = "/output";
  if (path.size() <= prefix.size() + suffix.size() || path.substr(0, prefix.size()) != prefix ||
      path.substr(path.size() - suffix.size()) != suffix)
    return std::nullopt;
  auto name = percent_decode(
      path.substr(prefix.size(), path.size() - prefix.size() - suffix.size()), false);
  if (!name || name->empty()) return std::nullopt;
  return name;
}

bool is_ui_path(std::string_view path) { return path == "/ui" || path.rfind("/ui/", 0) == 0; }

}  // namespace idem::ui
