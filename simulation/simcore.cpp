// simcore: the simulator's actors in C++ on SimGrid's S4U API (simulation/cpp_engine.py builds
// and runs it; simulation/ina.py and host_algorithms.py are the same actors in Python, the
// reference this file is tested against: tests/experiments/test_simcpp.py).
//
// Input (argv[1], written by simulation/cpp_engine.py): the platform (nodes, split-duplex
// links with rate, latency and loss, routes as node paths) and either an in-network job
// (the planner's tree, the shape, the timeout) or a host-only job (every rank's schedule,
// from hosts/schedules.py, in a binary file of int32 triples: kind, peer, elements).
// Output (stdout): one line per worker and per switch-event count, parsed by cpp_engine.py.
//
// The in-network actors follow simulation/ina.py line for line: a worker actor with its
// window of slots, a timer actor that wakes it at its earliest retransmission deadline, a
// switch actor per tree switch applying docs/protocol.md's rules (SwitchCells).  The host
// actors follow host_algorithms.py's rank_actor.  Same SimGrid engine, same configuration, same
// order of actor creation: the timings are the Python actors' (checked by the tests).
// The protocol's rules it shares with the C worker engine (which rounds exist, slot, version,
// packet sizes, the retransmission timer, backoff, retry limit, the switch cell's decisions) are
// hosts/ina/protocol_rules.h (cpp_engine.py puts hosts/ina on the include path).
#include <simgrid/s4u.hpp>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol_rules.h"

namespace sg4 = simgrid::s4u;

// ---- input --------------------------------------------------------------------------------
struct LinkSpec {
  int a, b;
  double bytes_per_s, latency, loss;
};
struct Child {
  int contributor, node;
};
struct SwitchPlan {
  int node, parent, contributor_at_parent, fan_in;
  std::vector<Child> children;      // sorted by contributor
};
struct WorkerPlan {
  int host, sw, contributor;
};

static std::vector<std::string> node_names;
// Processing time (cpp_engine.py's Costs; 0 and 0 unless asked): a host's CPU per frame it sends
// (an ina packet, or a TCP segment's frame), charged before the send, and a switch's CPU per
// aggregation packet it receives; each actor is one CPU, so these serialize with its work.
// The TCP frames a switch forwards for the host-only modes cross its CPU as a shared link of
// cpu_frame_bytes per switch_packet_s, in every route through it (fluid, as the links are).
static double host_frame_s = 0, switch_packet_s = 0, cpu_frame_bytes = 0;
static std::vector<LinkSpec> links;
static std::map<std::pair<int, int>, std::pair<int, bool>> direction;   // (a,b) -> link, up?
static std::map<std::pair<int, int>, double> loss_of;                     // (a,b) -> loss
static std::map<std::pair<int, int>, double> rate_of;                     // (a,b) -> bytes/s

// ---- progress: a line on stderr every 30 s of wall clock (cpp_engine.py passes it on) ------
static long long progress_done = 0, progress_total = 0;
static const char* progress_unit = "";
static std::chrono::steady_clock::time_point wall_start, last_beat;

static void advance() {
  if (++progress_done % 4096 != 0)
    return;
  auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_beat).count() < 30)
    return;
  last_beat = now;
  std::fprintf(stderr, "simcore: progress: %lld of %lld %s after %.0f s\n", progress_done, progress_total,
               progress_unit, std::chrono::duration<double>(now - wall_start).count());
  std::fflush(stderr);
}

