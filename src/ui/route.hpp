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

// What a listing asks of the store: live records of `status` (none: any), `kind` and `result`
// whose key starts with `prefix` and that started in the range, newest first, after `after`,
// reading at most `scan_limit` entries of the index it walks (store::ListQuery::scan_limit).
struct UiListing {
  std::optional<core::Status> status;
  std::string prefix;
  std::string kind;      // empty: any
  std::string result;    // a result class (core::result_class); empty: any
  int64_t since_ms = 0;  // started at or after; 0: no bound
  int64_t until_ms = 0;  // started before; 0: no bound
  std::optional<UiCursor> after;
  int64_t now_ms = 0;
  int64_t scan_limit = 0;
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
  // Lists; returns where a scan bounded by scan_limit stopped (nullopt: at the listing's end).
  std::function<std::optional<UiCursor>(const UiListing&,
                                        const std::function<bool(const core::Record&)>&)>
      list;
  std::function<std::optional<core::Record>(const std::string& key)> get;
  std::function<std::vector<UiAttempt>(const core::Record&)> attempts;
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

// Index entries the store reads at most for one page (every filter, combined ones too) before
// it is shown as it is, with a cursor to go on: a page's cost is bounded whatever the store's
// size and the filter's rarity.
inline constexpr int64_t k_ui_scan_budget = 5000;
inline constexpr size_t k_ui_page_rows = 50;
inline constexpr size_t k_ui_bulk_rerun_max = 20;

// What the store is asked for `filter`'s page (its budget of entries included).
UiListing ui_listing(const UiFilter& filter, int64_t now_ms);

// One page of the listing for `filter`, every condition of it answered by the store (the scan
// bounded by k_ui_scan_budget).
UiPage collect_ui_page(const UiBackend& backend, const UiFilter& filter, int64_t now_ms);

std::shared_ptr<const Route> ui_route(UiBackend backend, UiOptions options);

// Whether the page's route takes `path`: /ui and everything under /ui/.
bool is_ui_path(std::string_view path);

// Whether `host` (a Host header's value, port and all) names a loopback host.
bool is_loopback_host(std::string_view host);

}  // namespace idem::http
