// idem: make side effects safe to retry. Builds the command line, dispatches once, and maps every
// error to one "idem: ..." line and its exit code (see core/exit_code.hpp).
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>

#include "cli/begin.hpp"
#include "cli/common.hpp"
#include "cli/each.hpp"
#include "cli/inspect.hpp"
#include "cli/run.hpp"
#include "cli/serve.hpp"
#include "core/errors.hpp"

namespace {

// The first word of the command line that is not a global option: the subcommand's name, if the
// user gave one. Empty when there is none.
std::string command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (idem::cli::is_global_option_with_value(arg)) {
      ++i;
      continue;
    }
    if (arg == "--") return "";
    if (!arg.empty() && arg[0] == '-') continue;
    return std::string(arg);
  }
  return "";
}

bool is_refusal(int code) {
  return code == idem::k_exit_conflict || code == idem::k_exit_abandoned ||
         code == idem::k_exit_running;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace idem;
  using namespace idem::cli;
  // Past a file-size limit (ulimit -f) writes must fail with EFBIG, which SQLite reports and idem
  // turns into exit 74, rather than SIGXFSZ killing idem in the middle of a transaction.
  ::signal(SIGXFSZ, SIG_IGN);

  CLI::App app{"idem makes side effects safe to retry: one key, one execution; later attempts "
               "replay the stored outcome.",
               "idem"};
  app.require_subcommand(1);
  app.fallthrough();  // global options are accepted after the subcommand too
#ifdef IDEM_TEST_HOOKS
  app.set_version_flag("--version", std::string("idem ") + IDEM_VERSION + " (test hooks)");
#else
  app.set_version_flag("--version", std::string("idem ") + IDEM_VERSION);
#endif
  GlobalOptions global;
  add_global_options(app, global);
  app.footer(
      "Exit codes: the command's own; 1 nothing to do / not found; 64 usage; 65 conflict;\n"
      "69 abandoned; 74 store; 75 running; 77 not the owner (end); 124 timeout;\n"
      "126/127 cannot run. See idem COMMAND --help.\n"
      "Example:\n  idem run -k nightly-$(date +%F) -- ./backup.sh");

  RunOptions run_options;
  LsOptions ls_options;
  ShowOptions show_options;
  StatusOptions status_options;
  RmOptions rm_options;
  GcOptions gc_options;
  ServeOptions serve_options;
  EachOptions each_options;
  BeginOptions begin_options;
  EndOptions end_options;
  CLI::App* run = register_run(app, run_options);
  CLI::App* ls = register_ls(app, ls_options);
  CLI::App* show = register_show(app, show_options);
  CLI::App* status = register_status(app, status_options);
  CLI::App* rm = register_rm(app, rm_options);
  CLI::App* gc = register_gc(app, gc_options);
  CLI::App* serve = register_serve(app, serve_options);
  CLI::App* each = register_each(app, each_options);
  CLI::App* begin = register_begin(app, begin_options);
  CLI::App* end = register_end(app, end_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 takes an unknown word for a stray argument and says a subcommand is required.
    if (app.get_subcommands().empty()) {
      std::string word = command_word(argc, argv);
      auto named = app.get_subcommands([&](CLI::App* sub) { return sub->check_name(word); });
      if (!word.empty() && named.empty()) {
        std::cerr << "idem: unknown command '" << word << "'; see 'idem --help'\n";
        return k_exit_usage;
      }
    }
    std::string what = e.what();
    std::cerr << "idem: " << what << " (see idem --help)\n";
    return k_exit_usage;
  }

  try {
    if (run->parsed()) return run_run(global, run_options);
    if (ls->parsed()) return run_ls(global, ls_options);
    if (show->parsed()) return run_show(global, show_options);
    if (status->parsed()) return run_status(global, status_options);
    if (rm->parsed()) return run_rm(global, rm_options);
    if (gc->parsed()) return run_gc(global, gc_options);
    if (serve->parsed()) return run_serve(global, serve_options);
    if (each->parsed()) return run_each(global, each_options);
    if (begin->parsed()) return run_begin(global, begin_options);
    if (end->parsed()) return run_end(global, end_options);
  } catch (const Error& e) {
    bool quiet = ((run->parsed() && run_options.quiet) || (begin->parsed() && begin_options.quiet)) &&
                 is_refusal(e.code());
    if (!quiet) std::cerr << "idem: " << e.what() << "\n";
    return e.code();
  } catch (const std::exception& e) {
    std::cerr << "idem: internal error: " << e.what() << "\n";
    return k_exit_internal;
  }
  return k_exit_usage;
}
