// `idem rm`: forget records so the next attempt runs.
#include <iostream>

#include "cli/inspect.hpp"
#include "core/errors.hpp"
#include "core/key.hpp"
#include "proc/liveness.hpp"

namespace idem::cli {

CLI::App* register_rm(CLI::App& app, RmOptions& o) {
  auto* rm = app.add_subcommand("rm", "Delete records so the next attempt runs");
  rm->add_option("keys", o.keys,
                 "Keys to delete (or record names PATH#KEY, as idem ls prints them)")
      ->required()
      ->type_name("KEY...");
  rm->add_flag("--force", o.force, "Also delete a record whose owner is still running");
  rm->footer(
      "Exit: 0 all deleted; 1 a key had no record; 75 a key is running (kept; use --force).\n"
      "Example:\n  idem rm order-42");
  return rm;
}

int run_rm(const GlobalOptions& global, const RmOptions& o) {
  for (const auto& key : o.keys) core::validate_record_name(key);
  auto store = open_store(global);
  int code = k_exit_ok;
  for (const auto& key : o.keys) {
    const std::string shown = "key '" + core::display_key(key) + "'";
    switch (store->remove(key, o.force, proc::owner_gone)) {
      case store::RemoveResult::removed:
        break;
      case store::RemoveResult::not_found:
        std::cerr << "idem: no record for " << shown << "\n";
        if (code == k_exit_ok) code = k_exit_already_done;
        break;
      case store::RemoveResult::running:
        std::cerr << "idem: " << shown << " is running; kept (use --force to delete it anyway)\n";
        code = k_exit_running;
        break;
    }
  }
  return code;
}

}  // namespace idem::cli