// ---- in-network aggregation -----------------------------------------------------------------
// Rounds 0 .. real_rounds() - 1 carry the vector; with `closing` (the protocol's: hosts/ina/engine.py)
// every slot that had a real round runs one closing round, `slots()` after its last real one,
// with as many packets: rounds max(real_rounds, slots) .. real_rounds + slots - 1.
struct Shape {
  long long elements;
  int k, window, train, closing = 1;
  long long chunks() const { return (elements + k - 1) / k; }
  long long real_rounds() const { return (chunks() + train - 1) / train; }
  int slots() const { return std::max(1, (window + train - 1) / train); }
  long long rounds() const { return real_rounds() + (closing ? std::min<long long>(slots(), real_rounds()) : 0); }
  long long span() const { return real_rounds() + (closing ? slots() : 0); }
  ina_rounds rules() const { return ina_rounds{slots(), real_rounds(), 0, closing}; }
  bool is_closing(long long q) const { ina_rounds r = rules(); return ina_closing_round(&r, q); }
  bool has_round(long long q) const { ina_rounds r = rules(); return ina_has_round(&r, q); }
  long long packets(long long q) const {
    if (q >= real_rounds())                      // a closing round: as its slot's last real one
      q -= slots();
    return std::min<long long>(train, chunks() - q * train);
  }
  long long payload_bytes(long long q) const { return packets(q) * ina_payload_bytes(k); }
  long long frame_bytes(long long q) const { return packets(q) * ina_frame_bytes(k); }
  int slot(long long q) const { ina_rounds r = rules(); return int(ina_slot(&r, q)); }
  int version(long long q) const { ina_rounds r = rules(); return ina_version(&r, q, 0); }
};

enum Kind { CONTRIBUTION = 0, RESULT = 1, TICK = 2 };
struct Packet {
  int kind, slot, version;
  long long round;
  long long value;
  int contributor;
  bool lost;
};

static long long contribution(int rank, long long q) { return (rank + 1) * 1000003LL + q * 7; }

struct Cell {
  long long round;
  uint64_t seen;
  int count;
  long long value;
  bool result_ready;
};

static const char* EVENT_NAMES[] = {"added", "completed", "sent_up", "duplicate",
                                    "result_resent", "partial_resent", "parent_result",
                                    "stale_contribution", "stale_result"};
enum Event { ADDED, COMPLETED, SENT_UP, DUPLICATE, RESULT_RESENT, PARTIAL_RESENT, PARENT_RESULT,
             STALE_CONTRIBUTION, STALE_RESULT, EVENTS };

struct Outstanding {
  long long round;
  double deadline, timeout, sent_at;
  int retries;
};

struct Worker {
  int rank;
  WorkerPlan plan;
  ina_timer timer{};
  std::map<int, Outstanding> outstanding;    // slot -> round in flight (sorted: on_timer)
  long long accepted = 0;
  long long packets_sent = 0, bytes_sent = 0, wire_sent = 0, bytes_received = 0,
            wire_received = 0, retransmissions = 0, wrong_results = 0, closings_unanswered = 0;
  double finished = -1;
  std::string error;
};

static Shape shape;
static double timeout_s, max_timeout_s;
static int max_retries, world;
static std::vector<SwitchPlan> switch_plans;
static std::vector<Worker> workers;
static std::vector<std::unordered_map<long long, Cell>> cells;   // per switch: slot*2+version
static std::vector<std::array<long long, EVENTS>> events;
static std::mt19937_64 rng;
static long long frames_lost = 0;
static bool any_loss = false;        // no link loses frames: transmit looks nothing up
static std::vector<sg4::Mailbox*> node_box;
static std::vector<long long> expected;                          // per round: the sum

static double rand_unit() { return (rng() >> 11) * (1.0 / 9007199254740992.0); }

// The comms an actor started and has not yet waited for.  SimGrid 3.32 keeps every comm an
// actor starts in that actor's list of activities until the actor waits for it (a detached
// comm, until its receiver has it), and every completion searches such a list: left alone,
// that was 40-90% of the run time with thousands of workers.  So each actor waits for its
// finished comms as it sends more: a comm with nothing left to transfer is done, and waiting
// for a done comm takes no simulated time (it is the same run: the tests compare).
struct Outbox {
  std::deque<sg4::CommPtr> pending;
  void put(sg4::Mailbox* box, void* data, long long size) {
    while (not pending.empty() && pending.front()->get_remaining() <= 0) {
      pending.front()->wait();
      pending.pop_front();
    }
    pending.push_back(box->put_async(data, size));
  }
  // An actor that ends cancels its comms still in flight: wait for them first (no simulated
  // time passes for the others; the actor's own finish time is taken before).
  void drain() {
    for (auto& comm : pending)
      comm->wait();
    pending.clear();
  }
};

