#include "ui/filter.hpp"

#include <cstdio>
#include <ctime>

#include "core/history.hpp"
#include "ui/html.hpp"
#include "util/hex.hpp"

namespace idem::ui {

namespace {

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

int64_t ui_number(std::string_view s) {
  int64_t n = 0;
  for (char c : s) n = n * 10 + (c - '0');
  return n;
}

}  // namespace

std::optional<int64_t> parse_ui_time(std::string_view t) {
  // What a datetime-local input sends (YYYY-MM-DDTHH:MM, seconds optional), read as UTC by the
  // RFC 3339 reader of `ls --since`.
  if ((t.size() != 16 && t.size() != 19) || t[10] != 'T') return std::nullopt;
  std::string rfc3339(t);
  if (t.size() == 16) rfc3339 += ":00";
  return core::parse_time_bound(rfc3339 + "Z", 0);
}

std::string format_ui_time(int64_t ms) {
  const std::time_t secs = std::time_t(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

std::string encode_ui_cursor(const UiCursor& cursor) {
  return std::to_string(cursor.first) + "." + util::to_hex(cursor.second);
}

std::optional<UiCursor> decode_ui_cursor(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos || !all_digits(text.substr(0, dot))) return std::nullopt;
  std::string_view hex = text.substr(dot + 1);
  if (hex.size() % 2 != 0 || hex.size() > 2048) return std::nullopt;
  std::string key;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = util::hex_digit(hex[i]), lo = util::hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    key += char(hi * 16 + lo);
  }
  return UiCursor{ui_number(text.substr(0, dot)), std::move(key)};
}

std::variant<UiFilter, std::string> parse_ui_filter(
    const std::vector<std::pair<std::string, std::string>>& pairs) {
  UiFilter f;
  for (const auto& [name, value] : pairs) {
    if (value.empty()) continue;
    if (name == "status") {
      f.status = core::status_from_string(value);
      if (!f.status)
        return "bad status '" + value +
               "': use running, succeeded, failed, abandoned, queued or "
               "superseded";
    } else if (name == "front") {
      if (!core::kind_of_front(value))
        return "bad front '" + value + "': use " + std::string(core::known_fronts());
      f.front = value;
    } else if (name == "hook") {
      if (value[0] != '/') return "bad hook '" + value + "': a hook's path, starting with /";
      f.hook = value;
    } else if (name == "prefix") {
      f.prefix = value;
    } else if (name == "since" || name == "until") {
      auto ms = parse_ui_time(value);
      if (!ms) return "bad " + name + " '" + value + "': use YYYY-MM-DDTHH:MM (UTC)";
      (name == "since" ? f.since_ms : f.until_ms) = *ms;
    } else if (name == "result") {
      bool known = false;
      for (const char* r : core::k_result_classes) known = known || value == r;
      if (!known)
        return "bad result '" + value + "': use 2xx, 3xx, 4xx, 5xx, exit0 or exit_nonzero";
      f.result = value;
    } else if (name == "after") {
      f.after = decode_ui_cursor(value);
      if (!f.after) return "bad after '" + value + "': not a cursor of this page";
    }
  }
  return f;
}

std::string UiFilter::kind() const {
  return front.empty() ? "" : core::kind_of_front(front).value_or("");
}

std::string ui_filter_query(const UiFilter& f, bool with_cursor) {
  std::string q;
  auto add = [&](const char* name, const std::string& value) {
    if (value.empty()) return;
    q += (q.empty() ? "" : "&") + std::string(name) + "=" + url_component(value);
  };
  add("status", f.status ? std::string(core::to_string(*f.status)) : "");
  add("front", f.front);
  add("hook", f.hook);
  add("prefix", f.prefix);
  add("since", f.since_ms ? format_ui_time(f.since_ms) : "");
  add("until", f.until_ms ? format_ui_time(f.until_ms) : "");
  add("result", f.result);
  if (with_cursor && f.after) add("after", encode_ui_cursor(*f.after));
  return q;
}

}  // namespace idem::ui
