// `idem status`: one word for scripts.
#include <iostream>

#include "cli/inspect.hpp"
#include "core/health.hpp"
#include "core/key.hpp"
#include "proc/cgroup.hpp"
#include "proc/liveness.hpp"
#include "util/clock.hpp"

namespace idem::cli {

CLI::App* register_status(CLI::App& app, StatusOptions& o) {
  auto* status = app.add_subcommand(
      "status",
      "Print one word: none, running, succeeded, failed, abandoned, queued, superseded or "
      "expired");
  status->add_option("key", o.key, "The record's key (or its name PATH#KEY, as idem ls prints it)")
      ->required()
      ->type_name("KEY");
  status->footer("Example:\n  [ \"$(idem status nightly)\" = succeeded ] || alert");
  return status;
}

int run_status(const GlobalOptions& global, const StatusOptions& o) {
  core::validate_record_name(o.key);
  auto store = open_store(global);
  auto record = store->get_without_output(o.key);  // a word: the output is never read
  const util::Clock& clock = util::process_clock();
  std::cout << (record ? effective_status(*record, clock.now_ms()) : "none") << "\n";
  // The word stays what scripts compare; what holds the key besides is said on stderr.
  if (record && record->process_group.pgid != 0) {
    const std::string status = effective_status(*record, clock.now_ms());
    if (status != "failed" && status != "abandoned" && status != "expired") return 0;
    const bool alive = proc::process_group_alive(record->owner, record->process_group,
                                                 core::attempt_mark(*record));
    if (auto f = core::leftovers_finding(*record, status, alive, proc::cgroup_home().mount))
      std::cerr << "idem: " << f->problem << "; " << f->fix << "\n";
  }
  return 0;
}

}  // namespace idem::cli