static void transmit(Outbox& outbox, int source, int destination, const Packet& packet, long long frames, long long size) {
  Packet* p = new Packet(packet);
  double loss = any_loss ? loss_of.at({source, destination}) : 0.0;
  if (loss > 0 && rand_unit() < 1 - std::pow(1 - loss, double(frames))) {
    p->lost = true;
    frames_lost += frames;
  }
  outbox.put(node_box[destination], p, size);
}

static void switch_actor(int index) {
  sg4::Actor::self()->daemonize();
  const SwitchPlan& plan = switch_plans[index];
  auto& table = cells[index];
  auto& ev = events[index];
  sg4::Mailbox* box = node_box[plan.node];
  box->set_receiver(sg4::Actor::self());
  Outbox outbox;
  auto up = [&](int slot, int version, const Cell& cell) {
    Packet out{CONTRIBUTION, slot, version, cell.round, cell.value, plan.contributor_at_parent, false};
    transmit(outbox, plan.node, plan.parent, out, shape.packets(cell.round), shape.frame_bytes(cell.round));
  };
  auto multicast = [&](int slot, int version, const Cell& cell) {
    Packet out{RESULT, slot, version, cell.round, cell.value, 0, false};
    for (const Child& c : plan.children)
      transmit(outbox, plan.node, c.node, out, shape.packets(cell.round), shape.frame_bytes(cell.round));
  };
  auto complete = [&](int slot, int version, Cell& cell) {
    cell.count = 0;
    if (plan.parent < 0) {
      cell.result_ready = true;
      ev[COMPLETED]++;
      multicast(slot, version, cell);
    } else {
      ev[SENT_UP]++;
      up(slot, version, cell);
    }
  };
  for (;;) {
    std::unique_ptr<Packet> p(box->get<Packet>());
    if (p->lost)
      continue;
    if (switch_packet_s > 0)
      sg4::this_actor::sleep_for(switch_packet_s * double(shape.packets(p->round)));
    long long key = p->slot * 2LL + p->version;
    auto found = table.find(key);
    const Cell none{};
    const bool has_cell = found != table.end();
    const Cell& held = has_cell ? found->second : none;
    if (p->kind == CONTRIBUTION) {
      switch (ina_cell_contribution(has_cell, held.round, held.count, held.seen, p->round, p->contributor)) {
        case INA_CELL_NEW: {
          Cell& cell = table[key];
          cell = Cell{p->round, uint64_t(1) << p->contributor, 1, p->value, false};
          ev[ADDED]++;
          if (plan.fan_in == 1)
            complete(p->slot, p->version, cell);
          break;
        }
        case INA_CELL_STALE:
          ev[STALE_CONTRIBUTION]++;
          break;
        case INA_CELL_RETRANSMISSION: {
          Cell& cell = found->second;
          if (cell.result_ready) {
            ev[RESULT_RESENT]++;
            for (const Child& c : plan.children)
              if (c.contributor == p->contributor) {
                Packet out{RESULT, p->slot, p->version, cell.round, cell.value, 0, false};
                transmit(outbox, plan.node, c.node, out, shape.packets(cell.round), shape.frame_bytes(cell.round));
              }
          } else {
            ev[PARTIAL_RESENT]++;
            up(p->slot, p->version, cell);
          }
          break;
        }
        case INA_CELL_DUPLICATE:
          ev[DUPLICATE]++;
          break;
        default: {                                      // INA_CELL_ADD
          Cell& cell = found->second;
          cell.seen |= uint64_t(1) << p->contributor;
          cell.value += p->value;
          cell.count++;
          ev[ADDED]++;
          if (cell.count == plan.fan_in)
            complete(p->slot, p->version, cell);
        }
      }
    } else {                                            // a result from the parent
      if (!ina_cell_takes_result(has_cell, held.round, held.count, p->round)) {
        ev[STALE_RESULT]++;
        continue;
      }
      Cell& cell = found->second;
      cell.value = p->value;
      cell.result_ready = true;
      ev[PARENT_RESULT]++;
      multicast(p->slot, p->version, cell);
    }
  }
}

