// `idem export` and `idem import`: records as JSON Lines (core/record_export.hpp), from one store
// to another of either backend. Both stream: export holds one record at a time, import one batch
// of lines (k_import_batch).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "cli/inspect.hpp"
#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/record_export.hpp"
#include "core/schedule.hpp"
#include "util/clock.hpp"

namespace idem::cli {

CLI::App* register_export(CLI::App& app, ExportOptions& o) {
  auto* ex = app.add_subcommand("export", "Write records as JSON Lines, outputs included");
  ex->add_option("--status", o.filter.statuses,
                 "Only records in this status: running, succeeded, failed, abandoned, queued, "
                 "superseded, expired "
                 "(repeatable)")
      ->type_name("STATUS")
      ->allow_extra_args(false);
  ex->add_option("--prefix", o.filter.prefix, "Only keys starting with PREFIX")
      ->type_name("PREFIX");
  ex->add_option("--limit", o.filter.limit, "At most N records (default, or 0: all)")
      ->type_name("N");
  ex->add_flag("--all", o.filter.all, "Include expired records");
  ex->footer(
      "Examples:\n  idem export > records.jsonl\n  idem export --all | idem --store "
      "postgres://db/idem import");
  return ex;
}

CLI::App* register_import(CLI::App& app, ImportOptions& o) {
  auto* im = app.add_subcommand("import", "Read records that idem export wrote into this store");
  im->add_option("file", o.file, "The export to read (default, or -: standard input)")
      ->type_name("FILE");
  im->add_flag("--replace", o.replace, "Overwrite a key that holds another record (else refused)");
  im->footer(
      "Examples:\n  idem import records.jsonl\n  idem --db old.db export --all | idem --store "
      "postgres://db/idem import");
  return im;
}

int run_export(const GlobalOptions& global, const ExportOptions& o) {
  const int64_t limit = limit_arg(o.filter.limit);
  check_statuses(o.filter.statuses);
  // Two connections: one walks the listing, the other reads each listed record whole, so that
  // neither the listing nor the records are ever held beyond the current one.
  auto listing = open_store(global);
  auto reader = open_store(global);
  const int64_t now = util::process_clock().now_ms();
  bool check_here = false;
  const store::ListQuery q = list_query(o.filter, limit, now, check_here);
  int64_t written = 0;
  // A whole store's export starts with its expectations (SPEC §11), a line each.
  if (o.filter.statuses.empty() && o.filter.prefix.empty() && limit == 0)
    for (const store::StoredExpectation& x : reader->expectations())
      std::cout << nlohmann::json{{"expectation", core::expectation_json(x.expectation)}}.dump()
                << "\n";
  listing->list(q, [&](const core::Record& listed) {
    if (check_here && std::find(o.filter.statuses.begin(), o.filter.statuses.end(),
                                effective_status(listed, now)) == o.filter.statuses.end())
      return true;
    std::optional<core::Record> r = reader->get(listed.key);
    if (!r) return true;  // removed since it was listed
    std::cout << core::export_json(*r, reader->history(listed.key))
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
    return limit == 0 || ++written < limit;
  });
  std::cout.flush();
  if (!std::cout) throw Error(k_exit_store, "export: cannot write standard output");
  return 0;
}

namespace {

// Records written per transaction: a thousandth of the syncs of one each, and the writer lock
// held for a few milliseconds at a time. A batch also ends once it holds this much output, so
// memory stays bounded whatever the records hold (up to the output cap each).
constexpr size_t k_import_batch = 500;
constexpr size_t k_import_batch_bytes = size_t(32) << 20;

struct ImportCounts {
  int64_t imported = 0, unchanged = 0, conflicts = 0;
};

// Records read and not yet written, with the numbers of their lines.
struct Batch {
  std::vector<int64_t> numbers;
  std::vector<core::Record> records;
  std::vector<std::vector<core::HistoryEntry>> histories;  // one per record
  size_t bytes = 0;
};

// Whether a record there is the one a line holds: its replays aside, which go on counting (a
// statistic, not the record's outcome).
bool same_record(const core::Record& there, const core::Record& line) {
  nlohmann::json a = core::export_json(there), b = core::export_json(line);
  for (const char* statistic : {"replays", "last_replay_ms"}) {
    a.erase(statistic);
    b.erase(statistic);
  }
  return a == b;
}

// Writes a batch at once; then each record that was not (its key holds a record) is found
// already there, refused (another record) or, with replace, written over it, those in one more
// transaction.
void import_batch(store::Store& store, const Batch& batch, bool replace, ImportCounts& counts) {
  const std::vector<bool> written = store.put_all(batch.records, false, batch.histories);
  std::vector<core::Record> replacing;
  std::vector<std::vector<core::HistoryEntry>> replacing_histories;
  for (size_t i = 0; i < batch.records.size(); ++i) {
    const core::Record& r = batch.records[i];
    if (written[i]) {
      ++counts.imported;
      continue;
    }
    // A key this batch replaces already is replaced again, in order, as it would be one by one.
    const bool replaced =
        std::any_of(replacing.begin(), replacing.end(),
                    [&](const core::Record& other) { return other.key == r.key; });
    std::optional<core::Record> there = replaced ? std::nullopt : store.get(r.key);
    if (there && same_record(*there, r)) {
      ++counts.unchanged;
    } else if (replace) {
      replacing.push_back(r);
      replacing_histories.push_back(batch.histories[i]);
    } else {
      ++counts.conflicts;
      std::cerr << "idem: import: line " << batch.numbers[i] << ": key '"
                << core::display_key(r.key) << "' holds another record here (--replace "
                << "overwrites it)\n";
    }
  }
  if (!replacing.empty()) store.put_all(replacing, true, replacing_histories);
  counts.imported += int64_t(replacing.size());
}

// An expectation line: kept unless the store has another for its pattern (then refused, or with
// replace written over it). Its evaluation starts afresh from now.
void import_expectation(store::Store& store, const core::Expectation& e, bool replace,
                        ImportCounts& counts, int64_t number) {
  std::vector<store::StoredExpectation> all = store.expectations();
  auto there = std::find_if(all.begin(), all.end(), [&](const store::StoredExpectation& x) {
    return x.expectation.pattern == e.pattern;
  });
  if (there != all.end()) {
    core::Expectation same = there->expectation;
    same.created_ms = e.created_ms;
    if (core::expectation_json(same) == core::expectation_json(e)) {
      ++counts.unchanged;
      return;
    }
    if (!replace) {
      ++counts.conflicts;
      std::cerr << "idem: import: line " << number << ": the expectation of '"
                << core::display_key(e.pattern) << "' differs here (--replace overwrites it)\n";
      return;
    }
  }
  store.put_expectation(e);
  ++counts.imported;
}

}  // namespace

int run_import(const GlobalOptions& global, const ImportOptions& o) {
  std::ifstream file;
  if (o.file != "-") {
    file.open(o.file, std::ios::binary);
    if (!file) throw UsageError("import: cannot read '" + o.file + "'");
  }
  std::istream& in = o.file == "-" ? std::cin : file;
  auto store = open_store(global);
  ImportCounts counts;
  Batch batch;
  auto flush = [&] {
    if (!batch.records.empty()) import_batch(*store, batch, o.replace, counts);
    batch = Batch{};
  };
  std::string text;
  for (int64_t number = 1; std::getline(in, text); ++number) {
    if (text.empty()) continue;
    core::Record record;
    std::vector<core::HistoryEntry> history;
    try {
      const nlohmann::json line = nlohmann::json::parse(text);
      if (line.is_object() && line.contains("expectation")) {
        core::Expectation e =
            core::expectation_from_json(line["expectation"], util::process_clock().now_ms());
        core::Schedule check(e);  // a schedule this idem cannot evaluate is refused
        flush();
        import_expectation(*store, e, o.replace, counts, number);
        continue;
      }
      record = core::record_from_export(line);
      history = core::history_from_export(line);
    } catch (const std::exception& e) {
      flush();  // the lines before it are imported, as they would be one by one
      throw Error(k_exit_conflict, "import: line " + std::to_string(number) + ": " + e.what());
    }
    batch.bytes += record.output.size() + record.request.size();
    batch.numbers.push_back(number);
    batch.records.push_back(std::move(record));
    batch.histories.push_back(std::move(history));
    if (batch.records.size() >= k_import_batch || batch.bytes >= k_import_batch_bytes) flush();
  }
  if (in.bad()) throw Error(k_exit_store, "import: cannot read '" + o.file + "'");
  flush();
  std::cerr << "idem: import: " << counts.imported << " imported, " << counts.unchanged
            << " already there, " << counts.conflicts << " refused\n";
  return counts.conflicts > 0 ? k_exit_conflict : 0;
}

}  // namespace idem::cli
