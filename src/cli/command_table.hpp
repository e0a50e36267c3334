#pragma once
// The subcommand table: every subcommand is one row of subcommands() (src/cli/command_table.cpp),
// and main registers the rows, parses once and runs the one row the command line chose. A new
// subcommand is its file in src/cli/ (register_X + run_X, as today's) and one row.
#include <CLI/CLI.hpp>
#include <functional>
#include <span>
#include <string_view>

#include "cli/common.hpp"

namespace idem::cli {

// A subcommand once added to the top-level app: its CLI11 app (parsed() says whether the command
// line chose it) and what runs it with the options the parse filled in.
struct Registered {
  CLI::App* app = nullptr;
  std::function<int(const GlobalOptions&)> run;
};

// One row of the table: the subcommand's name (the one its register_X gives it: main checks
// whenever it adds every row), and what adds it (its name, help and options) to the top-level
// app. The name lets main add only the subcommand a command line names.
struct Subcommand {
  std::string_view name;
  Registered (*add)(CLI::App& app);
};

// Every subcommand, in the order `idem --help` lists them.
std::span<const Subcommand> subcommands();

// The refusal whose message --quiet suppresses (run, begin): 75 for the key running elsewhere,
// which a job started twice expects (as `flock -n` does). A conflict (65), an abandoned attempt
// (69) or a key held by a finished attempt's live processes (75, LeftoversRefusal) needs someone
// to look, so its line is printed even with --quiet: cron mails it.
bool is_quiet_refusal(const Error& e);

}  // namespace idem::cli