static void timer_actor(int rank) {
  sg4::Actor::self()->daemonize();
  Worker& w = workers[rank];
  sg4::Mailbox* box = node_box[w.plan.host];
  double ticked = -1;
  while (w.accepted != shape.rounds() && w.error.empty()) {
    double deadline = -1;
    for (auto& [slot, s] : w.outstanding)
      if (deadline < 0 || s.deadline < deadline)
        deadline = s.deadline;
    double now = sg4::Engine::get_clock();
    if (deadline < 0) {
      sg4::this_actor::sleep_for(timeout_s);
    } else if (deadline > now) {
      sg4::this_actor::sleep_until(deadline);
    } else if (deadline != ticked) {
      ticked = deadline;
      box->put_init(new Packet{TICK, 0, 0, 0, 0, 0, false}, 0)->detach();
    } else {
      sg4::this_actor::sleep_for(timeout_s / 16);
    }
  }
}

static void worker_actor(int rank) {
  Worker& w = workers[rank];
  const int host = w.plan.host;
  sg4::Mailbox* box = node_box[host];
  box->set_receiver(sg4::Actor::self());
  const double uplink = rate_of[{host, w.plan.sw}];
  Outbox outbox;
  sg4::Actor::create("timer-" + node_names[host], sg4::Host::by_name(node_names[host]), timer_actor, rank);
  double link_free_at = 0;
  const long long rounds = shape.rounds();
  auto begin = [&](long long q, double now) {
    w.outstanding[shape.slot(q)] = Outstanding{q, now + w.timer.timeout, w.timer.timeout, now, 0};
  };
  auto send = [&](long long q) {
    if (host_frame_s > 0)
      sg4::this_actor::sleep_for(host_frame_s * double(shape.packets(q)));
    if (sg4::Engine::get_clock() < link_free_at)
      sg4::this_actor::sleep_until(link_free_at);
    link_free_at = sg4::Engine::get_clock() + shape.frame_bytes(q) / uplink;
    w.packets_sent += shape.packets(q);
    w.bytes_sent += shape.payload_bytes(q);
    w.wire_sent += shape.frame_bytes(q);
    Packet out{CONTRIBUTION, shape.slot(q), shape.version(q), q, contribution(rank, q), w.plan.contributor, false};
    transmit(outbox, host, w.plan.sw, out, shape.packets(q), shape.frame_bytes(q));
  };
  std::vector<long long> todo;
  double now = sg4::Engine::get_clock();
  for (long long q = 0; q < std::min<long long>(shape.slots(), shape.real_rounds()); q++) {
    begin(q, now);
    todo.push_back(q);
  }
  for (long long q : todo)
    send(q);
  while (w.accepted != rounds) {
    std::unique_ptr<Packet> p(box->get<Packet>());
    now = sg4::Engine::get_clock();
    todo.clear();
    if (p->kind == TICK) {
      for (auto it = w.outstanding.begin(); it != w.outstanding.end();) {
        auto& [slot, s] = *it;
        if (s.deadline > now) {
          ++it;
          continue;
        }
        int action = ina_on_expiry(s.retries, max_retries, shape.is_closing(s.round));
        if (action == INA_GIVE_UP) {
          // every result is in (hosts/ina/engine.py): the others left; stop waiting, no error
          w.closings_unanswered++;
          w.accepted++;
          advance();
          it = w.outstanding.erase(it);
          continue;
        }
        if (action == INA_STALL) {
          w.error = "rank " + std::to_string(rank) + ": no result from the switch for slot " + std::to_string(slot) +
                    " (round " + std::to_string(s.round) + ") after " + std::to_string(s.retries) + " retransmissions";
          sg4::Actor::kill_all();
          return;
        }
        s.retries++;
        s.timeout = ina_backoff(s.timeout, w.timer.maximum);
        s.deadline = now + s.timeout;
        w.retransmissions++;
        todo.push_back(s.round);
        ++it;
      }
    } else if (p->lost) {
      continue;
    } else {
      w.bytes_received += shape.payload_bytes(p->round);
      w.wire_received += shape.frame_bytes(p->round);
      auto found = w.outstanding.find(p->slot);
      if (found == w.outstanding.end() || found->second.round != p->round || shape.version(found->second.round) != p->version)
        continue;                                       // stale or duplicate: ignored
      if (p->value != expected[p->round])
        w.wrong_results++;
      if (found->second.retries == 0)                   // Karn's rule
        ina_timer_sample(&w.timer, now - found->second.sent_at);
      w.outstanding.erase(found);
      w.accepted++;
      advance();
      long long following = p->round + shape.slots();
      if (shape.has_round(following)) {
        begin(following, now);
        todo.push_back(following);
      }
    }
    if (w.accepted == rounds) {                         // the last result, or a closing given up
      w.finished = now;
      outbox.drain();
      break;
    }
    for (long long q : todo)
      send(q);
  }
}

