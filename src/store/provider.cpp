#include "store/provider.hpp"

#include <exception>
#include <utility>

namespace idem::store {

StoreProvider::StoreProvider(StoreLocation where, StoreOptions options, size_t max_idle)
    : StoreProvider([where = std::move(where), options] { return open_store(where, options); },
                    max_idle) {}

StoreProvider::StoreProvider(Opener open, size_t max_idle)
    : open_(std::move(open)), max_idle_(max_idle) {}

StoreProvider::Lease StoreProvider::lease() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<Store> store = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(store));
    }
  }
  // Opened outside the lock: an open may wait out a busy store, and other leases must not wait
  // behind it.
  std::unique_ptr<Store> store = open_();
  {
    std::lock_guard lock(mutex_);
    ++opened_;
  }
  return Lease(*this, std::move(store));
}

void StoreProvider::give_back(std::unique_ptr<Store> store, bool reusable) {
  {
    std::lock_guard lock(mutex_);
    if (reusable && idle_.size() < max_idle_) {
      idle_.push_back(std::move(store));
      return;
    }
  }
  store.reset();  // closed outside the lock
}

int64_t StoreProvider::opened() const {
  std::lock_guard lock(mutex_);
  return opened_;
}

size_t StoreProvider::idle() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

StoreProvider::Lease::Lease(StoreProvider& provider, std::unique_ptr<Store> store)
    : provider_(&provider),
      store_(std::move(store)),
      exceptions_at_start_(std::uncaught_exceptions()) {}

StoreProvider::Lease::Lease(Lease&& other) noexcept
    : provider_(other.provider_),
      store_(std::move(other.store_)),
      exceptions_at_start_(other.exceptions_at_start_) {}

StoreProvider::Lease::~Lease() {
  if (store_)
    provider_->give_back(std::move(store_), std::uncaught_exceptions() <= exceptions_at_start_);
}

std::unique_ptr<OutputReader> leased_output(StoreProvider::Lease lease, const std::string& key,
                                            int64_t attempt) {
  class LeasedReader final : public OutputReader {
   public:
    LeasedReader(StoreProvider::Lease lease, std::unique_ptr<OutputReader> reader)
        : lease_(std::move(lease)), reader_(std::move(reader)) {}
    std::string read(int64_t offset, int64_t length) override {
      return reader_->read(offset, length);
    }

   private:
    StoreProvider::Lease lease_;            // declared first: given back last,
    std::unique_ptr<OutputReader> reader_;  // after the reader that uses its connection
  };
  std::unique_ptr<OutputReader> reader = lease->open_output(key, attempt);
  if (!reader) return nullptr;
  return std::make_unique<LeasedReader>(std::move(lease), std::move(reader));
}

