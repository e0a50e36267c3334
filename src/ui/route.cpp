#include "ui/route.hpp"

#include <utility>

#include "ui/html.hpp"
#include "util/random.hpp"

namespace idem::http {

namespace {

constexpr std::string_view k_ui_csp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
constexpr const char* k_ui_session_cookie = "idem_ui";
constexpr const char* k_ui_token_cookie = "idem_ui_token";
constexpr uint64_t k_ui_max_body = 64 * 1024;

Response ui_response(int status, const char* content_type, std::string body) {
  Response r;
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

Response ui_html(int status, std::string body) {
  return ui_response(status, "text/html; charset=utf-8", std::move(body));
}

Response ui_message(int status, const std::string& title, const std::string& text) {
  return ui_html(status, render_ui_message(status, title, text));
}

Response ui_redirect(const std::string& location) {
  Response r = ui_response(303, "text/plain; charset=utf-8", "see " + location + "\n");
  r.headers.emplace_back("Location", location);
  return r;
}

bool ui_get_path(std::string_view path) {
  return path == "/ui" || path == "/ui/" || path == "/ui/rows" || path == "/ui/record" ||
         path == "/ui/app.js" || path == "/ui/app.css" || path == "/ui/icon.svg";
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
  if (code.rfind("bulk-", 0) == 0) {
    const std::string n = code.substr(5);
    for (char c : n)
      if (c < '0' || c > '9') return "";
    return "Re-ran " + n + " failed deliveries (at most " + std::to_string(k_ui_bulk_rerun_max) +
           " per request).";
  }
  return "";
}

class UiRoute final : public Route {
 public:
  UiRoute(UiBackend backend, UiOptions options)
      : backend_(std::move(backend)), options_(std::move(options)) {}

  bool matches(std::string_view path) const override { return is_ui_path(path); }

  Admission admit(const RequestHead& head) const override {
    auto host = head.headers.get("Host");
    if (!host || head.headers.count("Host") != 1 || (options_.loopback && !is_loopback_host(*host)))
      return refuse(ui_message(403, "Forbidden", "this page answers only at a loopback address"));
    const bool get = ui_get_path(head.path), post = ui_post_path(head.path);
    if (get || post) {
      const bool allowed =
          get ? head.method == "GET" || head.method == "HEAD" : head.method == "POST";
      if (!allowed) {
        Response r = ui_message(405, "Method not allowed", head.method + " is not allowed here");
        r.headers.emplace_back("Allow", get ? "GET, HEAD" : "POST");
        return refuse(std::move(r));
      }
    }
    if (options_.token && head.path != "/ui/login" && !authorized(head))
      return refuse(ui_html(401, render_ui_login("")));
    if (!head.chunked && head.content_length > k_ui_max_body)
      return refuse(ui_message(413, "Body too large", "a form of the page is smaller"));
    return Admission{std::nullopt, k_ui_max_body};
  }

  Response handle(Request& req) const override {
    const std::string& path = req.head.path;
    if (!ui_get_path(path) && !ui_post_path(path))
      return ui_message(404, "Not found", "the page has no such address");
    if (path == "/ui/app.js")
      return ui_response(200, "text/javascript; charset=utf-8", std::string(ui_app_js()));
    if (path == "/ui/icon.svg")
      return ui_response(200, "image/svg+xml", std::string(ui_icon_svg()));
    if (path == "/ui/app.css")
      return ui_response(200, "text/css; charset=utf-8", std::string(ui_app_css()));
    auto query = parse_form(query_of(req.head.target));
    if (!query) return ui_message(400, "Bad request", "the query is not validly percent-encoded");
    try {
      if (path == "/ui/login") return login(req);
      if (req.head.method == "POST") return post(req, path);
      std::string session;
      std::optional<std::string> set_cookie;
      if (auto cookie = req.head.headers.get("Cookie"))
        session = cookie_value(*cookie, k_ui_session_cookie).value_or("");
      if (session.size() != 32) {
        session = util::random_hex(16);
        set_cookie = std::string(k_ui_session_cookie) + "=" + session +
                     "; Path=/ui; HttpOnly; SameSite=Strict";
      }
      Response r = get(path, *query, csrf_for(session));
      if (set_cookie) r.headers.emplace_back("Set-Cookie", *set_cookie);
      return r;
    } catch (const std::exception& e) {
      Response r = ui_message(503, "Store unavailable", "the store could not be read; try again");
      r.log_fields.emplace_back("error", e.what());
      return r;
    }
  }

 private:
  static Admission refuse(Response r) { return Admission{std::move(r), 0}; }

  bool authorized(const RequestHead& head) const {
    if (auto value = head.headers.get("Authorization")) {
      std::string_view v = *value;
      if (v.rfind("Bearer ", 0) == 0 && same_bytes(v.substr(7), *options_.token)) return true;
    }
    if (auto cookie = head.headers.get("Cookie"))
      if (auto token = cookie_value(*cookie, k_ui_token_cookie))
        return same_bytes(*token, *options_.token);
    return false;
  }

  std::string csrf_for(const std::string& session) const {
    return hmac_sha256_hex(options_.csrf_secret, session);
  }

  // A POST comes from this page: its Origin is this host's, and its form carries the token of
  // the session cookie it sends. Under Referrer-Policy: no-referrer a browser sends "Origin: null"
  // on a form's POST; then Sec-Fetch-Site, which no page can set, must say same-origin.
  std::optional<Response> forged(const Request& req,
                                 const std::vector<std::pair<std::string, std::string>>& form,
                                 bool check_csrf) const {
    auto origin = req.head.headers.get("Origin");
    auto host = req.head.headers.get("Host");
    auto site = req.head.headers.get("Sec-Fetch-Site");
    const std::string here(host.value_or(""));
    const bool same_origin =
        origin && (*origin == "http://" + here || *origin == "https://" + here ||
                   (*origin == "null" && site && *site == "same-origin"));
    if (!same_origin || (site && *site != "same-origin"))
      return ui_message(403, "Forbidden", "the request does not come from this page (Origin)");
    if (!check_csrf) return std::nullopt;
    std::string session;
    if (auto cookie = req.head.headers.get("Cookie"))
      session = cookie_value(*cookie, k_ui_session_cookie).value_or("");
    if (session.empty() || !same_bytes(first_value(form, "csrf"), csrf_for(session)))
      return ui_message(403, "Forbidden",
                        "the form's CSRF token is missing or wrong; reload the page");
    return std::nullopt;
  }

  Response login(Request& req) const {
    auto form = parse_form(req.body);
    if (!form) return ui_message(400, "Bad request", "the form is not validly encoded");
    if (auto refusal = forged(req, *form, false)) return std::move(*refusal);
    if (!options_.token) return ui_redirect("/ui");
    if (!same_bytes(first_value(*form, "token"), *options_.token))
      return ui_html(401, render_ui_login("That is not the token."));
    Response r = ui_redirect("/ui");
    r.headers.emplace_back("Set-Cookie", std::string(k_ui_token_cookie) + "=" + *options_.token +
                                             "; Path=/ui; HttpOnly; SameSite=Strict");
    return r;
  }

  Response get(const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& query,
               const std::string& csrf) const {
    const int64_t now = backend_.now_ms();
    const std::string notice = notice_text(first_value(query, "notice"));
    if (path == "/ui/record") {
      const std::string key = first_value(query, "key");
      auto record = key.empty() ? std::nullopt : backend_.get(key);
      if (!record) return ui_message(404, "No such record", "there is no record for this key");
      return ui_html(200, render_ui_detail(*record, backend_.attempts(*record), now, csrf,
                                           backend_.rerunnable(*record), notice));
    }
    auto parsed = parse_ui_filter(query);
    if (auto* error = std::get_if<std::string>(&parsed)) {
      UiPage empty;
      if (path == "/ui/rows") return ui_message(400, "Bad filter", *error);
      return ui_html(400, render_ui_list(empty, now, csrf, "", *error));
    }
    UiPage page = collect_ui_page(backend_, std::get<UiFilter>(parsed), now);
    if (path == "/ui/rows") return ui_html(200, render_ui_rows(page, now));
    return ui_html(200, render_ui_list(page, now, csrf, notice, ""));
  }

  Response post(Request& req, const std::string& path) const {
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
    if (!backend_.rerunnable(*record)) return ui_redirect(detail + "&notice=not_rerun");
    UiRerun done = backend_.rerun(*record);
    Response r = ui_redirect(detail + (done.ran ? "&notice=rerun" : "&notice=not_rerun"));
    r.log_fields.emplace_back("key", key);
    r.log_fields.emplace_back("outcome", done.ran ? "rerun" : "not_rerun");
    return r;
  }

  // Failed hook deliveries of the filter, newest first, re-run one after another: at most
  // k_ui_bulk_rerun_max per request, so a request stays bounded; the count is reported.
  Response rerun_failed(const std::vector<std::pair<std::string, std::string>>& form) const {
    auto parsed = parse_ui_filter(form);
    if (auto* error = std::get_if<std::string>(&parsed))
      return ui_message(400, "Bad filter", *error);
    UiFilter filter = std::get<UiFilter>(parsed);
    filter.status = core::Status::failed;
    filter.after.reset();
    std::vector<core::Record> chosen;
    backend_.list(ui_listing(filter, backend_.now_ms()), [&](const core::Record& r) {
      if (backend_.rerunnable(r)) chosen.push_back(r);
      return chosen.size() < k_ui_bulk_rerun_max;
    });
    int ran = 0;
    for (const core::Record& r : chosen)
      if (auto fresh = backend_.get(r.key); fresh && backend_.rerunnable(*fresh))
        ran += backend_.rerun(*fresh).ran ? 1 : 0;
    Response r = ui_redirect("/ui?notice=bulk-" + std::to_string(ran));
    r.log_fields.emplace_back("outcome", "rerun_failed");
    return r;
  }

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

std::shared_ptr<const Route> ui_route(UiBackend backend, UiOptions options) {
  return std::make_shared<UiRoute>(std::move(backend), std::move(options));
}

bool is_ui_path(std::string_view path) { return path == "/ui" || path.rfind("/ui/", 0) == 0; }

bool is_loopback_host(std::string_view host) {
  // Drop the port: "[::1]:8787", "127.0.0.1:8787", "localhost:8787".
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return close != std::string_view::npos && host.substr(1, close - 1) == "::1";
  }
  host = host.substr(0, host.find(':'));
  if (host == "localhost") return true;
  if (host.rfind("127.", 0) != 0) return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.')
      ++dots;
    else if (c < '0' || c > '9')
      return false;
  }
  return dots == 3;
}

}  // namespace idem::http
