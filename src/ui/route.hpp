#pragma once
// The delivery-log page (`idem serve --ui`, on a listener of its own): its routes under /ui,
// their checks (the Host, a login session or the UI token, the CSRF token and origin of every
// POST) and headers (a strict Content-Security-Policy). What it reads and changes comes from the
// daemon (serve/), through UiBackend: this room knows no store and no hook.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.hpp"
#include "front/route.hpp"
#include "ui/filter.hpp"
#include "ui/page.hpp"

namespace idem::ui {

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

// What the event stream of an attempt's output is handed, a chunk at a time: its bytes, of
// stdout or stderr, and the offset after them; false: stop (the client is gone).
using UiEmit = std::function<bool(core::Stream, std::string_view bytes, int64_t after)>;
// One look at a followed attempt (UiBackend::follow): emits what there is, and returns the data
// of the stream's `end` event once the attempt has ended and all its output was emitted
// ({"exit_code":…,"outcome":…}); nullopt while it runs (look again).
using UiFollowLook = std::function<std::optional<std::string>(const UiEmit&)>;

struct UiBackend {
  // Lists; returns where a scan bounded by scan_limit stopped (nullopt: at the listing's end).
  std::function<std::optional<UiCursor>(const UiListing&,
                                        const std::function<bool(const core::Record&)>&)>
      list;
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
  // The serial groups with waiters (at most k_ui_queue_groups), each with its line's first
  // k_ui_queue_rows waiters (Store::queued_groups, Store::group_line).
  std::function<std::vector<UiQueue>()> queues;
  // The store's expectations (contract §11), each with its last run, next due time and newest
  // findings (at most k_ui_schedule_findings).
  std::function<std::vector<UiSchedule>()> schedules;
  // Follows `key`'s attempt `attempt` (0: its latest) from byte `from` on (SPEC §10): a look at
  // a time, each on a store connection of its own (none is held between looks).
  std::function<UiFollowLook(const std::string& key, int64_t from, int64_t attempt)> follow;
  // Whether the daemon drains: an event stream then ends (a client reconnects elsewhere).
  std::function<bool()> stopping;
  std::function<int64_t()> now_ms;
  // Runs work after the answer (a re-run of several deliveries); the daemon's drain waits for
  // it. Unset: on the calling thread.
  std::function<void(std::function<void()>)> background;
};

// A re-run of the failed deliveries a list page showed, done in the background one after
// another, one such re-run at a time per daemon; its progress is shown on the list. Kept across
// reloads.
class UiBulkRerun {
 public:
  struct Progress {
    bool active = false;                  // under way
    size_t total = 0, done = 0, ran = 0;  // keys asked for, looked at, re-run
    std::string line() const;  // "Re-running 3 failed deliveries: 1 done (1 ran again)..."
  };
  // Takes `total` keys unless a re-run is under way (false).
  bool start(size_t total);
  void step(bool ran);
  void finish();
  Progress progress() const;

 private:
  mutable std::mutex mutex_;
  Progress progress_;
};

// The page's credentials, made at the daemon's start and kept across reloads.
struct UiCredentials {
  // The UI token (the 0600 file beside the store, never the ledger's): a login form takes it,
  // and a script may send it as "Authorization: Bearer TOKEN".
  std::string token;
  // Signs the session cookies and keys their CSRF tokens; new at every start, so a restart
  // ends every session.
  std::string secret;
  // The one-time login token of the URL the daemon prints at start: good for one login.
  std::string login_once;
  std::atomic<bool> login_once_used{false};
};

struct UiOptions {
  std::shared_ptr<UiCredentials> credentials;
  std::shared_ptr<UiBulkRerun> bulk = std::make_shared<UiBulkRerun>();
  // Where the listener is loopback: the Host header must name a loopback host (a page of
  // another site resolving its name to 127.0.0.1 is refused).
  bool loopback = true;
  // The listener speaks TLS: the session cookie is Secure (so it is also behind a proxy that
  // says X-Forwarded-Proto: https).
  bool tls = false;
  int64_t session_ms = 12 * 3600 * 1000;  // how long a login lasts
};

// Index entries the store reads at most for one page (every filter, combined ones too) before
// it is shown as it is, with a cursor to go on: a page's cost is bounded whatever the store's
// size and the filter's rarity.
inline constexpr int64_t k_ui_scan_budget = 5000;
inline constexpr size_t k_ui_page_rows = 50;
inline constexpr size_t k_ui_bulk_rerun_max = k_ui_page_rows;  // the rows a page shows
inline constexpr int64_t k_ui_queue_groups = 50;               // groups the queue view lists
inline constexpr int64_t k_ui_queue_rows = 20;                 // waiters it lists of each
inline constexpr int64_t k_ui_schedule_findings = 20;  // findings the schedules view lists of each
// Event streams of attempts' output served at once (each holds a connection of the page's
// listener); one more is answered 503.
inline constexpr int k_ui_max_streams = 8;
// Between two looks at an attempt that wrote nothing new; a comment line keeps the stream alive
// (and finds a client that left) after this long without an event.
inline constexpr int64_t k_ui_stream_pause_ms = 20;
inline constexpr int64_t k_ui_stream_keepalive_ms = 15000;
// Bytes of output in one event at most.
inline constexpr size_t k_ui_event_bytes = 48 * 1024;

// The record name of an event stream's path, /ui/attempts/{name}/output with {name}
// percent-encoded; nullopt for any other path (or a bad escape).
std::optional<std::string> ui_stream_name(std::string_view path);

// What the store is asked for `filter`'s page (its budget of entries included).
UiListing ui_listing(const UiFilter& filter, int64_t now_ms);

// One page of the listing for `filter`, every condition of it answered by the store (the scan
// bounded by k_ui_scan_budget).
UiPage collect_ui_page(const UiBackend& backend, const UiFilter& filter, int64_t now_ms);

std::shared_ptr<const front::Route> ui_route(UiBackend backend, UiOptions options);

// Whether the page's route takes `path`: /ui and everything under /ui/.
bool is_ui_path(std::string_view path);

// A session cookie's value for a login at `now_ms` lasting `lifetime_ms` ("EXPIRY.NONCE.MAC",
// signed with `secret`), and whether a value is one that has not expired at `now_ms`.
std::string make_ui_session(const std::string& secret, int64_t now_ms, int64_t lifetime_ms);
bool valid_ui_session(const std::string& secret, std::string_view value, int64_t now_ms);

}  // namespace idem::ui