ClaimResult PerCallStore::claim(const ClaimRequest& request, const OwnerGone& owner_gone) {
  return stores_->lease()->claim(request, owner_gone);
}
TurnResult PerCallStore::take_turn(const TurnRequest& request, const OwnerGone& owner_gone) {
  return stores_->lease()->take_turn(request, owner_gone);
}
bool PerCallStore::withdraw(const std::string& key, const std::string& token) {
  return stores_->lease()->withdraw(key, token);
}
std::vector<QueuedGroup> PerCallStore::queued_groups(const std::string& prefix, int64_t limit) {
  return stores_->lease()->queued_groups(prefix, limit);
}
std::vector<core::Record> PerCallStore::group_line(const std::string& group, int64_t limit) {
  return stores_->lease()->group_line(group, limit);
}
bool PerCallStore::finish(const std::string& key, int64_t attempt, const core::Outcome& outcome) {
  return stores_->lease()->finish(key, attempt, outcome);
}
bool PerCallStore::set_process_group(const std::string& key, int64_t attempt,
                                     const core::ProcessGroup& group) {
  return stores_->lease()->set_process_group(key, attempt, group);
}
bool PerCallStore::mark_abandoned(const std::string& key, int64_t attempt) {
  return stores_->lease()->mark_abandoned(key, attempt);
}
bool PerCallStore::heartbeat(const std::string& key, const std::string& token, int64_t lease_ms,
                             int64_t now_ms) {
  return stores_->lease()->heartbeat(key, token, lease_ms, now_ms);
}
bool PerCallStore::release(const std::string& key, const std::string& token) {
  return stores_->lease()->release(key, token);
}
std::optional<core::Record> PerCallStore::get(const std::string& key) {
  return stores_->lease()->get(key);
}
std::optional<core::Record> PerCallStore::get_without_output(const std::string& key) {
  return stores_->lease()->get_without_output(key);
}
std::unique_ptr<OutputReader> PerCallStore::open_output(const std::string& key, int64_t attempt) {
  return leased_output(stores_->lease(), key, attempt);
}
bool PerCallStore::append_live(const std::string& key, int64_t attempt,
                               const core::LiveSegment& segment) {
  return stores_->lease()->append_live(key, attempt, segment);
}
size_t PerCallStore::read_live_into(const std::string& key, int64_t attempt, int64_t from,
                                    int64_t max_bytes, std::vector<core::LiveSegment>& into) {
  return stores_->lease()->read_live_into(key, attempt, from, max_bytes, into);
}
int64_t PerCallStore::drop_stale_live(const OwnerGone& owner_gone, int64_t now_ms) {
  return stores_->lease()->drop_stale_live(owner_gone, now_ms);
}
void PerCallStore::put_expectation(const core::Expectation& expectation) {
  stores_->lease()->put_expectation(expectation);
}

bool PerCallStore::remove_expectation(const std::string& pattern) {
  return stores_->lease()->remove_expectation(pattern);
}

std::vector<StoredExpectation> PerCallStore::expectations() {
  return stores_->lease()->expectations();
}

std::optional<std::vector<core::ScheduleFinding>> PerCallStore::save_evaluation(
    const std::string& pattern, int64_t revision, const core::Evaluation& evaluation) {
  return stores_->lease()->save_evaluation(pattern, revision, evaluation);
}

std::vector<core::ScheduleFinding> PerCallStore::findings(const std::string& pattern,
                                                          bool open_only, int64_t limit) {
  return stores_->lease()->findings(pattern, open_only, limit);
}

std::vector<core::AttemptFact> PerCallStore::attempts_started(const core::KeyPattern& pattern,
                                                              int64_t after_ms,
                                                              const std::string& after_key,
                                                              int64_t after_number,
                                                              int64_t before_ms, int64_t limit) {
  return stores_->lease()->attempts_started(pattern, after_ms, after_key, after_number, before_ms,
                                            limit);
}

HistoryPage PerCallStore::history_page(const std::string& key, const HistoryQuery& query) {
  return stores_->lease()->history_page(key, query);
}
void PerCallStore::count_replays(std::span<const ReplayCount> counts) {
  stores_->lease()->count_replays(counts);
}
ListStop PerCallStore::list(const ListQuery& query, const RecordVisitor& visit) {
  return stores_->lease()->list(query, visit);
}
RemoveResult PerCallStore::remove(const std::string& key, bool force, const OwnerGone& owner_gone) {
  return stores_->lease()->remove(key, force, owner_gone);
}
GcResult PerCallStore::gc(const GcQuery& query) { return stores_->lease()->gc(query); }
std::vector<bool> PerCallStore::put_all(
    std::span<const core::Record> records, bool replace,
    std::span<const std::vector<core::HistoryEntry>> histories) {
  return stores_->lease()->put_all(records, replace, histories);
}
void PerCallStore::check_writable() { stores_->lease()->check_writable(); }
StoreHealth PerCallStore::health() { return stores_->lease()->health(); }
bool PerCallStore::spans_hosts() const { return stores_->lease()->spans_hosts(); }

}  // namespace idem::store
