#pragma once
// The delivery-log page's HTML (pure): the list, its rows, a record's detail, the notices, and
// the script and style sheet served beside them. Every value from a record goes through
// html_escape; nothing is inline (the Content-Security-Policy allows only /ui/app.js and
// /ui/app.css).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.hpp"
#include "ui/filter.hpp"

namespace idem::http {

// One page of the listing, as the route found it.
struct UiPage {
  UiFilter filter;
  std::vector<core::Record> rows;
  std::optional<UiCursor> next;  // where the next page starts; nullopt: this is the last
  int64_t scanned = 0;           // records read for this page
  bool budget_spent = false;     // the scan stopped at its bound before the page was full
  // The rows that can be re-run (failed deliveries of a configured hook): the list's re-run
  // form names them; none, no form.
  std::vector<std::string> rerunnable;
  std::string progress;          // the last bulk re-run's progress line; empty: none
  bool progress_active = false;  // it is under way: the page follows it
};

// The table's rows (also what /ui/rows answers for the live update).
std::string render_ui_rows(const UiPage& page, int64_t now_ms);

// The whole list page. `csrf`: the token of the viewer's session, put in every form that
// POSTs; `notice`: a line to show on top (already fixed text, escaped here all the same).
std::string render_ui_list(const UiPage& page, int64_t now_ms, const std::string& csrf,
                           const std::string& notice, const std::string& error);

// One earlier or current attempt of a key, as the detail page lists it.
struct UiAttempt {
  int64_t number = 0;
  std::string trigger;
  std::string status;
  std::string owner;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  std::optional<int> exit_code;
  std::optional<int> http_status;
  std::string note;
};

// A record's detail: the stored request (as stored: credentials are already redacted), the
// output or answer, the attempts, and the actions (remove; re-run when `rerunnable`).
std::string render_ui_detail(const core::Record& record, const std::vector<UiAttempt>& attempts,
                             int64_t now_ms, const std::string& csrf, bool rerunnable,
                             const std::string& notice);

// A page saying one thing (a 404, a refusal, the token's form).
std::string render_ui_message(int status, const std::string& title, const std::string& text);
std::string render_ui_login(const std::string& error);

// The static script, style sheet and icon (/ui/app.js, /ui/app.css, /ui/icon.svg).
std::string_view ui_app_js();
std::string_view ui_icon_svg();
std::string_view ui_app_css();

}  // namespace idem::http
