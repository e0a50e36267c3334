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

#include "core/output.hpp"
#include "core/record.hpp"
#include "core/schedule.hpp"
#include "ui/filter.hpp"

namespace idem::ui {

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

// One page of a key's attempts, newest first, as the detail page lists them.
struct UiAttempts {
  std::vector<UiAttempt> rows;
  int64_t before = 0;    // the page lists attempts numbered below this (0: from the newest)
  int64_t earlier = 0;   // attempts older than the page's oldest row (kept or not)
  int64_t not_kept = 0;  // of those, the ones the store no longer keeps (StoreOptions)
  int64_t older = 0;     // where the next, older page starts (its `before`); 0: none kept
};

// Attempts on one page of the detail.
inline constexpr int64_t k_ui_attempts_page = 50;
// Bytes of each output stream the detail page shows, and of the encoding it reads at most to
// find them (the rest is one download away: /ui/output).
inline constexpr int64_t k_ui_shown_output = 64 * 1024;
inline constexpr int64_t k_ui_output_scan = 4 * 1024 * 1024;

// What the detail page shows of one output stream.
struct UiStream {
  std::string head;   // its first bytes, at most k_ui_shown_output
  int64_t size = -1;  // all of its bytes; -1: not known (the scan stopped at its bound)
  bool lost = false;  // the cap dropped some
};

struct UiOutput {
  bool readable = true;  // false: the stored output is not an encoding
  UiStream out, err;
};

// The head of each stream of an encoded output, read through `read` a window at a time
// (never the whole output: at most k_ui_output_scan bytes of it).
UiOutput read_ui_output(const core::EncodedReader& read);

// A record's detail: the stored request (as stored: credentials are already redacted), the
// output or answer (the first bytes of each stream, with a link to download it whole), the
// attempts (a page of them), and the actions (remove; re-run when `rerunnable`).
std::string render_ui_detail(const core::Record& record, const UiOutput& output,
                             const UiAttempts& attempts, int64_t now_ms, const std::string& csrf,
                             bool rerunnable, const std::string& notice);

// One serial group's line as the queue view shows it (contract §9).
struct UiQueue {
  std::string group;  // as the store names it ("{hook path}#{value}", "run:NAME")
  int64_t queued = 0;
  int64_t oldest_ms = 0;           // when its longest-waiting attempt was queued
  std::vector<core::Record> line;  // its running attempt first, if any, then waiters in order
};

// The queue view (/ui/queues): each group with waiters, its running attempt and the first of
// its waiters in order (each a link to its detail); `shown`: how many of a line are listed.
std::string render_ui_queues(const std::vector<UiQueue>& queues, int64_t now_ms, size_t shown);

// One expectation as the schedules view shows it (contract §11).
struct UiSchedule {
  core::Expectation expectation;
  std::string last_key;  // its latest real attempt's key; empty: none seen yet
  int64_t last_attempt = 0;
  std::string last_started;  // when it started, in the schedule's zone
  std::string last_outcome;  // running, succeeded, failed, abandoned
  std::string next_due;      // in the schedule's zone; empty: none
  bool overdue = false;      // the next due time has passed
  std::string problem;       // why it cannot be evaluated (a zone gone); empty: none
  std::vector<core::ScheduleFinding> findings;  // the newest first, open and closed
};

// The schedules view (/ui/schedules): each expectation with its last run (a link to its
// record), next due time and findings.
std::string render_ui_schedules(const std::vector<UiSchedule>& schedules);

// A page saying one thing (a 404, a refusal, the token's form).
std::string render_ui_message(int status, const std::string& title, const std::string& text);
std::string render_ui_login(const std::string& error);

// The static script, style sheet and icon (/ui/app.js, /ui/app.css, /ui/icon.svg).
std::string_view ui_app_js();
std::string_view ui_icon_svg();
std::string_view ui_app_css();

}  // namespace idem::ui
