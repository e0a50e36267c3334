#include "ui/page.hpp"

#include <nlohmann/json.hpp>

#include "core/history.hpp"
#include "core/output.hpp"
#include "core/record_json.hpp"
#include "ui/html.hpp"
#include "util/clock.hpp"
#include "util/hex.hpp"

namespace idem::ui {

namespace {

// Bytes of a body or an output shown on the page; the rest is said to be left out.
constexpr size_t k_ui_shown_bytes = 64 * 1024;

std::string ui_head(const std::string& title) {
  return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>" +
         html_escape(title) +
         " · idem</title><link rel=\"stylesheet\" href=\"/ui/app.css\">"
         "<link rel=\"icon\" href=\"/ui/icon.svg\">"
         "<script src=\"/ui/app.js\" defer></script></head><body>"
         "<header><a class=\"brand\" href=\"/ui\">idem</a> <span>delivery log</span> "
         "<nav><a href=\"/ui\">Records</a> <a href=\"/ui/queues\">Queues</a> "
         "<a href=\"/ui/schedules\">Schedules</a></nav></header>"
         "<main>";
}

constexpr std::string_view k_ui_foot = "</main></body></html>\n";

std::string ui_result(const core::Record& r) {
  std::string out;
  if (r.response) out = "HTTP " + std::to_string(r.response->status);
  if (r.exit_code)
    out += (out.empty() ? "" : ", ") + std::string("exit ") + std::to_string(*r.exit_code);
  if (r.signal)
    out += (out.empty() ? "" : ", ") + std::string("signal ") + std::to_string(*r.signal);
  if (r.timed_out) out += (out.empty() ? "" : ", ") + std::string("timed out");
  return out;
}

std::string ui_duration(int64_t started, int64_t finished) {
  if (finished <= 0 || started <= 0) return "";
  const int64_t ms = finished - started;
  if (ms < 1000) return std::to_string(ms) + " ms";
  return std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + " s";
}

std::string ui_time(int64_t ms) { return ms > 0 ? format_ui_time(ms) + "Z" : ""; }

std::string csrf_field(const std::string& csrf) {
  return "<input type=\"hidden\" name=\"csrf\" value=\"" + html_escape(csrf) + "\">";
}

std::string option(const std::string& value, const std::string& label, const std::string& chosen) {
  return "<option value=\"" + html_escape(value) + "\"" + (value == chosen ? " selected" : "") +
         ">" + html_escape(label) + "</option>";
}

std::string text_input(const char* name, const char* label, const std::string& value,
                       const char* type = "text") {
  return std::string("<label>") + label + " <input type=\"" + type + "\" name=\"" + name +
         "\" value=\"" + html_escape(value) + "\"></label>";
}

// A stored body or output stream: as text when it is, else its size; at most k_ui_shown_bytes.
std::string ui_bytes_block(std::string_view bytes) {
  if (bytes.empty()) return "<p class=\"muted\">(empty)</p>";
  std::string shown(bytes.substr(0, k_ui_shown_bytes));
  std::string out = "<pre>" + html_escape(shown) + "</pre>";
  if (bytes.size() > k_ui_shown_bytes)
    out += "<p class=\"muted\">" + std::to_string(bytes.size() - k_ui_shown_bytes) +
           " more bytes not shown</p>";
  return out;
}

std::string ui_request_block(const std::string& stored) {
  nlohmann::json request = nlohmann::json::parse(stored, nullptr, false);
  if (!request.is_object()) return ui_bytes_block(stored);
  std::string out = "<table class=\"kv\">";
  std::string body;
  bool has_body = false;
  for (const auto& [name, value] : request.items()) {
    if (name == "body_b64" && value.is_string()) {
      auto decoded = util::from_base64(value.get<std::string>());
      body = decoded ? *decoded : "(not base64)";
      has_body = true;
      continue;
    }
    if (name == "headers" && value.is_object()) {
      out += "<tr><th>headers</th><td><table class=\"kv\">";
      for (const auto& [h, v] : value.items())
        out += "<tr><th>" + html_escape(h) + "</th><td>" +
               html_escape(v.is_string() ? v.get<std::string>() : v.dump()) + "</td></tr>";
      out += "</table></td></tr>";
      continue;
    }
    out += "<tr><th>" + html_escape(name) + "</th><td>" +
           html_escape(value.is_string()
                           ? value.get<std::string>()
                           : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) +
           "</td></tr>";
  }
  out += "</table>";
  if (has_body) out += "<h3>Body</h3>" + ui_bytes_block(body);
  return out;
}

}  // namespace

std::string render_ui_rows(const UiPage& page, int64_t now_ms) {
  std::string out;
  for (const core::Record& r : page.rows) {
    const std::string status(core::display_status(r, now_ms));
    out += "<tr class=\"st-" + html_escape(status) + "\"><td>" + ui_time(r.started_ms) +
           "</td><td><a href=\"/ui/record?key=" + html_escape(url_component(r.key)) + "\">" +
           html_escape(r.key) + "</a></td><td>" + html_escape(r.kind) +
           "</td><td><span class=\"badge\">" + html_escape(status) + "</span></td><td>" +
           std::to_string(r.attempt) + "</td><td>" + html_escape(ui_result(r)) + "</td><td>" +
           ui_duration(r.started_ms, r.finished_ms) + "</td></tr>\n";
  }
  if (page.rows.empty())
    out += "<tr><td colspan=\"7\" class=\"muted\">No records match.</td></tr>\n";
  return out;
}

std::string render_ui_queues(const std::vector<UiQueue>& queues, int64_t now_ms, size_t shown) {
  std::string out = ui_head("Queues") + "<h1>Queues</h1>";
  if (queues.empty())
    out +=
        "<p class=\"muted\" id=\"no-queues\">No serial group has deliveries or runs waiting.</p>";
  for (const UiQueue& q : queues) {
    out += "<section class=\"queue\"><h2>" + html_escape(q.group) + "</h2><p class=\"muted\">" +
           std::to_string(q.queued) + " waiting";
    if (q.oldest_ms > 0)
      out += ", the oldest for " + ui_duration(q.oldest_ms, std::max(now_ms, q.oldest_ms));
    out +=
        "</p><table><thead><tr><th>Place</th><th>Key</th><th>Status</th><th>Since</th>"
        "</tr></thead><tbody>";
    size_t place = 0;
    for (const core::Record& r : q.line) {
      const bool waiting = r.status == core::Status::queued;
      if (waiting) ++place;
      const std::string status(core::display_status(r, now_ms));
      out += "<tr class=\"st-" + html_escape(status) + "\"><td>" +
             (waiting ? std::to_string(place) : std::string("running")) +
             "</td><td><a href=\"/ui/record?key=" + html_escape(url_component(r.key)) + "\">" +
             html_escape(r.key) + "</a></td><td><span class=\"badge\">" + html_escape(status) +
             "</span></td><td>" + ui_time(r.started_ms) + "</td></tr>\n";
    }
    out += "</tbody></table>";
    if (int64_t(place) < q.queued)
      out += "<p class=\"muted\">and " + std::to_string(q.queued - int64_t(place)) +
             " more after the first " + std::to_string(shown) + "</p>";
    out += "</section>";
  }
  return out + std::string(k_ui_foot);
}

std::string render_ui_schedules(const std::vector<UiSchedule>& schedules) {
  std::string out = ui_head("Schedules") + "<h1>Schedules</h1>";
  if (schedules.empty())
    out +=
        "<p class=\"muted\" id=\"no-schedules\">No expectation: <code>idem expect PATTERN "
        "--every DURATION</code> or <code>--cron \"...\"</code> adds one.</p>";
  for (const UiSchedule& s : schedules) {
    const core::Expectation& e = s.expectation;
    size_t open = 0;
    for (const core::ScheduleFinding& f : s.findings)
      if (!f.resolved && f.kind != core::FindingKind::recovered) ++open;
    out += "<section class=\"schedule" + std::string(open ? " st-failed" : "") + "\"><h2>" +
           html_escape(e.pattern) + "</h2><table class=\"kv\"><tr><th>schedule</th><td>" +
           html_escape(e.schedule_text()) + ", grace " +
           html_escape(util::human_duration(e.grace_ms));
    if (e.max_runtime_ms > 0)
      out += ", max runtime " + html_escape(util::human_duration(e.max_runtime_ms));
    if (e.at_most > 0) out += ", at most " + std::to_string(e.at_most) + " a period";
    out += "</td></tr><tr><th>last run</th><td class=\"last-run\">";
    if (s.last_key.empty()) {
      out += "<span class=\"muted\">none yet</span>";
    } else {
      out += "<a href=\"/ui/record?key=" + html_escape(url_component(s.last_key)) + "\">" +
             html_escape(s.last_key) + "</a> attempt " + std::to_string(s.last_attempt) + ", " +
             html_escape(s.last_started) + " <span class=\"badge\">" + html_escape(s.last_outcome) +
             "</span>";
    }
    out += "</td></tr><tr><th>next due</th><td class=\"next-due\">" +
           (s.next_due.empty() ? std::string("<span class=\"muted\">never</span>")
                               : html_escape(s.next_due) + (s.overdue ? " (due)" : ""));
    out += "</td></tr>";
    if (!s.problem.empty())
      out += "<tr><th>problem</th><td class=\"error\">" + html_escape(s.problem) + "</td></tr>";
    out += "</table>";
    if (s.findings.empty()) {
      out += "<p class=\"muted findings-none\">No findings.</p>";
    } else {
      out += "<p>" + std::to_string(open) +
             " open</p><table class=\"findings\"><thead><tr>"
             "<th>Found</th><th>Kind</th><th>What</th><th>State</th></tr></thead><tbody>";
      for (const core::ScheduleFinding& f : s.findings) {
        const bool closed = f.resolved || f.kind == core::FindingKind::recovered;
        out += "<tr class=\"" + std::string(closed ? "st-succeeded" : "st-failed") + "\"><td>" +
               ui_time(f.found_ms) + "</td><td><span class=\"badge\">" +
               html_escape(std::string(core::to_string(f.kind))) + "</span></td><td>" +
               html_escape(f.detail) + "</td><td>" +
               (f.resolved ? "recovered"
                : closed   ? ""
                           : "open") +
               "</td></tr>\n";
      }
      out += "</tbody></table>";
    }
    out += "</section>";
  }
  return out + std::string(k_ui_foot);
}

std::string render_ui_list(const UiPage& page, int64_t now_ms, const std::string& csrf,
                           const std::string& notice, const std::string& error) {
  const UiFilter& f = page.filter;
  std::string out = ui_head("Delivery log");
  if (!notice.empty()) out += "<p class=\"notice\" role=\"status\">" + html_escape(notice) + "</p>";
  if (!error.empty()) out += "<p class=\"error\" role=\"alert\">" + html_escape(error) + "</p>";
  const std::string status = f.status ? std::string(core::to_string(*f.status)) : "";
  out +=
      "<form class=\"filters\" method=\"get\" action=\"/ui\"><label>Status <select "
      "name=\"status\">" +
      option("", "any", status) + option("running", "running", status) +
      option("succeeded", "succeeded", status) + option("failed", "failed", status) +
      option("abandoned", "abandoned", status) + option("queued", "queued", status) +
      option("superseded", "superseded", status) + "</select></label>";
  // The fronts as `idem ls --front` names them.
  out += "<label>Front <select name=\"front\">" + option("", "any", f.front);
  for (std::string_view front : core::front_names())
    out += option(std::string(front), std::string(front), f.front);
  out += "</select></label>";
  out += text_input("hook", "Hook", f.hook) + text_input("prefix", "Key prefix", f.prefix);
  out += text_input("since", "Since (UTC)", f.since_ms ? format_ui_time(f.since_ms) : "",
                    "datetime-local");
  out += text_input("until", "Until (UTC)", f.until_ms ? format_ui_time(f.until_ms) : "",
                    "datetime-local");
  out +=
      "<label>Result <select name=\"result\">" + option("", "any", f.result) +
      option("2xx", "HTTP 2xx", f.result) + option("3xx", "HTTP 3xx", f.result) +
      option("4xx", "HTTP 4xx", f.result) + option("5xx", "HTTP 5xx", f.result) +
      option("exit0", "exit 0", f.result) + option("exit_nonzero", "exit ≠ 0", f.result) +
      "</select></label><button type=\"submit\">Filter</button> <a href=\"/ui\">Clear</a></form>";
  // The live update refreshes the first page only: a later page stays where the reader is.
  out += "<div class=\"bar\">";
  if (!f.after) out += "<label><input type=\"checkbox\" id=\"live\" checked> Live</label> ";
  // The failed deliveries shown, and only they: the form names their keys.
  if (!page.rerunnable.empty()) {
    const std::string n = std::to_string(page.rerunnable.size());
    out +=
        "<form method=\"post\" action=\"/ui/rerun-failed\" class=\"inline confirm\" "
        "data-confirm=\"Re-run the " +
        n + " failed deliveries shown?\">" + csrf_field(csrf);
    for (const std::string& key : page.rerunnable)
      out += "<input type=\"hidden\" name=\"key\" value=\"" + html_escape(key) + "\">";
    out += "<button type=\"submit\" id=\"rerun-failed\">Re-run the " + n +
           " failed shown</button></form>";
  }
  if (!page.progress.empty())
    out += std::string("<span id=\"progress\" role=\"status\"") +
           (page.progress_active ? " data-active=\"1\"" : "") + ">" + html_escape(page.progress) +
           "</span>";
  out += "</div>";
  out +=
      "<table class=\"records\"><thead><tr><th>Started</th><th>Key</th><th>Front</th>"
      "<th>Status</th><th>Attempt</th><th>Result</th><th>Duration</th></tr></thead>"
      "<tbody id=\"rows\" data-src=\"/ui/rows?" +
      html_escape(ui_filter_query(f, true)) + "\">" + render_ui_rows(page, now_ms) +
      "</tbody></table><nav class=\"pages\">";
  if (f.after) out += "<a href=\"/ui?" + html_escape(ui_filter_query(f, false)) + "\">Newest</a> ";
  if (page.next) {
    UiFilter next = f;
    next.after = page.next;
    out +=
        "<a id=\"next\" href=\"/ui?" + html_escape(ui_filter_query(next, true)) + "\">Older →</a>";
  }
  if (page.budget_spent)
    out += " <span class=\"muted\">(" + std::to_string(page.scanned) +
           " records read for this page; older ones may match)</span>";
  out += "</nav>";
  out += k_ui_foot;
  return out;
}

UiOutput read_ui_output(const core::EncodedReader& read) {
  UiOutput shown;
  auto stream_of = [&](core::Stream s) -> UiStream& {
    return s == core::Stream::out ? shown.out : shown.err;
  };
  auto wants = [&](core::Stream s) {
    return int64_t(stream_of(s).head.size()) < k_ui_shown_output;
  };
  auto take = [&](core::Stream s, std::string_view piece) {
    std::string& head = stream_of(s).head;
    const size_t room = size_t(k_ui_shown_output) - head.size();
    head.append(piece.substr(0, room));
    return head.size() < size_t(k_ui_shown_output) ? core::Take::more : core::Take::skip_frame;
  };
  const core::OutputWalk walk =
      core::walk_output(read, wants, take, core::WalkLimits{64 * 1024, k_ui_output_scan});
  shown.readable = walk.valid;
  for (core::Stream s : {core::Stream::out, core::Stream::err}) {
    stream_of(s).lost = walk.lost_bytes(s);
    if (walk.complete) stream_of(s).size = walk.size(s);
  }
  return shown;
}

namespace {

// A stream's head as the detail shows it, its size, and the link that downloads it whole.
std::string ui_stream_block(const core::Record& r, const UiStream& s, const char* name) {
  std::string out = std::string("<h3>") + name + "</h3>";
  if (s.size == 0) return out + "<p class=\"muted\">(empty)</p>";
  if (!s.head.empty()) out += "<pre>" + html_escape(s.head) + "</pre>";
  out += "<p class=\"muted\">";
  if (s.size > int64_t(s.head.size()))
    out += std::to_string(s.size - int64_t(s.head.size())) + " more bytes not shown. ";
  else if (s.size < 0 && s.head.empty())
    out += "None in the part of the output read for this page. ";
  else if (s.size < 0)
    out += "The first " + std::to_string(s.head.size()) + " bytes. ";
  out += "<a id=\"download-" + std::string(name) +
         "\" href=\"/ui/output?key=" + html_escape(url_component(r.key)) + "&amp;stream=" + name +
         "\" download>Download " + name + "</a>";
  if (s.size >= 0) out += " (" + std::to_string(s.size) + " bytes)";
  return out + "</p>";
}

// A page of the attempts, links to the older and newest pages, and how many earlier attempts
// there were (of them, how many are no longer kept).
std::string ui_attempts_block(const core::Record& r, const UiAttempts& attempts) {
  std::string out =
      "<h2>Attempts</h2><table class=\"records\" id=\"attempts\"><thead><tr><th>#</th>"
      "<th>Trigger</th><th>Status</th><th>Owner</th><th>Started</th><th>Duration</th>"
      "<th>Result</th><th>Why it ended</th></tr></thead><tbody>";
  for (const UiAttempt& a : attempts.rows) {
    std::string result;
    if (a.http_status) result = "HTTP " + std::to_string(*a.http_status);
    if (a.exit_code)
      result += (result.empty() ? "" : ", ") + std::string("exit ") + std::to_string(*a.exit_code);
    out += "<tr><td>" + std::to_string(a.number) + "</td><td>" + html_escape(a.trigger) +
           "</td><td>" + html_escape(a.status) + "</td><td>" + html_escape(a.owner) + "</td><td>" +
           ui_time(a.started_ms) + "</td><td>" + ui_duration(a.started_ms, a.finished_ms) +
           "</td><td>" + html_escape(result) + "</td><td>" + html_escape(a.note) + "</td></tr>";
  }
  out += "</tbody></table><nav class=\"pages\">";
  const std::string here = "/ui/record?key=" + html_escape(url_component(r.key));
  if (attempts.before > 0) out += "<a href=\"" + here + "#attempts\">Newest attempts</a> ";
  if (attempts.older > 0)
    out += "<a id=\"older-attempts\" href=\"" + here +
           "&amp;attempts_before=" + std::to_string(attempts.older) +
           "#attempts\">Older attempts →</a> ";
  if (attempts.earlier > 0) {
    out += "<span class=\"muted\" id=\"earlier-attempts\">" + std::to_string(attempts.earlier) +
           " earlier attempts";
    if (attempts.not_kept > 0)
      out += ", " + std::to_string(attempts.not_kept) + " of them no longer kept";
    out += "</span>";
  }
  return out + "</nav>";
}

}  // namespace

std::string render_ui_detail(const core::Record& r, const UiOutput& output,
                             const UiAttempts& attempts, int64_t now_ms, const std::string& csrf,
                             bool rerunnable, const std::string& notice) {
  std::string out = ui_head(r.key);
  if (!notice.empty()) out += "<p class=\"notice\" role=\"status\">" + html_escape(notice) + "</p>";
  const std::string status(core::display_status(r, now_ms));
  out += "<p><a href=\"/ui\">← all records</a></p><h1 id=\"key\">" + html_escape(r.key) + "</h1>";
  out += "<table class=\"kv\"><tr><th>Status</th><td id=\"status\"><span class=\"badge st-" +
         html_escape(status) + "\">" + html_escape(status) + "</span></td></tr>";
  out += "<tr><th>Front</th><td>" + html_escape(r.kind) +
         "</td></tr><tr><th>Attempt</th><td id=\"attempt\">" + std::to_string(r.attempt) +
         "</td></tr><tr><th>Result</th><td>" + html_escape(ui_result(r)) +
         "</td></tr><tr><th>Started</th><td>" + ui_time(r.started_ms) +
         "</td></tr><tr><th>Finished</th><td>" + ui_time(r.finished_ms) +
         "</td></tr><tr><th>Expires</th><td>" + ui_time(r.expires_ms) + "</td></tr>";
  if (!r.note.empty()) out += "<tr><th>Note</th><td>" + html_escape(r.note) + "</td></tr>";
  out += "<tr><th>Owner</th><td>" + html_escape(r.owner.host) + " pid " +
         std::to_string(r.owner.pid) + "</td></tr></table>";
  out += "<div class=\"actions\">";
  if (rerunnable)
    out += "<form method=\"post\" action=\"/ui/rerun\" class=\"inline\">" + csrf_field(csrf) +
           "<input type=\"hidden\" name=\"key\" value=\"" + html_escape(r.key) +
           "\"><button type=\"submit\" id=\"rerun\">Re-run</button></form> ";
  out +=
      "<form method=\"post\" action=\"/ui/remove\" class=\"inline confirm\" "
      "data-confirm=\"Remove this record?\">" +
      csrf_field(csrf) + "<input type=\"hidden\" name=\"key\" value=\"" + html_escape(r.key) +
      "\"><button type=\"submit\" id=\"remove\" class=\"danger\">Remove</button></form></div>";
  out +=
      "<h2>Request</h2><p class=\"muted\">As stored: credential headers are kept by name "
      "only.</p>" +
      ui_request_block(r.request);
  if (r.response) {
    out += "<h2>Answer</h2><table class=\"kv\"><tr><th>Status</th><td>" +
           std::to_string(r.response->status) + "</td></tr>";
    for (const auto& [name, value] : r.response->headers)
      out += "<tr><th>" + html_escape(name) + "</th><td>" + html_escape(value) + "</td></tr>";
    out += "</table>";
  }
  out += "<h2>Output</h2>";
  if (r.status == core::Status::running) {
    // Followed live by the page's script (SPEC §10); without it, a reload shows the end.
    out += "<div id=\"live-output\" data-src=\"/ui/attempts/" + html_escape(url_component(r.key)) +
           "/output?attempt=" + std::to_string(r.attempt) +
           "\"><p class=\"muted\" id=\"live-state\">Running: its output so far, as it "
           "comes.</p><pre id=\"live-text\"></pre></div>";
  } else if (!output.readable) {
    out += "<p class=\"error\">The stored output cannot be read.</p>";
  } else {
    out += ui_stream_block(r, output.out, "stdout") + ui_stream_block(r, output.err, "stderr");
    if (r.output_truncated) out += "<p class=\"muted\">The output was cut at the cap.</p>";
  }
  // Below the request and the output: a long history does not push them off the page.
  out += ui_attempts_block(r, attempts);
  out += k_ui_foot;
  return out;
}

std::string render_ui_message(int status, const std::string& title, const std::string& text) {
  return ui_head(title) + "<h1>" + std::to_string(status) + " " + html_escape(title) + "</h1><p>" +
         html_escape(text) + "</p><p><a href=\"/ui\">Delivery log</a></p>" + std::string(k_ui_foot);
}

std::string render_ui_login(const std::string& error) {
  std::string out = ui_head("Log in");
  out +=
      "<h1>Log in</h1><p>Open the link <code>idem serve</code> printed at its start (it works "
      "once), or give the page's token: the file beside the store, its path + "
      "<code>.ui-token</code>.</p>";
  if (!error.empty()) out += "<p class=\"error\">" + html_escape(error) + "</p>";
  out +=
      "<form method=\"post\" action=\"/ui/login\"><label>Token <input type=\"password\" "
      "name=\"token\" autocomplete=\"off\"></label> <button type=\"submit\">Log in</button></form>";
  return out + std::string(k_ui_foot);
}

std::string_view ui_app_js() {
  return R"JS(// idem's delivery log: live update of the first page, confirmations. Progressive: the
// page works without it.
(function () {
  'use strict';
  var rows = document.getElementById('rows');
  var live = document.getElementById('live');
  var timer = null;
  function refresh() {
    if (!rows || !live || !live.checked || document.hidden) return;
    fetch(rows.getAttribute('data-src'), {credentials: 'same-origin', cache: 'no-store'})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null && html !== rows.innerHTML) rows.innerHTML = html; })
      .catch(function () {});
  }
  function schedule() {
    if (timer) { clearInterval(timer); timer = null; }
    if (!document.hidden) timer = setInterval(refresh, 3000);
  }
  if (rows && live) {
    document.addEventListener('visibilitychange', function () {
      schedule();
      if (!document.hidden) refresh();
    });
    live.addEventListener('change', function () { if (live.checked) refresh(); });
    schedule();
  }
  // A re-run under way in the background: its progress line follows it until it ends.
  var progress = document.getElementById('progress');
  if (progress && progress.getAttribute('data-active')) {
    var follow = setInterval(function () {
      fetch('/ui/progress', {credentials: 'same-origin', cache: 'no-store'})
        .then(function (r) {
          if (!r.ok) return null;
          if (r.headers.get('Idem-Rerun-Active') !== 'true') clearInterval(follow);
          return r.text();
        })
        .then(function (text) { if (text !== null) progress.textContent = text; })
        .catch(function () {});
    }, 1000);
  }
  // A running attempt's output as it comes (an event stream of base64 chunks, resumed by the
  // browser after a cut where it left off); stderr marked. At most k bytes kept on the page.
  var liveBox = document.getElementById('live-output');
  if (liveBox && window.EventSource && window.TextDecoder) {
    var text = document.getElementById('live-text');
    var state = document.getElementById('live-state');
    var decoders = {stdout: new TextDecoder(), stderr: new TextDecoder()};
    var kept = 0, limit = 1 << 20;
    var source = new EventSource(liveBox.getAttribute('data-src'));
    var add = function (name, e) {
      var raw = atob(e.data), bytes = new Uint8Array(raw.length);
      for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
      var piece = decoders[name].decode(bytes, {stream: true});
      var node = document.createTextNode(piece);
      if (name === 'stderr') {
        var span = document.createElement('span');
        span.className = 'stderr';
        span.appendChild(node);
        node = span;
      }
      text.appendChild(node);
      kept += piece.length;
      while (kept > limit && text.firstChild) {
        kept -= text.firstChild.textContent.length;
        text.removeChild(text.firstChild);
      }
      text.scrollTop = text.scrollHeight;
    };
    source.addEventListener('stdout', function (e) { add('stdout', e); });
    source.addEventListener('stderr', function (e) { add('stderr', e); });
    source.addEventListener('end', function (e) {
      source.close();
      var end = {};
      try { end = JSON.parse(e.data); } catch (err) {}
      state.textContent = 'Ended: ' + (end.outcome || 'unknown') +
          (end.exit_code !== undefined ? ', exit ' + end.exit_code : '') + '. ';
      var again = document.createElement('a');
      again.href = window.location.href;
      again.textContent = 'Reload for the record';
      state.appendChild(again);
    });
  }
  document.querySelectorAll('form.confirm').forEach(function (form) {
    form.addEventListener('submit', function (e) {
      if (!window.confirm(form.getAttribute('data-confirm'))) e.preventDefault();
    });
  });
})();
)JS";
}

