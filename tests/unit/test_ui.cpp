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

using namespace idem::http;  // NOLINT: the names under test
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

TEST_CASE("hmac_sha256_hex: RFC 4231 vectors; same_bytes", "[ui][csrf]") {
  CHECK(hmac_sha256_hex(std::string(20, '\x0b'), "Hi There") ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than the block is hashed first (test case 6).
  CHECK(hmac_sha256_hex(std::string(131, '\xaa'),
                        "Test Using Larger Than Block-Size Key - Hash Key First") ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  CHECK(same_bytes("abc", "abc"));
  CHECK_FALSE(same_bytes("abc", "abd"));
  CHECK_FALSE(same_bytes("abc", "abcd"));
  CHECK_FALSE(same_bytes("", "a"));
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
  for (const char* bad : {"status=done", "front=<b>", "front=http", "hook=nopath", "since=yesterday",
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
        render_ui_detail(r, {UiAttempt{1, "<t>", "failed", "<o>", r.started_ms, 0, 3, 500, "<n>"}},
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
  const std::string detail = render_ui_detail(r, {}, r.started_ms, now_csrf, true, "");
  CHECK(detail.find("&lt;svg/onload=alert(1)&gt;") != std::string::npos);  // the body, decoded
  CHECK(detail.find("[redacted]") != std::string::npos);
  CHECK(detail.find("name=\"csrf\" value=\"0123abcd\"") != std::string::npos);
  CHECK(detail.find("id=\"rerun\"") != std::string::npos);
  CHECK(render_ui_detail(r, {}, r.started_ms, now_csrf, false, "").find("id=\"rerun\"") ==
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

TEST_CASE("is_loopback_host: the Host header of a loopback listener", "[ui]") {
  for (const char* ok : {"127.0.0.1:8787", "127.1.2.3", "localhost:1", "[::1]:8787", "localhost"})
    CHECK(is_loopback_host(ok));
  for (const char* bad :
       {"evil.com", "127.0.0.1.evil.com:80", "[::2]:1", "128.0.0.1", "", "127.x.0.1"})
    CHECK_FALSE(is_loopback_host(bad));
}

}  // namespace unit_ui
