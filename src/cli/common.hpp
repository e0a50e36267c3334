#pragma once
// What the subcommands share: global options, opening the store, record rendering.
#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/record.hpp"
#include "store/store.hpp"

namespace idem::cli {

struct GlobalOptions {
  std::string db;  // --db; empty: $IDEM_DB, then the XDG default
};

std::unique_ptr<store::Store> open_store(const GlobalOptions& global);

// The status a user sees: "expired" past the TTL, "abandoned" for a running record whose owner is
// provably gone (the store records that at the next claim).
std::string effective_status(const core::Record& record, int64_t now_ms);

// The JSON object of `ls --json` and `show --json` (without output).
nlohmann::json record_json(const core::Record& record, int64_t now_ms);

// "exit 0", "signal 15", "timeout", "-".
std::string exit_summary(const core::Record& record);

// Colour only for a terminal, never with NO_COLOR set.
bool use_colour(int fd);
std::string colour_status(const std::string& status, bool colour);

// Where CLI11 accepts a value we validate ourselves: keeps the message in idem's one-line form.
void validate_key_arg(const std::string& key);

}  // namespace idem::cli
