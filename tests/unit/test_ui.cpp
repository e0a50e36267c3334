// The delivery-log page's pure parts (ui/): escaping, forms, cookies, the CSRF HMAC, filters,
// the cursor, the rendering of hostile records, and a page's bounded collection.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/history.hpp"
#include "ui/filter.hpp"
#include "ui/html.hpp"
#include "ui/page.hpp"
#include "ui/route.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_ui {

using namespace idem::front;
using namespace idem::net;
using namespace idem::ui;  // NOLINT: the names under test
using idem::core::Record;
using idem::core::Status;

TEST_CASE("html_escape: markup characters, quotes, controls and bad UTF-8", "[ui]") {
  CHECK(html_escape("plain") == "plain");
  CHECK(html_escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
  CHECK(html_escape("\"'&") == "&quot;&#39;&amp;");
  CHECK(html_escape("a\"><img src=x onerror=alert(1)>") ==
        "a&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
  CHECK(html_escape("tab\tnl\ncr\r") == "tab\tnl\ncr\r");
  CHECK(html_escape(std::string("a\0b\x1b\x7f", 5)) ==
        "a\xEF\xBF\xBD"
        "b\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(html_escape("é€😀") == "é€😀");
  // Invalid UTF-8: a lone continuation byte, an overlong '<', a surrogate, a cut sequence.
  CHECK(html_escape("\x80") == "\xEF\xBF\xBD");
  CHECK(html_escape("\xC0\xBC") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(html_escape("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(html_escape("x\xE2\x82") == "x\xEF\xBF\xBD\xEF\xBF\xBD");
  // Bidirectional formatting characters are shown, not obeyed: "invoice-\u202Efdp.exe".
  CHECK(html_escape("invoice-\xE2\x80\xAE"
                    "fdp.exe") == "invoice-[U+202E]fdp.exe");
  CHECK(html_escape("\xE2\x81\xA6x\xE2\x81\xA9\xE2\x80\x8F\xD8\x9C") ==
        "[U+2066]x[U+2069][U+200F][U+061C]");
  CHECK(html_escape("\xE2\x80\x94\xE2\x80\xAF") == "\xE2\x80\x94\xE2\x80\xAF");  // a dash, a space
  // Nothing that could open a tag or end an attribute survives, for any byte.
  for (int b = 0; b < 256; ++b) {
    const std::string out = html_escape(std::string(1, char(b)) + "<\"'>");
    CHECK(out.find_first_of("<>\"'") == std::string::npos);
  }
}

TEST_CASE("url_component and parse_form are inverse; bad escapes are refused", "[ui]") {
  const std::string hostile = "/hooks/x#a b&c=d%e+f\xff<>";
  auto pairs = parse_form("key=" + url_component(hostile) + "&x=1+2&&empty=&flag");
  REQUIRE(pairs);
  REQUIRE(pairs->size() == 4);
  CHECK((*pairs)[0] == std::pair<std::string, std::string>{"key", hostile});
  CHECK((*pairs)[1].second == "1 2");
  CHECK((*pairs)[2].second.empty());
  CHECK((*pairs)[3] == std::pair<std::string, std::string>{"flag", ""});
  CHECK_FALSE(parse_form("a=%zz"));
  CHECK_FALSE(parse_form("a=%4"));
  CHECK_FALSE(parse_form("a=%"));
}

TEST_CASE("cookie_value finds a cookie by its exact name", "[ui]") {
  CHECK(cookie_value("a=1; idem_ui=abc; b=2", "idem_ui") == "abc");
  CHECK(cookie_value("xidem_ui=no; idem_ui=yes", "idem_ui") == "yes");
  CHECK_FALSE(cookie_value("idem_ui_token=t", "idem_ui"));
  CHECK_FALSE(cookie_value("", "idem_ui"));
}

TEST_CASE("ui cursor: encoded and decoded, any key bytes; garbage refused", "[ui][cursor]") {
  const UiCursor c{1733220000123, std::string("/h#k\0\xff&", 7)};
  CHECK(decode_ui_cursor(encode_ui_cursor(c)) == c);
  CHECK(encode_ui_cursor({5, "ab"}) == "5.6162");
  CHECK(decode_ui_cursor("5.") == UiCursor{5, ""});
  CHECK_FALSE(decode_ui_cursor("5"));
  CHECK_FALSE(decode_ui_cursor("x.61"));
  CHECK_FALSE(decode_ui_cursor("5.6"));
  CHECK_FALSE(decode_ui_cursor("5.zz"));
  CHECK_FALSE(decode_ui_cursor("-5.61"));
}

TEST_CASE("ui filter: parsed, reported, and written back as a query", "[ui][filter]") {
  auto parsed =
      parse_ui_filter(*parse_form("status=failed&front=hook&hook=%2Fhooks%2Fx&prefix=ab&since=2026-"
                                  "12-03T10:00&until=2026-12-03T11:00:30&result=5xx&after=7.61"));
  REQUIRE(std::holds_alternative<UiFilter>(parsed));
  const UiFilter f = std::get<UiFilter>(parsed);
  CHECK(f.status == Status::failed);
  CHECK(f.front == "hook");
  CHECK(f.kind() == "http");
  CHECK(f.key_prefix() == "/hooks/x#ab");
  CHECK(f.since_ms == 1796292000000);
  CHECK(f.until_ms == 1796295630000);
  CHECK(f.result == "5xx");
  CHECK(f.after == UiCursor{7, "a"});
  CHECK(ui_filter_query(f, true) ==
        "status=failed&front=hook&hook=%2Fhooks%2Fx&prefix=ab&since=2026-12-03T10%3A00%3A00&"
        "until=2026-12-03T11%3A00%3A30&result=5xx&after=7.61");
  CHECK(ui_filter_query(f, false).find("after") == std::string::npos);
  // Empty values mean any; unknown names are ignored.
  CHECK(std::holds_alternative<UiFilter>(parse_ui_filter(*parse_form("status=&x=1"))));
  for (const char* bad :
       {"status=done", "front=<b>", "front=http", "hook=nopath", "since=yesterday",
        "until=2026-13-01T00:00", "result=6xx", "after=nope"}) {
    auto p = parse_ui_filter(*parse_form(bad));
    REQUIRE(std::holds_alternative<std::string>(p));
    CHECK(std::get<std::string>(p).rfind("bad ", 0) == 0);
  }
}

TEST_CASE("ui filter: every front as idem ls --front names it, and its kind", "[ui][filter]") {
  // Each front of `ls --front`, each and begin included, is a choice of the page's filter.
  const std::string page = render_ui_list(UiPage{}, 0, "00", "", "");
  for (std::string_view front : idem::core::front_names()) {
    INFO(front);
    auto parsed = parse_ui_filter({{"front", std::string(front)}});
    REQUIRE(std::holds_alternative<UiFilter>(parsed));
    CHECK(std::get<UiFilter>(parsed).kind() == *idem::core::kind_of_front(front));
    CHECK(page.find("<option value=\"" + std::string(front) + "\"") != std::string::npos);
  }
  auto bad = parse_ui_filter({{"front", "http"}});
  REQUIRE(std::holds_alternative<std::string>(bad));
  CHECK(std::get<std::string>(bad) ==
        "bad front 'http': use run, each, begin, hook, proxy, ledger");
}

TEST_CASE("result_class: an answer's HTTP class, else the exit code's", "[ui][filter]") {
  Record r;
  CHECK(idem::core::result_class(r).empty());  // running: no result yet
  r.exit_code = 3;
  CHECK(idem::core::result_class(r) == "exit_nonzero");
  r.exit_code = 0;
  CHECK(idem::core::result_class(r) == "exit0");
  r.exit_code.reset();
  r.signal = 9;
  CHECK(idem::core::result_class(r) == "exit_nonzero");
  r.signal.reset();
  r.timed_out = true;
  CHECK(idem::core::result_class(r) == "exit_nonzero");
  // A hook whose command exited 3 and that answered 500 is of its answer's class.
  r.exit_code = 3;
  r.response = idem::core::Response{502, {}};
  CHECK(idem::core::result_class(r) == "5xx");
  r.response->status = 204;
  CHECK(idem::core::result_class(r) == "2xx");
}

Record hostile_record() {
  Record r;
  r.key = "/hooks/x#<script>alert('k')</script>";
  r.kind = "http";
  r.status = Status::failed;
  r.started_ms = 1796292000000;
  r.finished_ms = r.started_ms + 1500;
  r.exit_code = 3;
  r.note = "<img src=x onerror=alert(1)>";
  r.owner.host = "<b>host</b>";
  r.request =
      R"({"method":"POST","path":"/hooks/x","headers":{"X-Evil":"\"><script>x</script>","Authorization":"[redacted]"},"body_b64":"PHN2Zy9vbmxvYWQ9YWxlcnQoMSk+"})";
  r.response = idem::core::Response{500, {{"X-H", "<i>v</i>"}}};
  return r;
}

TEST_CASE("ui pages: hostile keys, headers, bodies and notes are escaped", "[ui][render]") {
  const Record r = hostile_record();
  UiPage page;
  page.rows = {r};
  const std::string now_csrf = "0123abcd";
  for (const std::string& html :
       {render_ui_list(page, r.started_ms, now_csrf, "<notice>", "<error>"),
        render_ui_detail(
            r, UiOutput{},
            UiAttempts{{UiAttempt{1, "<t>", "failed", "<o>", r.started_ms, 0, 3, 500, "<n>"}}},
            r.started_ms, now_csrf, true, "")}) {
    CHECK(html.find("<script>alert") == std::string::npos);
    CHECK(html.find("<img") == std::string::npos);
    CHECK(html.find("<svg") == std::string::npos);
    CHECK(html.find("<b>") == std::string::npos);
    CHECK(html.find("<i>") == std::string::npos);
    CHECK(html.find("<notice>") == std::string::npos);
    CHECK(html.find("<t>") == std::string::npos);
    // Nothing inline: the only script and style are the served files.
    CHECK(html.find("<script src=\"/ui/app.js\" defer></script>") != std::string::npos);
    CHECK(html.find("<script>") == std::string::npos);
    CHECK(html.find("<style") == std::string::npos);
    CHECK(html.find(" style=") == std::string::npos);
    CHECK(html.find(" onclick") == std::string::npos);
  }
  Record waiting = r;
  waiting.status = idem::core::Status::queued;
  const std::string queues = render_ui_queues(
      {idem::ui::UiQueue{"<b>group</b>", 30, r.started_ms, {r, waiting}}}, r.started_ms + 5000, 20);
  CHECK(queues.find("<b>") == std::string::npos);
  CHECK(queues.find("&lt;b&gt;group&lt;/b&gt;") != std::string::npos);
  CHECK(queues.find("<script>alert") == std::string::npos);
  CHECK(queues.find("and 29 more after the first 20") != std::string::npos);
  CHECK(render_ui_queues({}, r.started_ms, 20).find("id=\"no-queues\"") != std::string::npos);
  const std::string detail = render_ui_detail(r, {}, {}, r.started_ms, now_csrf, true, "");
  CHECK(detail.find("&lt;svg/onload=alert(1)&gt;") != std::string::npos);  // the body, decoded
  CHECK(detail.find("[redacted]") != std::string::npos);
  CHECK(detail.find("name=\"csrf\" value=\"0123abcd\"") != std::string::npos);
  CHECK(detail.find("id=\"rerun\"") != std::string::npos);
  CHECK(render_ui_detail(r, {}, {}, r.started_ms, now_csrf, false, "").find("id=\"rerun\"") ==
        std::string::npos);
}

// A backend over a vector kept newest first, as the store lists: each record in the range is an
// entry read, the other conditions are checked on it, and a scan stops at scan_limit entries.
struct VectorBackend {
  std::vector<Record> records;
  int64_t visited = 0;
  UiBackend backend() {
    UiBackend b;
    b.list = [this](const UiListing& l, const std::function<bool(const Record&)>& visit) {
      auto in_range = [&](const Record& r) {
        if ((l.since_ms && r.started_ms < l.since_ms) || (l.until_ms && r.started_ms >= l.until_ms))
          return false;
        return !l.after || r.started_ms < l.after->first ||
               (r.started_ms == l.after->first && r.key > l.after->second);
      };
      // Where the scan ends: the scan_limit-th entry in the range, as the stores find it first.
      std::optional<UiCursor> stop;
      int64_t read = 0;
      for (const Record& r : records)
        if (l.scan_limit && in_range(r) && ++read == l.scan_limit) {
          stop = UiCursor{r.started_ms, r.key};
          break;
        }
      for (const Record& r : records) {
        if (!in_range(r)) continue;
        if (stop && UiCursor{r.started_ms, r.key} != *stop &&
            (r.started_ms < stop->first || (r.started_ms == stop->first && r.key > stop->second)))
          break;
        if (l.status && r.status != *l.status) continue;
        if (r.key.rfind(l.prefix, 0) != 0) continue;
        if (!l.kind.empty() && r.kind != l.kind) continue;
        if (!l.result.empty() && idem::core::result_class(r) != l.result) continue;
        ++visited;
        if (!visit(r)) break;
      }
      return stop;
    };
    b.get = [this](const std::string& key) -> std::optional<Record> {
      for (const Record& r : records)
        if (r.key == key) return r;
      return std::nullopt;
    };
    return b;
  }
};

TEST_CASE("collect_ui_page: pages of k_ui_page_rows, a cursor, a bounded scan", "[ui][cursor]") {
  VectorBackend store;
  for (int i = 0; i < 120; ++i) {
    Record r;
    r.key = "k" + std::to_string(1000 + i);
    r.kind = i % 2 ? "http" : "run";
    r.status = i % 3 ? Status::succeeded : Status::failed;
    r.started_ms = 1000000 - i * 10;
    store.records.push_back(r);
  }
  UiBackend b = store.backend();
  UiFilter f;
  UiPage first = collect_ui_page(b, f, 0);
  REQUIRE(first.rows.size() == k_ui_page_rows);
  CHECK(first.rows.front().key == "k1000");
  REQUIRE(first.next);
  CHECK(store.visited == int64_t(k_ui_page_rows) + 1);  // one more, to know there is a next page
  f.after = first.next;
  UiPage second = collect_ui_page(b, f, 0);
  CHECK(second.rows.front().key == "k1050");
  f.after = collect_ui_page(b, f, 0).next;
  UiPage last = collect_ui_page(b, f, 0);
  CHECK(last.rows.size() == 20);
  CHECK_FALSE(last.next);

  // since stops the scan; until starts it.
  UiFilter range;
  range.until_ms = 1000000 - 10 * 10;  // k1010 started there: not listed
  range.since_ms = 1000000 - 20 * 10;  // k1020: listed
  UiPage ranged = collect_ui_page(b, range, 0);
  REQUIRE(ranged.rows.size() == 10);
  CHECK(ranged.rows.front().key == "k1011");
  CHECK(ranged.rows.back().key == "k1020");
  CHECK_FALSE(ranged.next);

  // A filter nothing passes stops at the scan's bound with a cursor to go on.
  for (int i = 0; i < int(k_ui_scan_budget); ++i) {
    Record r;
    r.key = "z" + std::to_string(i);
    r.kind = "run";
    r.started_ms = 100000 - i;
    store.records.push_back(r);
  }
  UiFilter none;
  none.result = "exit0";  // no record has one
  UiPage bounded = collect_ui_page(b, none, 0);
  CHECK(bounded.rows.empty());
  CHECK(bounded.budget_spent);
  CHECK(bounded.scanned == k_ui_scan_budget);
  REQUIRE(bounded.next);
  // The last entry the store read: the budget's, after the 120 above.
  CHECK(bounded.next == UiCursor{100000 - 4879, "z4879"});
  // The next page goes on after it: the records beyond the budget are listed there.
  Record old;
  old.key = "zz";
  old.kind = "run";
  old.status = Status::succeeded;
  old.exit_code = 0;
  old.started_ms = 1;
  store.records.push_back(old);
  none.after = bounded.next;
  UiPage after = collect_ui_page(b, none, 0);
  REQUIRE(after.rows.size() == 1);
  CHECK(after.rows[0].key == "zz");
  CHECK_FALSE(after.next);
  // The listing asks the store for every condition and the budget.
  UiFilter all;
  all.status = Status::failed;
  all.front = "hook";
  all.result = "5xx";
  all.hook = "/h";
  const UiListing listing = ui_listing(all, 5);
  CHECK(listing.kind == "http");
  CHECK(listing.result == "5xx");
  CHECK(listing.prefix == "/h#");
  CHECK(listing.scan_limit == k_ui_scan_budget);
  CHECK(listing.now_ms == 5);
}

TEST_CASE("ui list: a re-run form only for the failed deliveries shown", "[ui][render]") {
  UiPage page;
  CHECK(render_ui_list(page, 0, "c", "", "").find("rerun-failed") == std::string::npos);
  page.rerunnable = {"/h#a\"b", "/h#c"};
  page.progress = "Re-running 2 failed deliveries: 0 done (0 ran again)…";
  page.progress_active = true;
  const std::string html = render_ui_list(page, 0, "c", "", "");
  CHECK(html.find("Re-run the 2 failed shown") != std::string::npos);
  CHECK(html.find("name=\"key\" value=\"/h#a&quot;b\"") != std::string::npos);
  CHECK(html.find("id=\"progress\" role=\"status\" data-active=\"1\">Re-running 2") !=
        std::string::npos);
}

TEST_CASE("ui sessions: signed, expiring, bound to the daemon's secret", "[ui][session]") {
  const std::string secret = "k";
  const std::string session = make_ui_session(secret, 1000, 500);
  CHECK(valid_ui_session(secret, session, 1000));
  CHECK(valid_ui_session(secret, session, 1499));
  CHECK_FALSE(valid_ui_session(secret, session, 1500));        // expired
  CHECK_FALSE(valid_ui_session("other", session, 1000));       // another start's secret
  CHECK_FALSE(valid_ui_session(secret, "9" + session, 1000));  // a later expiry, same MAC
  CHECK_FALSE(valid_ui_session(secret, session + "0", 1000));
  CHECK_FALSE(valid_ui_session(secret, "", 1000));
  CHECK_FALSE(valid_ui_session(secret, "..", 1000));
  CHECK(make_ui_session(secret, 1000, 500) != session);  // a nonce each
}

namespace {

struct UiHarness {
  int64_t now = 1'000'000;
  std::shared_ptr<UiCredentials> credentials = std::make_shared<UiCredentials>();
  std::shared_ptr<const Route> route;

  UiHarness() {
    credentials->token = "file-token";
    credentials->secret = "secret";
    credentials->login_once = "once";
    UiBackend b;
    b.now_ms = [this] { return now; };
    b.list = [](const UiListing&, const std::function<bool(const Record&)>&) {
      return std::optional<UiCursor>();
    };
    b.get = [](const std::string&) { return std::optional<Record>(); };
    UiOptions o;
    o.credentials = credentials;
    o.session_ms = 60'000;
    route = ui_route(std::move(b), std::move(o));
  }

  // The status of GET `target` (admission, then the answer), with `cookie` if not empty.
  Response get(const std::string& target, const std::string& cookie = "") const {
    Request req;
    req.head.method = "GET";
    req.head.target = target;
    req.head.path = target.substr(0, target.find('?'));
    req.head.headers.add("Host", "127.0.0.1:9");
    if (!cookie.empty()) req.head.headers.add("Cookie", "idem_ui_session=" + cookie);
    Admission a = route->admit(req.head);
    if (a.refusal) return *a.refusal;
    return route->handle(req);
  }
};

std::string header_of(const Response& r, const std::string& name) {
  for (const auto& [n, v] : r.headers)
    if (n == name) return v;
  return "";
}

// The session of a Set-Cookie value ("idem_ui_session=VALUE; ...").
std::string session_of(const std::string& set_cookie) {
  const size_t eq = set_cookie.find('='), semi = set_cookie.find(';');
  return set_cookie.substr(eq + 1, semi - eq - 1);
}

}  // namespace

TEST_CASE("ui login: the one-time link once, the file's token always; sessions end",
          "[ui][session]") {
  UiHarness h;
  CHECK(h.get("/ui").status == 401);
  CHECK(h.get("/ui/app.css").status == 200);  // the login page's style needs no login
  CHECK(h.get("/ui/login").status == 200);    // the form
  Response in = h.get("/ui/login?token=once");
  REQUIRE(in.status == 303);
  CHECK(header_of(in, "Location") == "/ui");
  const std::string cookie = header_of(in, "Set-Cookie");
  CHECK(cookie.find("; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=60") != std::string::npos);
  const std::string session = session_of(cookie);
  CHECK(session.find("once") == std::string::npos);
  CHECK(session.find("file-token") == std::string::npos);
  CHECK(h.get("/ui", session).status == 200);
  CHECK(h.get("/ui/login?token=once").status == 401);  // the link works once
  CHECK(h.get("/ui/login?token=wrong").status == 401);
  CHECK(h.get("/ui/login?token=file-token").status == 303);
  CHECK(h.get("/ui/login?token=file-token").status == 303);  // the file's token: always
  h.now += 59'999;
  CHECK(h.get("/ui", session).status == 200);
  h.now += 1;
  Response ended = h.get("/ui", session);
  CHECK(ended.status == 401);  // the session has ended: log in again
  CHECK(ended.body.find("log in again") != std::string::npos);
  CHECK(header_of(ended, "Set-Cookie").find("Max-Age=0") != std::string::npos);
}

TEST_CASE("read_ui_output: the head of each stream, read a window at a time, never whole",
          "[ui][output]") {
  idem::core::CapturedOutput captured;
  captured.append(idem::core::Stream::out, "first line\n");
  captured.append(idem::core::Stream::err, "warning\n");
  captured.append(idem::core::Stream::out, std::string(8 * 1024 * 1024, 'x'));
  captured.append(idem::core::Stream::err, "last words");
  const std::string encoded = captured.encode();
  int64_t read = 0, reads = 0;
  idem::core::EncodedReader reader = [&](int64_t offset, int64_t length) {
    ++reads;
    const std::string piece =
        encoded.substr(size_t(std::min<int64_t>(offset, int64_t(encoded.size()))), size_t(length));
    read += int64_t(piece.size());
    return piece;
  };
  const UiOutput shown = read_ui_output(reader);
  CHECK(shown.readable);
  CHECK(shown.out.head.size() == size_t(k_ui_shown_output));
  CHECK(shown.out.head.rfind("first line\nxxx", 0) == 0);
  CHECK(shown.out.size == 11 + 8 * 1024 * 1024);
  CHECK(shown.err.head == "warning\nlast words");
  CHECK(shown.err.size == 18);
  // What it read: the head of stdout and the frames around it, not the 8 MiB it steps over.
  CHECK(read <= 4 * k_ui_shown_output);
  CHECK(reads <= 4);

  // A download walks one stream whole, piece by piece, and skips the other unread.
  std::string out;
  read = 0;
  const idem::core::OutputWalk walk = idem::core::walk_output(
      reader, [](idem::core::Stream s) { return s == idem::core::Stream::err; },
      [&](idem::core::Stream, std::string_view piece) {
        out.append(piece);
        return idem::core::Take::more;
      });
  CHECK(walk.complete);
  CHECK(out == "warning\nlast words");
  CHECK(read < 256 * 1024);

  // Not an encoding: said so, nothing shown.
  const UiOutput bad = read_ui_output([](int64_t, int64_t) { return std::string("\x07junk"); });
  CHECK_FALSE(bad.readable);
}

TEST_CASE("ui detail: the attempts come after the request and the output, a page of them",
          "[ui][render]") {
  const Record r = hostile_record();
  UiAttempts attempts;
  attempts.rows = {UiAttempt{120, "hook", "failed", "h pid 1", r.started_ms, 0, 1, 500, ""}};
  attempts.earlier = 119;
  attempts.not_kept = 20;
  attempts.older = 120;
  const std::string html = render_ui_detail(r, {}, attempts, r.started_ms, "c", false, "");
  const size_t request = html.find("<h2>Request</h2>");
  const size_t output = html.find("<h2>Output</h2>");
  const size_t list = html.find("<h2>Attempts</h2>");
  REQUIRE(list != std::string::npos);
  CHECK(request < output);
  CHECK(output < list);
  CHECK(html.find("119 earlier attempts, 20 of them no longer kept") != std::string::npos);
  CHECK(html.find("attempts_before=120") != std::string::npos);
  CHECK(html.find("/ui/output?key=") != std::string::npos);
}

}  // namespace unit_ui
