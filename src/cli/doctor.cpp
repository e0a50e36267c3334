// `idem doctor`: checks the store (its files, schema, integrity, the records that need a human)
// and a daemon's config, and says of each finding what to do. It changes nothing but what
// opening a store does anyway (an older schema is migrated, as by any command); its trial write
// (Store::check_writable) is rolled back.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <iostream>

#include "cli/inspect.hpp"
#include "core/errors.hpp"
#include "core/health.hpp"
#include "proc/cgroup.hpp"
#include "proc/liveness.hpp"
#include "serve/daemon.hpp"
#include "util/clock.hpp"

namespace idem::cli {

namespace {

// Records of one kind shown one line each; the rest are counted in one line.
constexpr int64_t k_records_shown = 20;

// lstat's facts; with `follow`, stat's (the store's folder may be a symlink, as with systemd's
// DynamicUser, whose /var/lib/idem links to /var/lib/private/idem).
core::PathFacts path_facts(const std::string& path, bool follow = false) {
  core::PathFacts f;
  struct stat st {};
  if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) return f;
  f.exists = true;
  f.is_symlink = S_ISLNK(st.st_mode);
  f.is_dir = S_ISDIR(st.st_mode);
  f.is_regular = S_ISREG(st.st_mode);
  f.mode = st.st_mode & 07777;
  f.uid = st.st_uid;
  f.size = st.st_size;
  return f;
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

struct Report {
  std::vector<core::Finding> findings;
  bool store_unusable = false;  // not opened, or damaged: exit 74
  nlohmann::json store = nlohmann::json::object();
  int64_t abandoned = 0;
  int64_t owner_gone = 0;
  int64_t leftovers = 0;

