// `idem gc`: delete expired records in small batches and truncate the WAL.
#include <iostream>

#include "cli/inspect.hpp"
#include "core/duration.hpp"
#include "core/errors.hpp"
#include "proc/liveness.hpp"
#include "util/clock.hpp"

namespace idem::cli {

CLI::App* register_gc(CLI::App& app, GcOptions& o) {
  auto* gc =
      app.add_subcommand("gc", "Delete expired records (never running ones); print the count");
  gc->add_flag("--dry-run", o.dry_run, "Count what would be deleted, delete nothing");
  gc->add_option("--older-than", o.older_than,
                 "Also delete finished and abandoned records older than DURATION")
      ->type_name("DURATION");
  gc->footer("Example (crontab):\n  17 3 * * *  idem gc --older-than 30d");
  return gc;
}

int run_gc(const GlobalOptions& global, const GcOptions& o) {
  store::GcQuery q;
  if (!o.older_than.empty()) {
    q.older_than_ms = core::duration_arg("--older-than", o.older_than);
    if (q.older_than_ms == 0) throw UsageError("--older-than must be above zero");
  }
  q.dry_run = o.dry_run;
  auto store = open_store(global);
  const util::Clock& clock = util::process_clock();
  q.now_ms = clock.now_ms();
  // What crashed attempts published for followers (SPEC §10) goes first, so that the closing
  // checkpoint of gc takes it out of the WAL too.
  const int64_t stale = o.dry_run ? 0 : store->drop_stale_live(proc::owner_gone, q.now_ms);
  const store::GcResult done = store->gc(q);
  std::cout << (o.dry_run ? "would remove " : "removed ") << done.removed << "\n";
  if (stale > 0)
    std::cout << "dropped the live output left by " << stale
              << (stale == 1 ? " attempt" : " attempts") << "\n";
  if (const int64_t left = done.wal_bytes_left; left > 0) {
    const store::StoreLocation where = store_location(global);
    std::cerr << "idem: the WAL " << where.target << "-wal still holds " << core::format_size(left)
              << ": the checkpoint could not empty it while another process reads the store (or "
                 "holds its writer lock); run idem gc again once it is done (fuser "
              << where.target << "-wal names the processes that have it open)\n";
  }
  return 0;
}

}  // namespace idem::cli
