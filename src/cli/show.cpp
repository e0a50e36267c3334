// `idem show`: one record in full, or its captured bytes raw.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/inspect.hpp"
#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "core/record_json.hpp"
#include "core/response.hpp"
#include "proc/liveness.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"

namespace idem::cli {

CLI::App* register_show(CLI::App& app, ShowOptions& o) {
  auto* show = app.add_subcommand("show", "Show one record in full");
  show->add_option("key", o.key, "The record's key (or its name PATH#KEY, as idem ls prints it)")
      ->required()
      ->type_name("KEY");
  show->add_flag("--json", o.json, "One JSON object, output as base64 (stdout_b64, stderr_b64)");
  show->add_flag("--stdout", o.stdout_raw, "Write the captured stdout bytes raw, nothing else");
  show->add_flag("--stderr", o.stderr_raw, "Write the captured stderr bytes raw, nothing else");
  show->add_flag("--request", o.request,
                 "Print what was asked (argv and working directory) as JSON");
  show->add_option("--attempts", o.attempts,
                   "How many of the newest attempts to list, or 'all' (every one the store keeps)")
      ->type_name("N|all")
      ->capture_default_str();
  show->footer(
      "Examples:\n  idem show backup-2026-11-29\n  idem show order-42 --stdout > receipt.txt");
  return show;
}

namespace {

using Chunks = std::vector<core::ChunkView>;

size_t stream_size(const Chunks& chunks, core::Stream stream) {
  size_t n = 0;
  for (const auto& chunk : chunks)
    if (chunk.stream == stream) n += chunk.bytes.size();
  return n;
}

// The human form of `idem show`: one "name: value" line each.
void print_record(const core::Record& r, const nlohmann::json& j, const Chunks& captured,
                  const nlohmann::json& request, bool group_alive) {
  auto line = [](const char* name, const std::string& value) {
    std::cout << name << ": " << value << "\n";
  };
  auto or_dash = [](const nlohmann::json& v) {
    return v.is_null() ? std::string("-") : v.get<std::string>();
  };
  line("key", r.key);
  line("status", colour_status(j["status"].get<std::string>(), use_colour(1)));
  // A proxied request runs no command: its outcome is the upstream's answer.
  const bool proxied = r.kind == "proxy";
  if (!proxied) line("exit", exit_summary(r));
  if (r.response) line("answer", "HTTP " + std::to_string(r.response->status));
  line("attempt", std::to_string(r.attempt));
  // The policy recorded with the attempt, which decides what a later attempt does with a failure.
  if (proxied)
    line("failures",
         "an upstream answer is replayed as stored; an outcome unknown (no answer) is "
         "final, kept until removed (idem rm)");
  else
    line("failures", r.replay_failures
                         ? "final: a failure is replayed to every later attempt (--replay-failures)"
                         : "a failure runs again at the next attempt");
  line("started", j["started_at"].get<std::string>());
  line("finished", or_dash(j["finished_at"]));
  line("duration", r.finished_ms ? util::human_duration(r.finished_ms - r.started_ms) : "-");
  line("expires", or_dash(j["expires_at"]));
  line("owner", "pid " + std::to_string(r.owner.pid) + " on " + r.owner.host);
  // Serial groups: the group as the store names it ("run:" + --serial's, a hook's PATH#GROUP).
  if (!r.serial_group.empty()) line("serial group", r.serial_group);
  if (!r.superseded_by.empty())
    line("superseded", "by '" + core::display_key(r.superseded_by) + "' before it ran");
  if (r.lease_expires_ms) line("lease", j["lease_expires_at"].get<std::string>());
  if (group_alive && (j["status"] == "abandoned" || j["status"] == "failed" ||
                      (j["status"] == "expired" && r.status == core::Status::failed)))
    line("processes", core::processes_place(r.process_group) +
                          " still has live processes (the next run waits for them: 75; "
                          "--kill-stale ends them)");
  line("fingerprint", r.fingerprint);
  if (request.is_object() && request.contains("argv")) line("command", request["argv"].dump());
  if (request.is_object() && request.contains("cwd"))
    line("cwd", request["cwd"].get<std::string>());
  line("stdout", std::to_string(stream_size(captured, core::Stream::out)) + " bytes");
  line("stderr", std::to_string(stream_size(captured, core::Stream::err)) + " bytes");
  // The cap counts both streams together and, once reached, drops every later write of either:
  // the record's marks say which lost bytes (none in a record from before them: then neither is
  // named).
  if (r.output_truncated) {
    std::string lost;
    for (core::Stream stream : core::CapturedOutput::lost_streams(captured))
      lost += std::string(lost.empty() ? "" : " and ") + core::stream_name(stream);
    line("truncated", "only the first " + std::to_string(r.output_bytes) +
                          " bytes were stored (--max-output); what " +
                          (lost.empty() ? std::string("either stream") : lost) +
                          " wrote after them was dropped");
  }
  if (!r.note.empty()) line("note", r.note);
  line("replays", r.replays ? std::to_string(r.replays) + ", the last " +
                                  j["last_replay_at"].get<std::string>()
                            : "0");
}

// --attempts: a count of at least 1, or "all" (0: no limit).
int64_t attempts_limit(const std::string& text) {
  if (text == "all") return 0;
  int64_t n = 0;
  bool ok = !text.empty() && text.size() <= 9;
  for (char c : text) {
    if (c < '0' || c > '9') ok = false;
    if (ok) n = n * 10 + (c - '0');
  }
  if (!ok || n < 1)
    throw UsageError("--attempts: '" + text.substr(0, 32) +
                     "' is neither a count of attempts (1 or more) nor 'all'");
  return n;
}

}  // namespace

int run_show(const GlobalOptions& global, const ShowOptions& o) {
  core::validate_record_name(o.key);
  const int64_t limit = attempts_limit(o.attempts);
  auto store = open_store(global);
  auto record = store->get(o.key);
  if (!record)
    throw Error(k_exit_already_done, "no record for key '" + core::display_key(o.key) + "'");
  const auto& r = *record;
  // Views into the record's output: the stored bytes are not copied again.
  auto output = core::CapturedOutput::chunks_of(r.output);
  if (!output)
    throw StoreError("stored output of key '" + core::display_key(o.key) + "' is corrupt");

  if (o.stdout_raw || o.stderr_raw) {
    // Both streams asked for: write each to its own descriptor, in the original order.
    for (const auto& chunk : *output) {
      if (chunk.stream == core::Stream::out && o.stdout_raw) util::write_all(1, chunk.bytes);
      if (chunk.stream == core::Stream::err && o.stderr_raw)
        util::write_all(o.stdout_raw ? 2 : 1, chunk.bytes);
    }
    return 0;
  }
  nlohmann::json request = nlohmann::json::parse(r.request, nullptr, false);
  if (o.request) {
    std::cout << request.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  const int64_t now = util::process_clock().now_ms();
  // What an attempt left running when its owner died (a retry refuses to overlap it).
  const bool group_alive =
      proc::process_group_alive(r.owner, r.process_group, core::attempt_mark(r));
  nlohmann::json j = core::record_detail_json(r, now, owner_gone_now(r, now), group_alive);
  const store::HistoryPage page = store->history_page(o.key, store::HistoryQuery{limit, 0});
  const std::vector<core::HistoryEntry> history = shown_history(r, page.entries, now);
  j["attempts"] = core::history_array(history);
  // Older attempts: kept ones not listed (--attempts) and ones the store no longer keeps.
  j["earlier_attempts"] = page.earlier();
  j["attempts_not_kept"] = page.not_kept();
  if (o.json) {
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  print_record(r, j, *output, request, group_alive);
  std::cout << "attempts:";
  if (page.earlier() > 0) {
    std::cout << " the last " << history.size() << " of " << page.last;
    if (page.not_kept() > 0) std::cout << " (" << page.not_kept() << " older no longer kept)";
    if (page.earlier() > page.not_kept()) std::cout << "; --attempts all lists every one kept";
  }
  std::cout << "\n";
  print_history_table(history, "  ");
  return 0;
}

}  // namespace idem::cli
