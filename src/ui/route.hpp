#pragma once
// The delivery-log page (`idem serve --ui`): its routes under /ui, their checks (the Host, the
// bearer token off loopback, the CSRF token and Origin of every POST) and headers (a strict
// Content-Security-Policy). What it reads and changes comes from the daemon (serve/), through
// UiBackend: this room knows no store and no hook.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.hpp"
#include "net/routes.hpp"
#include "ui/filter.hpp"
#include "ui/page.hpp"

namespace idem::http {

// What a listing asks of the store: live records of `status` (none: any) and `kind` whose key
// starts with `prefix` and that started in the range, newest first, after `after`.
struct UiListing {
  std::optional<core::Status> status;
  std::string prefix;
  std::string kind;      // empty: any
  int64_t since_ms = 0;  // started at or after; 0: no bound
  int64_t until_ms = 0;  // started before; 0: no bound
  std::optional<UiCursor> after;
  int64_t now_ms = 0;
};

enum class UiRemoved { removed, not_found, running };

// What a re-run did: ran (a new attempt, answered `http_status`), or why not.
struct UiRerun {
  bool ran = false;
  int64_t attempt = 0;
  int http_status = 0;
  std::string why;  // when not ran: one line
};

struct UiBackend {
  std::function<void(const UiListing&, const std::function<bool(const core::Record&)>&)> list;
  // The record without its output (Store::get_without_output).
  std::function<std::optional<core::Record>(const std::string& key)> get;
  // A reader of the record's stored output by ranges (Store::open_output), which holds a store
  // connection until it is dropped: what the detail shows of it and the download are read a
  // window at a time, never whole.
  std::function<core::EncodedReader(const core::Record&)> open_output;
  // The page of the record's attempts numbered below `before` (0: the newest).
  std::function<UiAttempts(const core::Record&, int64_t before)> attempts;
  std::function<UiRemoved(const std::string& key)> remove;
  // Whether `record` can be re-run (a failed delivery of a native hook the config has now).
  std::function<bool(const core::Record&)> rerunnable;
  std::function<UiRerun(const core::Record&)> rerun;
  std::function<int64_t()> now_ms;
};

struct UiOptions {
  // Off loopback: the ledger's bearer token, asked of every request (header or cookie).
  std::optional<std::string> token;
  std::string csrf_secret;  // per daemon, random
  // Where the listener is loopback: the Host header must name a loopback host (a page of
  // another site resolving its name to 127.0.0.1 is refused).
  bool loopback = true;
};

// Records read at most for one page before it is shown as it is (with a cursor to go on).
inline constexpr int64_t k_ui_scan_budget = 5000;
inline constexpr size_t k_ui_page_rows = 50;
inline constexpr size_t k_ui_bulk_rerun_max = 20;

// One page of the listing for `filter` (the scan bounded by k_ui_scan_budget, or by a fifth of
// it where each record must be read whole for the result class).
UiPage collect_ui_page(const UiBackend& backend, const UiFilter& filter, int64_t now_ms);

std::shared_ptr<const Route> ui_route(UiBackend backend, UiOptions options);

// Whether the page's route takes `path`: /ui and everything under /ui/.
bool is_ui_path(std::string_view path);

// Whether `host` (a Host header's value, port and all) names a loopback host.
bool is_loopback_host(std::string_view host);

}  // namespace idem::http