// ---- host-only algorithms -------------------------------------------------------------------
struct Rank {
  int host;
  double uplink;
  std::vector<int32_t> ops;          // triples: kind (0 send, 1 receive), peer, elements
  long long messages_sent = 0, bytes_sent = 0, wire_sent = 0, bytes_received = 0, wire_received = 0;
  double finished = -1;
};
static std::vector<Rank> ranks;
static long long tcp_payload_per_frame, tcp_frame_bytes;

static long long tcp_wire_bytes(long long payload) {
  long long frames = (payload + tcp_payload_per_frame - 1) / tcp_payload_per_frame;
  return payload + frames * (tcp_frame_bytes - tcp_payload_per_frame);
}

static sg4::Mailbox* pair_box(int source, int destination) {
  return sg4::Mailbox::by_name("rank:" + std::to_string(source) + "->" + std::to_string(destination));
}

static void rank_actor(int rank) {
  Rank& r = ranks[rank];
  std::map<int, sg4::Mailbox*> outgoing, incoming;
  for (size_t i = 0; i < r.ops.size(); i += 3) {
    int peer = r.ops[i + 1];
    if (!incoming.count(peer)) {
      incoming[peer] = pair_box(peer, rank);
      incoming[peer]->set_receiver(sg4::Actor::self());
      outgoing[peer] = pair_box(rank, peer);
    }
  }
  double link_free_at = 0;
  Outbox outbox;
  for (size_t i = 0; i < r.ops.size(); i += 3) {
    int peer = r.ops[i + 1];
    long long payload = 4LL * r.ops[i + 2];
    if (r.ops[i] == 0) {
      r.messages_sent++;
      advance();
      r.bytes_sent += payload;
      r.wire_sent += tcp_wire_bytes(payload);
      if (host_frame_s > 0)
        sg4::this_actor::sleep_for(host_frame_s * double((payload + tcp_payload_per_frame - 1) / tcp_payload_per_frame));
      if (sg4::Engine::get_clock() < link_free_at)
        sg4::this_actor::sleep_until(link_free_at);
      link_free_at = sg4::Engine::get_clock() + tcp_wire_bytes(payload) / r.uplink;
      outbox.put(outgoing[peer], reinterpret_cast<void*>(intptr_t(payload + 1)), tcp_wire_bytes(payload));
    } else {
      long long received = reinterpret_cast<intptr_t>(incoming[peer]->get<void>()) - 1;
      if (received != payload) {
        std::fprintf(stderr, "rank %d: expected %lld bytes from rank %d, got a message of %lld\n", rank, payload,
                     peer, received);
        std::exit(3);
      }
      r.bytes_received += payload;
      r.wire_received += tcp_wire_bytes(payload);
    }
  }
  r.finished = sg4::Engine::get_clock();
  outbox.drain();
}

