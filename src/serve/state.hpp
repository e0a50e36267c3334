#pragma once
// What a reload replaces as a whole, and how it is built from what the daemon loaded.
#include <map>
#include <memory>
#include <string>

#include "front/route.hpp"
#include "hooks/delivery.hpp"
#include "serve/config.hpp"
#include "serve/daemon.hpp"
#include "serve/load.hpp"
#include "serve/services.hpp"
#include "webhook/file.hpp"

namespace idem::serve {

// What a reload replaces as a whole: the config and the route table built from it. Requests in
// flight keep the state they started with.
struct State {
  Config config;
  webhook::HooksFiles webhooks;
  std::map<std::string, std::shared_ptr<hooks::HookSlots>> slots;  // by hook path
  // The hooks with "serial", native and hooks files', by path: what serve/turns.hpp starts.
  std::map<std::string, hooks::SerialLine> serial_lines;
  front::RouteTable routes;
  front::RouteTable socket_routes;  // the Unix socket's: the built-ins and the ledger
  front::RouteTable ui_routes;      // the delivery-log page's listener (--ui): the page alone
};

// The table, in the order front/route.hpp describes: the built-ins, then the hooks in config
// order, then the hooks files' in theirs. `previous`: the state in force (a reload), whose slots
// a hook keeps when its limits did not change. Throws UsageError for a hook at a taken path.
std::shared_ptr<const State> build_state(Loaded loaded, const State* previous, Services& services,
                                         const DaemonOptions& options);

}  // namespace idem::serve