std::string_view ui_icon_svg() {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\"><rect width=\"16\" "
         "height=\"16\" rx=\"3\" fill=\"#1d2430\"/><path d=\"M4 8h8M8 4v8\" stroke=\"#fff\" "
         "stroke-width=\"2\"/></svg>\n";
}

std::string_view ui_app_css() {
  return R"CSS(body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2430;background:#f7f8fa}
header{background:#1d2430;color:#fff;padding:8px 16px}header a{color:#fff;font-weight:bold;text-decoration:none}header nav{display:inline;margin-left:16px}header nav a{font-weight:normal;margin-right:12px}
main{padding:12px 16px}a{color:#1a56c4}
form.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin-bottom:8px}
form.filters label{display:flex;flex-direction:column;font-size:12px}
form.inline{display:inline}.bar{display:flex;gap:16px;align-items:center}
table.records{border-collapse:collapse;width:100%;background:#fff}
table.records th,table.records td{border-bottom:1px solid #e3e6ea;padding:4px 8px;text-align:left;vertical-align:top}
table.kv th{text-align:left;padding-right:12px;vertical-align:top;font-weight:600}
.badge{border-radius:8px;padding:1px 8px;background:#e3e6ea}
.st-failed .badge,.badge.st-failed{background:#fbd5d5}.st-succeeded .badge,.badge.st-succeeded{background:#d3f2dc}
.st-running .badge,.badge.st-running{background:#dbe7fb}.st-queued .badge{background:#ece4fb}.st-abandoned .badge,.badge.st-abandoned{background:#fde9c8}
pre{background:#fff;border:1px solid #e3e6ea;padding:8px;white-space:pre-wrap;word-break:break-all;max-height:24em;overflow:auto}
.stderr{color:#a11}.muted{color:#6b7380}.notice{background:#d3f2dc;padding:6px 10px}.error{background:#fbd5d5;padding:6px 10px}
.danger{color:#a11}.pages{margin-top:8px}.actions{margin:8px 0}
#rows td:nth-child(2),#key,table.kv td{overflow-wrap:anywhere;word-break:break-all}
#rows td:nth-child(2){max-width:40vw}
)CSS";
}

}  // namespace idem::ui