  void add(core::Finding f) { findings.push_back(std::move(f)); }
  void add(std::vector<core::Finding> fs) {
    for (auto& f : fs) add(std::move(f));
  }
};

// The SQLite files, before the store is opened (opening takes group and other access away from
// the database file: its mode as found is what the user left). Returns whether there is a file.
bool check_files(const std::string& path, Report& report) {
  const uint32_t euid = ::geteuid();
  const std::string folder = folder_of(path);
  const core::PathFacts folder_facts = path_facts(folder, true);
  const core::PathFacts db = path_facts(path);
  const core::PathFacts wal = path_facts(path + "-wal");
  report.add(core::folder_findings(folder, folder_facts, euid, store::shared_folders_allowed()));
  report.add(core::file_findings(path, "store", db, euid));
  report.add(core::file_findings(path + "-wal", "WAL", wal, euid));
  report.add(
      core::file_findings(path + "-shm", "shared-memory file", path_facts(path + "-shm"), euid));
  report.add(core::file_findings(path + "-journal", "rollback journal",
                                 path_facts(path + "-journal"), euid));
  // The ledger API's token file (ledger/ledger.hpp): the store's path + ".token".
  report.add(
      core::file_findings(path + ".token", "ledger token file", path_facts(path + ".token"), euid));
  if (auto big = core::wal_finding(path + "-wal", wal)) report.add(std::move(*big));
  report.store["wal_bytes"] = wal.size;
  if (db.exists) return true;
  report.add(
      core::Finding{core::Severity::warning, "store-missing", path,
                    "there is no store at " + path + " yet (the first idem command creates it)",
                    "if records were expected here, check --store, --db, IDEM_STORE and IDEM_DB"});
  return false;
}

void check_store(store::Store& store, const std::string& where, Report& report) {
  const store::StoreHealth health = store.health();
  report.store["engine"] = health.engine;
  report.store["schema_version"] = health.schema_version;
  report.store["opened_schema_version"] = health.opened_schema_version;
  report.store["damage"] = health.damage;
  for (const std::string& line : health.damage) {
    report.store_unusable = true;
    report.add(core::Finding{core::Severity::error, "integrity", where,
                             "store " + where + " is damaged: " + line,
                             "stop what uses it, keep a copy, then idem export what can still be "
                             "read into a new store (idem import)"});
  }
  if (health.clock_offset_ms != 0)
    report.add(core::Finding{
        core::Severity::warning, "clock", where,
        "this host's clock is " + std::to_string(-health.clock_offset_ms) +
            " ms off the database server's (idem measures leases and TTLs on the server's)",
        "keep the hosts' clocks in step (NTP)"});
  try {
    store.check_writable();
  } catch (const StoreError& e) {
    report.add(core::writable_finding(where, e.what(), e.transient()));
  }
}

// The free space where a SQLite store's files grow.
void check_free_space(const std::string& path, Report& report) {
  const std::string folder = folder_of(path);
  struct statvfs fs {};
  if (::statvfs(folder.c_str(), &fs) != 0) return;  // no folder: the open's finding says so
  const int64_t available = int64_t(fs.f_bavail) * int64_t(fs.f_frsize);
  report.store["free_bytes"] = available;
  if (auto low = core::free_space_finding(folder, available)) report.add(std::move(*low));
}

// The records a human must look at: abandoned ones, running ones that are abandoned in fact, and
// failed or abandoned ones whose processes live on (they hold the key: the next run gets 75).
void check_records(store::Store& store, Report& report) {
  const int64_t now = util::process_clock().now_ms();
  store::ListQuery q;
  q.statuses = {core::Status::running, core::Status::abandoned, core::Status::failed};
  q.now_ms = now;
  std::vector<core::Finding> shown;
  auto show = [&](int64_t& count, core::Finding f) {
    if (++count <= k_records_shown) shown.push_back(std::move(f));
  };
  store.list(q, [&](const core::Record& r) {
    const std::string status = effective_status(r, now);
    if (std::optional<core::Finding> f = core::record_finding(r, status, now)) {
      int64_t& count = f->check == "abandoned" ? report.abandoned : report.owner_gone;
      show(count, std::move(*f));
    }
    // Only a recorded group is looked at (/proc): most records have none left.
    if (r.process_group.pgid == 0 || (status != "failed" && status != "abandoned")) return true;
    const bool alive = proc::process_group_alive(r.owner, r.process_group, core::attempt_mark(r));
    if (std::optional<core::Finding> f =
            core::leftovers_finding(r, status, alive, proc::cgroup_home().mount))
      show(report.leftovers, std::move(*f));
    return true;
  });
  report.add(std::move(shown));
  auto more = [&](int64_t count, const char* check, const char* what, const char* status) {
    if (count <= k_records_shown) return;
    report.add(core::Finding{core::Severity::warning, check, "",
                             std::to_string(count - k_records_shown) + " more " + what,
                             std::string("see them all with idem ls --status ") + status});
  };
  more(report.abandoned, "abandoned", "abandoned records", "abandoned");
  more(report.owner_gone, "owner-gone", "running records whose owner is gone", "abandoned");
  more(report.leftovers, "leftovers", "records whose processes live on", "failed");
}

void check_config(const DoctorOptions& o, Report& report) {
  if (o.config.empty() && o.hooks.empty()) return;
  serve::DaemonOptions d;
  d.config_path = o.config;
  d.hooks.files = o.hooks;
  d.hooks.file_options.as_template = o.hooks_template;
  const serve::ConfigReport config = serve::check_config(d);
  const std::string subject = o.config.empty() ? o.hooks.front() : o.config;
  for (const std::string& name : config.unset_secrets)
    report.add(core::Finding{core::Severity::error, "secret-unset", name,
                             o.config + ": secret variable " + name + " is not set (or empty): " +
                                 "idem serve refuses to start without it",
                             "set it in the daemon's environment (idem-serve.service reads "
                             "/etc/idem/serve.env)"});
  for (const std::string& line : config.errors)
    report.add(core::Finding{core::Severity::error, "config", subject, line,
                             "fix the file: idem serve refuses to start with it"});
  for (const std::string& line : config.warnings)
    report.add(core::Finding{core::Severity::warning, "config-warning", subject, line,
                             "idem serve starts, but check that this is meant"});
}

int exit_code(const Report& report) {
  if (report.store_unusable) return k_exit_store;
  return report.findings.empty() ? k_exit_ok : k_exit_findings;
}

void print(const Report& report, const store::StoreLocation& where, bool json) {
  const int code = exit_code(report);
  if (json) {
    nlohmann::json out = {{"healthy", code == k_exit_ok}, {"exit", code}};
    nlohmann::json store = report.store;
    store["backend"] = where.scheme;
    store["location"] = where.display();
    store["abandoned"] = report.abandoned;
    store["owner_gone"] = report.owner_gone;
    store["leftovers"] = report.leftovers;
    out["store"] = store;
    const proc::CgroupUse use = proc::cgroup_use();
    out["processes"] = {{"cgroups", use.cgroups}, {"about", use.about}};
    out["findings"] = nlohmann::json::array();
    for (const auto& f : report.findings) out["findings"].push_back(core::finding_json(f));
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  for (const auto& f : report.findings) std::cout << core::finding_line(f) << "\n";
  std::cout << "processes: " << proc::cgroup_use().about << "\n";
  int64_t errors = 0;
  for (const auto& f : report.findings) errors += f.severity == core::Severity::error;
  std::string about = "store " + where.display();
  if (report.store.contains("engine"))
    about += " (" + report.store["engine"].get<std::string>() + ", schema " +
             std::to_string(report.store["schema_version"].get<int>()) + ")";
  if (report.findings.empty())
    std::cout << "healthy: " << about << "\n";
  else
    std::cout << errors << (errors == 1 ? " error, " : " errors, ")
              << int64_t(report.findings.size()) - errors
              << (int64_t(report.findings.size()) - errors == 1 ? " warning: " : " warnings: ")
              << about << "\n";
}

}  // namespace

CLI::App* register_doctor(CLI::App& app, DoctorOptions& o) {
  auto* doctor = app.add_subcommand(
      "doctor", "Check the store and a daemon's config; say what to do about each finding");
  doctor->add_flag("--json", o.json, "Print one JSON object: the store's facts and the findings");
  doctor
      ->add_option("--config", o.config,
                   "Also check this idem serve config: it loads, its secret variables are set")
      ->type_name("FILE");
  doctor
      ->add_option("--hooks", o.hooks,
                   "Also check this hooks file of webhook, as idem serve --hooks loads it; "
                   "repeatable")
      ->type_name("FILE")
      ->allow_extra_args(false);
  doctor->add_flag("--template", o.hooks_template,
                   "Expand the hooks files as templates first, as idem serve --template");
  doctor->footer(
      "Exit status: 0 healthy, 1 findings (each printed with what to do), 74 the store cannot be "
      "opened or is damaged.\n"
      "Examples:\n"
      "  idem doctor\n"
      "  idem doctor --config /etc/idem/serve.json --json | jq .findings");
  return doctor;
}

int run_doctor(const GlobalOptions& global, const DoctorOptions& o) {
  if (o.hooks_template && o.hooks.empty()) throw UsageError("--template needs --hooks");
  const store::StoreLocation where = store_location(global);
  Report report;
  const bool present = where.scheme != "sqlite" || check_files(where.target, report);
  if (where.scheme == "sqlite") check_free_space(where.target, report);
  if (present) {
    try {
      std::unique_ptr<store::Store> store = store::open_store(where);
      check_store(*store, where.display(), report);
      check_records(*store, report);
    } catch (const StoreError& e) {
      report.store_unusable = true;
      report.add(core::Finding{core::Severity::error, "store-open", where.display(), e.what(),
                               "mend what it names: until then every idem command on this store "
                               "fails (exit 74)"});
    }
  }
  check_config(o, report);
  print(report, where, o.json);
  return exit_code(report);
}

}  // namespace idem::cli
