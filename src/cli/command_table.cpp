// The one list of subcommands. A row binds a subcommand's options struct to its register_X and
// run_X; the order of the rows is the order of `idem --help` and `idem --list-commands`.
#include "cli/command_table.hpp"

#include <array>
#include <memory>

#include "cli/begin.hpp"
#include "cli/each.hpp"
#include "cli/inspect.hpp"
#include "cli/run.hpp"
#include "cli/serve.hpp"
#include "core/errors.hpp"

namespace idem::cli {

bool is_quiet_refusal(const Error& e) {
  return e.code() == k_exit_running && dynamic_cast<const LeftoversRefusal*>(&e) == nullptr;
}

namespace {

// Registers a subcommand whose options live in one Options struct, owned by the runner. With
// quiet_refusals (a flag of Options, such as --quiet), a quiet refusal (is_quiet_refusal) ends with
// its code and no message.
template <typename Options, auto register_fn, auto run_fn, bool Options::*quiet_refusals = nullptr>
Registered bind(CLI::App& app) {
  auto options = std::make_shared<Options>();
  CLI::App* sub = register_fn(app, *options);
  auto run = [options](const GlobalOptions& global) -> int {
    try {
      return run_fn(global, *options);
    } catch (const Error& e) {
      if constexpr (quiet_refusals != nullptr) {
        if ((*options).*quiet_refusals && is_quiet_refusal(e)) return e.code();
      }
      throw;
    }
  };
  return Registered{sub, run};
}

constexpr std::array k_subcommands = {
    Subcommand{"run", bind<RunOptions, register_run, run_run, &RunOptions::quiet>},
    Subcommand{"ls", bind<LsOptions, register_ls, run_ls>},
    Subcommand{"show", bind<ShowOptions, register_show, run_show>},
    Subcommand{"log", bind<LogOptions, register_log, run_log>},
    Subcommand{"tail", bind<TailOptions, register_tail, run_tail>},
    Subcommand{"status", bind<StatusOptions, register_status, run_status>},
    Subcommand{"rm", bind<RmOptions, register_rm, run_rm>},
    Subcommand{"gc", bind<GcOptions, register_gc, run_gc>},
    Subcommand{"expect", bind<ExpectOptions, register_expect, run_expect>},
    Subcommand{"check", bind<CheckOptions, register_check, run_check>},
    Subcommand{"serve", bind<ServeOptions, register_serve, run_serve>},
    Subcommand{"each", bind<EachOptions, register_each, run_each>},
    Subcommand{"begin", bind<BeginOptions, register_begin, run_begin, &BeginOptions::quiet>},
    Subcommand{"end", bind<EndOptions, register_end, run_end>},
    Subcommand{"export", bind<ExportOptions, register_export, run_export>},
    Subcommand{"import", bind<ImportOptions, register_import, run_import>},
    Subcommand{"doctor", bind<DoctorOptions, register_doctor, run_doctor>},
};

}  // namespace

std::span<const Subcommand> subcommands() { return k_subcommands; }

}  // namespace idem::cli
