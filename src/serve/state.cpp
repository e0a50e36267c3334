#include "serve/state.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "engine/notify.hpp"
#include "hooks/route.hpp"
#include "ledger/ledger.hpp"
#include "proxy/route.hpp"
#include "serve/builtins.hpp"
#include "serve/ui.hpp"
#include "ui/route.hpp"
#include "webhook/route.hpp"

namespace idem::serve {

namespace {

// A hook's slots: its previous ones (its running handlers still count) unless its limits changed.
std::shared_ptr<hooks::HookSlots> slots_for(const hooks::Hook& hook, const State* previous) {
  if (previous) {
    auto it = previous->slots.find(hook.path);
    if (it != previous->slots.end() && it->second->max_running() == hook.max_concurrency &&
        it->second->max_waiting() == hook.max_queue)
      return it->second;
  }
  return std::make_shared<hooks::HookSlots>(hook.max_concurrency, hook.max_queue);
}

// Every secret of every hook, native or webhook's, is kept from every handler; a hooks file's
// hook may not take a path the config's hooks or the ledger have.
void join_hooks(State& state, bool ledger) {
  std::vector<std::string> withheld = state.webhooks.withheld_env;
  for (const hooks::Hook& hook : state.config.hooks)
    withheld.insert(withheld.end(), hook.withheld_env.begin(), hook.withheld_env.end());
  std::sort(withheld.begin(), withheld.end());
  withheld.erase(std::unique(withheld.begin(), withheld.end()), withheld.end());
  for (hooks::Hook& hook : state.config.hooks) {
    hook.withheld_env = withheld;
    if (hook.notify) hook.notify->withheld_env = withheld;  // no secret reaches it either
  }
  if (state.config.proxy && state.config.proxy->notify)
    state.config.proxy->notify->withheld_env = withheld;
  for (webhook::WebhookHook& hook : state.webhooks.hooks) {
    hook.native.withheld_env = withheld;
    const std::string& path = hook.native.path;
    if (ledger && ledger::is_ledger_path(path))
      throw UsageError(hook.file + ": hook " + hook.id + " is served at " + path +
                       ", a path of the ledger API (--ledger)");
    for (const hooks::Hook& native : state.config.hooks)
      if (native.path == path)
        throw UsageError(hook.file + ": hook " + hook.id + " is served at " + path +
                         ", which a hook of the config has too");
  }
}

// What the daemon's turns need of a hook with "serial".
hooks::SerialLine serial_line(
    Services& services, const hooks::Hook& hook, std::shared_ptr<hooks::HookSlots> slots,
    std::function<std::unique_ptr<hooks::DeliveryEffect>(const core::Record&, const std::string&)>
        effect) {
  hooks::SerialLine line;
  line.path = hook.path;
  line.requeue_abandoned = hook.retry_abandoned;
  line.services = delivery_services(services, hook.path, slots, hook.notify);
  line.slots = std::move(slots);
  line.effect = std::move(effect);
  line.stopping = [&services] { return services.turns_stopped.load(); };
  return line;
}

}  // namespace

std::shared_ptr<const State> build_state(Loaded loaded, const State* previous, Services& services,
                                         const DaemonOptions& options) {
  auto state = std::make_shared<State>();
  state->config = std::move(loaded.config);
  state->webhooks = std::move(loaded.webhooks);
  join_hooks(*state, services.ledger_token.has_value());
  if (services.front.notifier) services.front.notifier->set_limits(state->config.notifications);
  state->routes.add(health_route(services.health, options.tcp_loopback));
  state->routes.add(metrics_route(services, options.tcp_loopback));
  if (services.ledger_token)
    state->routes.add(ledger::ledger_route(services.ledger, services.ledger_token));
  if (services.ledger) {
    state->socket_routes.add(health_route(services.health, false));
    state->socket_routes.add(metrics_route(services, false));
    state->socket_routes.add(ledger::ledger_route(services.ledger, std::nullopt));
  }
  for (const hooks::Hook& hook : state->config.hooks) {
    if (services.ledger_token && ledger::is_ledger_path(hook.path))
      throw UsageError("hook " + hook.path + " is a path of the ledger API (--ledger)");
    if (options.ui && ui::is_ui_path(hook.path))
      throw UsageError("hook " + hook.path + " is a path of the delivery-log page (--ui)");
    state->slots[hook.path] = slots_for(hook, previous);
  }
  // The page on its own listener: it re-runs the hooks' deliveries with the slots they run in.
  if (options.ui)
    state->ui_routes.add(make_ui_route(state->config.hooks, state->slots, services, options));
  for (const hooks::Hook& hook : state->config.hooks) {
    state->routes.add(hooks::hook_route(
        hook, state->slots[hook.path],
        serve::route_services(services, hook.path, state->slots[hook.path], hook.notify)));
    if (hook.serial)
      state->serial_lines[hook.path] =
          serial_line(services, hook, state->slots[hook.path], hooks::stored_hook_effect(hook));
  }
  for (const webhook::WebhookHook& hook : state->webhooks.hooks) {
    const std::string& path = hook.native.path;
    auto slots = slots_for(hook.native, previous);
    state->slots[path] = slots;
    hooks::RouteServices hook_services = serve::route_services(services, path, slots);
    if (hook.native.serial)
      state->serial_lines[path] =
          serial_line(services, hook.native, slots, webhook::stored_effect(hook));
    state->routes.add(
        webhook::hook_route(hook, options.hooks, std::move(slots), std::move(hook_services)));
  }
  // Last: the proxy takes every path; without one, webhook's prefix answers its own 404s.
  if (state->config.proxy) {
    engine::Front proxy_front = services.front;
    if (state->config.proxy->notify) proxy_front.notify = state->config.proxy->notify;
    state->routes.add(proxy::make_proxy_route(
        *state->config.proxy,
        proxy::ProxyServices{
            services.stores, services.owner, proxy_front,
            [&services](std::function<void()> fn) { services.background.spawn(std::move(fn)); },
            services.proxy_forwards, options.max_connections}));
  } else if (!options.hooks.files.empty())
    state->routes.add(webhook::not_found_route(options.hooks.file_options.urlprefix));
  return state;
}

}  // namespace idem::serve
