// idem: make side effects safe to retry. Builds the command line from the subcommand table
// (cli/command_table.hpp), dispatches once, and maps every error to one "idem: ..." line and its
// exit code (see core/exit_code.hpp).
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <vector>

#include "cli/common.hpp"
#include "cli/command_table.hpp"
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

// The top-level app: its help, --version and the global options.
void set_up_app(CLI::App& app, idem::cli::GlobalOptions& global) {
  app.require_subcommand(1);
  app.fallthrough();  // global options are accepted after the subcommand too
#ifdef IDEM_TEST_HOOKS
  app.set_version_flag("--version", std::string("idem ") + IDEM_VERSION + " (test hooks)");
#else
  app.set_version_flag("--version", std::string("idem ") + IDEM_VERSION);
#endif
  idem::cli::add_global_options(app, global);
  app.footer(
      "Exit codes: the command's own; 1 nothing to do / not found; 64 usage; 65 conflict;\n"
      "69 abandoned; 74 store; 75 running; 77 not the owner (end); 124 timeout;\n"
      "126/127 cannot run. See idem COMMAND --help.\n"
      "Example:\n  idem run -k nightly-$(date +%F) -- ./backup.sh");
}

// `idem --list-commands`, a hidden command line of its own (no CLI11 option, so the help stays as
// it is): one line per subcommand, its name, a tab and its one-line purpose, in the order of
// `idem --help`. The shell completions and the tests read it.
int list_commands(CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    std::cout << sub->get_name() << '\t' << sub->get_description() << '\n';
  return idem::k_exit_ok;
}

// A parse error's message and exit code. CLI11 takes an unknown word for a stray argument and
// says a subcommand is required: name the word instead.
int usage_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (app.get_subcommands().empty()) {
    std::string word = command_word(argc, argv);
    auto named = app.get_subcommands([&](CLI::App* sub) { return sub->check_name(word); });
    if (!word.empty() && named.empty()) {
      std::cerr << "idem: unknown command '" << word << "'; see 'idem --help'\n";
      return idem::k_exit_usage;
    }
  }
  std::string what = e.what();
  std::cerr << "idem: " << what << " (see idem --help)\n";
  return idem::k_exit_usage;
}

// Runs the subcommand the command line chose; every error becomes one line and its code.
int dispatch(const std::vector<idem::cli::Registered>& registered,
             const idem::cli::GlobalOptions& global) {
  try {
    for (const auto& sub : registered)
      if (sub.app->parsed()) return sub.run(global);
  } catch (const idem::Error& e) {
    std::cerr << "idem: " << e.what() << "\n";
    return e.code();
  } catch (const std::exception& e) {
    std::cerr << "idem: internal error: " << e.what() << "\n";
    return idem::k_exit_internal;
  }
  return idem::k_exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace idem;
  // Past a file-size limit (ulimit -f) writes must fail with EFBIG, which SQLite reports and idem
  // turns into exit 74, rather than SIGXFSZ killing idem in the middle of a transaction.
  ::signal(SIGXFSZ, SIG_IGN);

  CLI::App app{"idem makes side effects safe to retry: one key, one execution; later attempts "
               "replay the stored outcome.",
               "idem"};
  cli::GlobalOptions global;
  set_up_app(app, global);
  std::vector<cli::Registered> registered;
  for (const cli::Subcommand& sub : cli::subcommands()) registered.push_back(sub.add(app));
  if (argc == 2 && std::string_view(argv[1]) == "--list-commands") return list_commands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e, argc, argv);
  }
  cli::hand_over_postgres_store(global, argv);
  return dispatch(registered, global);
}
