// idem: make side effects safe to retry. Builds the command line from the subcommand table
// (cli/command_table.hpp), dispatches once, and maps every error to one "idem: ..." line and its
// exit code (see core/exit_code.hpp).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "cli/command_table.hpp"
#include "cli/common.hpp"
#include "cli/run.hpp"
#include "core/errors.hpp"
#include "util/fd.hpp"
#include "util/heap.hpp"

// Under AddressSanitizer, LeakSanitizer scans the process at exit: about 25 ms, half of what a
// short `idem run` costs there, thousands of times over in the ASan lane of .ci/run. With
// IDEM_LEAK_CHECK=daemon (that lane sets it) only `idem serve`, the process that lives long
// enough for a leak to matter, is scanned; the unit binary's single process is scanned too.
#if defined(__SANITIZE_ADDRESS__)
#define IDEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IDEM_ASAN 1
#endif
#endif
#ifdef IDEM_ASAN
namespace {
bool g_leak_check_off = false;
}
extern "C" int __lsan_is_turned_off() { return g_leak_check_off ? 1 : 0; }
#endif

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

#ifdef IDEM_TEST_HOOKS
constexpr std::string_view k_version = "idem " IDEM_VERSION " (test hooks)";
#else
constexpr std::string_view k_version = "idem " IDEM_VERSION;
#endif

// The top-level app: its help, --version and the global options.
void set_up_app(CLI::App& app, idem::cli::GlobalOptions& global) {
  app.require_subcommand(1);
  app.fallthrough();  // global options are accepted after the subcommand too
  app.set_version_flag("--version", std::string(k_version));
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
             const idem::cli::GlobalOptions& global, char** argv) {
  for (const auto& sub : registered)
    if (sub.app->parsed())
      idem::cli::hand_over_to_idem_pg(global, argv, sub.app->get_name() == "serve");
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

// The command line as CLI11 sees it: the top-level app, the global options and the subcommands
// added to it. Not movable (CLI11's apps point at their parent), hence built in place.
struct CommandLine {
  CLI::App app{
      "idem makes side effects safe to retry: one key, one execution; later attempts "
      "replay the stored outcome.",
      "idem"};
  idem::cli::GlobalOptions global;
  std::vector<idem::cli::Registered> registered;

  // With `only`, that subcommand alone; else every row of the table, in its order.
  explicit CommandLine(const idem::cli::Subcommand* only) {
    set_up_app(app, global);
    if (only != nullptr) {
      registered.push_back(only->add(app));
      return;
    }
    for (const idem::cli::Subcommand& sub : idem::cli::subcommands()) {
      registered.push_back(sub.add(app));
      if (registered.back().app->get_name() != sub.name)
        throw std::logic_error("the subcommand table names '" + std::string(sub.name) +
                               "' a row that adds '" + registered.back().app->get_name() + "'");
    }
  }
};

// The row the command line names, if its command word is one.
const idem::cli::Subcommand* named_row(std::string_view word) {
  for (const idem::cli::Subcommand& sub : idem::cli::subcommands())
    if (sub.name == word) return &sub;
  return nullptr;
}

// The usual command line names its subcommand (or none, as `idem --version`): that one alone is
// added to the app, since adding all ten with every option is most of what idem does before its
// subcommand runs. Once its word has named the subcommand, the others cannot change the parse
// (CLI11 takes no second subcommand: require_subcommand(1)). What the parse answers itself, help
// and errors, is left to the whole app (the caller): nullptr then, as for a word that names no
// subcommand, so `idem --help` lists every one and an unknown word is named as such.
std::unique_ptr<CommandLine> parse_named_only(int argc, char** argv, int& version_exit) {
  const std::string word = command_word(argc, argv);
  const idem::cli::Subcommand* row = named_row(word);
  if (row == nullptr && !word.empty()) return nullptr;
  auto line = std::make_unique<CommandLine>(row);
  try {
    line->app.parse(argc, argv);
  } catch (const CLI::CallForVersion& e) {
    version_exit = line->app.exit(e);
    return nullptr;
  } catch (const CLI::Error&) {
    return nullptr;
  }
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace idem;
  // Before any thread and before anything runs a command: what idem added to idem-pg's
  // environment for libgnutls's constructor (cli::hand_over_to_idem_pg) is taken out again.
  cli::forget_hand_over_environment();
#ifdef IDEM_ASAN
  if (const char* only = std::getenv("IDEM_LEAK_CHECK"); only != nullptr)
    g_leak_check_off = std::string_view(only) == "daemon" && command_word(argc, argv) != "serve";
#endif
  // Before anything is opened: a closed stdin, stdout or stderr (`idem run ... >&-`, a daemon
  // started without them) would be the next descriptor idem opens, the signal self-pipe, a
  // socket or a command's pipe, which would then get what idem writes to stdout or stderr.
  if (!util::open_closed_standard_fds()) {
    std::cerr << "idem: stdin, stdout or stderr is closed and /dev/null cannot be opened in its "
                 "place: "
              << strerror(errno) << "\n";
    return k_exit_os;
  }
  // Past a file-size limit (ulimit -f) writes must fail with EFBIG, which SQLite reports and idem
  // turns into exit 74, rather than SIGXFSZ killing idem in the middle of a transaction.
  ::signal(SIGXFSZ, SIG_IGN);

  // `idem --version` alone, as scripts ask it, without building the parser; CLI11 prints the
  // same line for any other command line with --version.
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::cout << k_version << '\n';
    return k_exit_ok;
  }
  // `idem run` is a new process at every run: what it will allocate, faulted in at once.
  if (command_word(argc, argv) == "run")
    util::prefault_heap(cli::k_run_heap_bytes, cli::k_run_mmap_threshold);
  if (argc != 2 || std::string_view(argv[1]) != "--list-commands") {
    int version_exit = -1;
    if (auto line = parse_named_only(argc, argv, version_exit))
      return dispatch(line->registered, line->global, argv);
    if (version_exit >= 0) return version_exit;
  }
  CommandLine line(nullptr);
  if (argc == 2 && std::string_view(argv[1]) == "--list-commands") return list_commands(line.app);
  try {
    line.app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return line.app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(line.app, e, argc, argv);
  }
  return dispatch(line.registered, line.global, argv);
}