// ---- main -----------------------------------------------------------------------------------
static void fail(const std::string& message) {
  std::fprintf(stderr, "simcore: %s\n", message.c_str());
  std::exit(2);
}

static double seconds_since(std::chrono::steady_clock::time_point start) {  // wall clock
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int main(int argc, char** argv) {
  wall_start = last_beat = std::chrono::steady_clock::now();
  if (argc != 2)
    fail("usage: simcore INPUT");
  std::ifstream in(argv[1]);
  if (!in)
    fail(std::string("cannot read ") + argv[1]);
  std::string word, mode, log_level;
  in >> word >> mode >> word >> log_level;
  in >> word >> host_frame_s >> switch_packet_s >> cpu_frame_bytes;       // "costs"
  std::vector<std::string> args = {"simcore", "--log=root.thres:" + log_level, "--cfg=network/model:CM02",
                                   "--cfg=network/TCP-gamma:0", "--cfg=network/crosstraffic:0",
                                   "--cfg=contexts/stack-size:128",
                                   // no guard page per actor stack: with 33,000 actors (16,384
                                   // workers and their timers) the guard pages exceed Linux's
                                   // 65,530 mappings per process (vm.max_map_count)
                                   "--cfg=contexts/guard-size:0"};
  std::vector<char*> cargs;
  for (auto& a : args)
    cargs.push_back(a.data());
  int cargc = int(cargs.size());
  sg4::Engine engine(&cargc, cargs.data());

  size_t n;
  in >> word >> n;
  node_names.resize(n);
  for (auto& name : node_names)
    in >> name;
  auto* zone = sg4::create_full_zone("fabric");
  std::vector<sg4::Host*> hosts;
  for (auto& name : node_names)
    hosts.push_back(zone->create_host(name, 1e9));
  in >> word >> n;
  std::vector<sg4::SplitDuplexLink*> simlinks;
  for (size_t i = 0; i < n; i++) {
    LinkSpec l;
    std::string name;
    in >> name >> l.a >> l.b >> l.bytes_per_s >> l.latency >> l.loss;
    auto* link = zone->create_split_duplex_link(name, l.bytes_per_s);
    link->set_latency(l.latency);
    link->seal();
    simlinks.push_back(link);
    direction[{l.a, l.b}] = {int(i), true};
    direction[{l.b, l.a}] = {int(i), false};
    loss_of[{l.a, l.b}] = loss_of[{l.b, l.a}] = l.loss;
    any_loss = any_loss || l.loss > 0;
    rate_of[{l.a, l.b}] = rate_of[{l.b, l.a}] = l.bytes_per_s;
    links.push_back(l);
  }
  in >> word >> n;                     // routes: node paths (the links first, then the pairs)
  std::map<int, sg4::Link*> cpu_of;    // a switch's CPU as a link (host-only modes' frames)
  for (size_t i = 0; i < n; i++) {
    size_t hops;
    in >> hops;
    std::vector<int> path(hops);
    for (auto& node : path)
      in >> node;
    std::vector<sg4::LinkInRoute> route;
    for (size_t j = 0; j + 1 < path.size(); j++) {
      if (j > 0 && mode == "hosts" && switch_packet_s > 0) {
        auto& cpu = cpu_of[path[j]];
        if (!cpu) {
          cpu = zone->create_link("cpu-" + node_names[path[j]], cpu_frame_bytes / switch_packet_s);
          cpu->seal();
        }
        route.emplace_back(cpu);
      }
      auto [link, up] = direction.at({path[j], path[j + 1]});
      route.emplace_back(simlinks[link], up ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
    }
    zone->add_route(hosts[path.front()]->get_netpoint(), hosts[path.back()]->get_netpoint(), nullptr, nullptr,
                    route, false);
  }
  zone->seal();
  if (seconds_since(wall_start) >= 1)
    std::fprintf(stderr, "simcore: progress: platform of %zu nodes built in %.1f s\n", node_names.size(),
                 seconds_since(wall_start));
  for (auto& name : node_names)
    node_box.push_back(sg4::Mailbox::by_name("node:" + name));

  if (mode == "ina") {
    unsigned long long seed;
    in >> word >> shape.elements >> shape.k >> shape.window >> shape.train >> shape.closing;
    in >> word >> timeout_s >> max_timeout_s >> max_retries >> seed;
    rng.seed(seed);
    in >> word >> n;
    switch_plans.resize(n);
    for (auto& s : switch_plans) {
      size_t children;
      in >> s.node >> s.parent >> s.contributor_at_parent >> s.fan_in >> children;
      s.children.resize(children);
      for (auto& c : s.children)
        in >> c.contributor >> c.node;
    }
    in >> word >> n;
    world = int(n);
    workers.resize(n);
    for (size_t i = 0; i < n; i++) {
      Worker& w = workers[i];
      w.rank = int(i);
      in >> w.plan.host >> w.plan.sw >> w.plan.contributor;
      w.timer = ina_timer_new(timeout_s, max_timeout_s);
    }
    long long base = 0;
    for (int r = 0; r < world; r++)
      base += (r + 1) * 1000003LL;
    for (long long q = 0; q < shape.span(); q++)
      expected.push_back(base + q * 7 * world);
    progress_total = shape.rounds() * world;
    progress_unit = "rounds";
    cells.resize(switch_plans.size());
    events.assign(switch_plans.size(), {});
    for (size_t i = 0; i < switch_plans.size(); i++)
      sg4::Actor::create("switch-" + node_names[switch_plans[i].node], hosts[switch_plans[i].node], switch_actor, int(i));
    for (int r = 0; r < world; r++)
      sg4::Actor::create("worker-" + node_names[workers[r].plan.host], hosts[workers[r].plan.host], worker_actor, r);
    engine.run();
    for (auto& w : workers)
      std::printf("worker %d %d %.17g %lld %lld %lld %lld %lld %lld %lld %lld %s\n", w.rank,
                  int(w.accepted == shape.rounds()), w.finished, w.packets_sent, w.bytes_sent, w.wire_sent,
                  w.bytes_received, w.wire_received, w.retransmissions, w.wrong_results, w.closings_unanswered,
                  w.error.empty() ? "-" : w.error.c_str());
    std::array<long long, EVENTS> total{};
    for (auto& e : events)
      for (int i = 0; i < EVENTS; i++)
        total[i] += e[i];
    for (int i = 0; i < EVENTS; i++)
      std::printf("event %s %lld\n", EVENT_NAMES[i], total[i]);
    std::printf("frames_lost %lld\n", frames_lost);
  } else {
    std::string ops_path;
    in >> word >> tcp_payload_per_frame >> tcp_frame_bytes;
    in >> word >> ops_path;
    in >> word >> n;
    ranks.resize(n);
    std::ifstream ops(ops_path, std::ios::binary);
    if (!ops)
      fail("cannot read " + ops_path);
    for (auto& r : ranks) {
      long long count;
      in >> r.host >> r.uplink >> count;
      r.ops.resize(3 * count);
      progress_unit = "messages (about)";
      progress_total += count / 2;
      ops.read(reinterpret_cast<char*>(r.ops.data()), 12 * count);
      if (!ops)
        fail("short schedule file " + ops_path);
    }
    for (size_t i = 0; i < ranks.size(); i++)
      sg4::Actor::create("rank-" + node_names[ranks[i].host], hosts[ranks[i].host], rank_actor, int(i));
    engine.run();
    for (size_t i = 0; i < ranks.size(); i++) {
      Rank& r = ranks[i];
      std::printf("rank %zu %d %.17g %lld %lld %lld %lld %lld\n", i, int(r.finished >= 0), r.finished,
                  r.messages_sent, r.bytes_sent, r.wire_sent, r.bytes_received, r.wire_received);
    }
  }
  return 0;
}
