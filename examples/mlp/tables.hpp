// SPDX-License-Identifier: BSL-1.0
// dml-mlp --params table | tables: the network's parameters in dml
// parameter tables (docs/tables.md, "Neural network layers: dml-mlp
// --params") instead of replicated in distributed vectors.
//
// GeePS (Cui's thesis, ch. 4) keeps each layer of a network in its own
// table, so that the backward pass can hand in a layer's update and end that
// table's clock (TableClock) as soon as the layer's gradient is ready: the
// update travels while the layers below are still computed (Algorithm 4,
// §4.4.4 and Fig. 4.12, which compares it with all layers in one table).
// Here:
//   --params tables  one table per layer; update + clock() per layer, top first;
//   --params table   every layer in one table; one clock() after the whole
//                    backward pass (GeePS-single-table).
// Each member trains on its shard. At the start of a minibatch it reads
// every row of the tables with read_rows (one fetch per owner); the table
// guarantees a read at clock T holds every member's updates of clocks
// 0..T-s-1 (bsp: s = 0, ssp: --slack, asp: no bound). Its update is the SGD
// step of its own minibatch divided by the number of members, so that under
// bsp a clock moves the model by the step of the averaged gradient, as the
// vector trainer does. A table holds the sum of the updates; rows start at
// zero, and the model is the initial one (the same on every member: shared
// seed) plus what the table holds, so no member has to write the initial
// model (whose update a failure could withdraw).
//
// Rows are 128 floats, as GeePS's (§4.4.1); a layer (weights, then biases,
// as in net.hpp) takes whole rows, the last one padded with zeros, and
// starts at a row boundary in the single table too: both modes then hold
// each parameter in a row of the same shape and add the same deltas to it.
#pragma once

#include "../common/common.hpp"
#include "net.hpp"

#include <dml/table.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <numeric>
#include <span>
#include <string>
#include <vector>

namespace mlp {

/// Where the parameters live: replicated in distributed vectors (main.cpp),
/// in one table, or in one table per layer.
enum class param_store { vectors, table, tables };

/// Floats per table row (GeePS's rows are arrays of 128 floats).
inline constexpr std::size_t row_floats = 128;

/// Rows a layer of `size` parameters takes.
inline std::size_t rows_for(std::size_t size) { return (size + row_floats - 1) / row_floats; }

/// Trains as the comment at the top says; `per_layer`: --params tables.
/// `consistency` holds bsp, ssp (with its slack) or asp.
/// `evaluate_every` (--evaluate-every): also report after every that many
/// minibatch steps (0: only after each epoch).
inline trainer::row train_tables(trainer::launcher& launch, const dml::consistency::any& consistency,
                                 const trainer::settings& s, bool per_layer, float momentum,
                                 std::size_t evaluate_every, const dataset& train, const dataset& test,
                                 trainer::progress& out) {
  const std::size_t n = static_cast<std::size_t>(train.x.rows());
  const std::vector<std::size_t> order = dml::data::permutation(n, s.seed);
  trainer::row last;
  launch.run([&](auto& comm) {
    using clock = std::chrono::steady_clock;
    const std::size_t ranks = comm.size();
    trainer::epoch_samples mine;
    const net init = initial(train.x.cols(), s.seed);  // the same on every member
    net model = init, grad = init;
    // Layer l: table table_of[l], rows [first[l], first[l] + rows_for(size)).
    std::size_t table_of[2], first[2];
    std::vector<std::size_t> table_rows;  // rows of each table
    for (std::size_t l = 0; l < 2; ++l) {
      const std::size_t rows = rows_for(model[l].size());
      if (per_layer || table_rows.empty()) table_rows.push_back(0);
      table_of[l] = table_rows.size() - 1;
      first[l] = table_rows.back();
      table_rows.back() += rows;
    }
    auto make = [&](std::size_t rows) { return dml::make_table<float>(comm, rows, row_floats, consistency); };
    std::vector<decltype(make(1))> tables;  // collective, in the same order on every member
    std::vector<std::vector<std::size_t>> all_rows;
    for (std::size_t rows : table_rows) {
      tables.push_back(make(rows));
      all_rows.emplace_back(rows);
      std::iota(all_rows.back().begin(), all_rows.back().end(), std::size_t{0});
    }
    // The model: the initial one plus every row's sum of updates, as this
    // member may see it now (read_rows: one fetch per owner). `behind` adds
    // up how many clocks each row read lags behind what bsp would give
    // (clock - 1 - age(row): 0 under bsp, at most the slack under ssp), over
    // `rows_read` rows: how stale the reads really were.
    double behind = 0, rows_read = 0;
    auto load = [&] {
      for (std::size_t t = 0; t < tables.size(); ++t) {
        const std::span<const float> held = tables[t].read_rows(all_rows[t]);
        const auto newest = static_cast<std::int64_t>(tables[t].current_clock()) - 1;
        for (std::size_t r : all_rows[t])
          behind += static_cast<double>(std::max<std::int64_t>(newest - tables[t].age(r), 0));
        rows_read += static_cast<double>(all_rows[t].size());
        for (std::size_t l = 0; l < 2; ++l) {
          if (table_of[l] != t) continue;
          const float* from = held.data() + first[l] * row_floats;
          for (std::size_t k = 0; k < model[l].p.size(); ++k) model[l].p[k] = init[l].p[k] + from[k];
        }
      }
    };
    std::array<std::vector<float>, 2> velocity;  // --momentum: this member's, of its own gradients
    std::array<std::vector<float>, 2> delta;     // layer l's update, padded to whole rows
    for (std::size_t l = 0; l < 2; ++l) {
      velocity[l].assign(momentum == 0 ? 0 : model[l].size(), 0.0f);
      delta[l].assign(rows_for(model[l].size()) * row_floats, 0.0f);
    }
    // Layer l's update: its SGD step from zero (net.hpp's sgd, so momentum
    // works as in the vector trainer), over the members, row by row.
    auto update = [&](std::size_t l, float lr) {
      const std::span<float> step(delta[l].data(), model[l].size());
      std::fill(step.begin(), step.end(), 0.0f);
      sgd(step, grad[l].p, velocity[l], lr / static_cast<float>(ranks), momentum);
      auto& t = tables[table_of[l]];
      for (std::size_t r = 0; r * row_floats < delta[l].size(); ++r)
        t.update(first[l] + r, std::span<const float>(delta[l]).subspan(r * row_floats, row_floats));
    };

    // The report: every member syncs the tables (afterwards every read
    // holds every update) and loads the model; the statistics go through a
    // bsp vector, whose barrier also keeps members from updating before
    // every member has read.
    trainer::model_mean stats(comm, 0, 8);
    std::vector<double> totals;
    double seconds = 0;
    auto evaluate_row = [&](std::size_t epoch) {
      const double loss = evaluate(model, train, 10000).first,
                   accuracy = evaluate(model, test, test.x.rows()).second;
      return trainer::row{epoch, seconds, loss, accuracy, totals.empty() ? 0 : totals[0], 1};
    };
    // `step` != 0: a report within the epoch (--evaluate-every), after
    // that many steps in all. Training seconds exclude the reports.
    auto mark = clock::now();
    auto report = [&](std::size_t epoch, std::size_t step = 0) {
      for (auto& t : tables) t.sync();
      load();
      double own[8] = {};  // this member's counters, over its tables
      for (auto& t : tables) {
        const auto& st = t.stats();
        own[0] += static_cast<double>(st.bytes_sent);
        own[1] += static_cast<double>(st.bytes_received);
        own[2] += static_cast<double>(st.fetches);
        own[3] += static_cast<double>(st.reads_waited);
        own[4] += st.wait_seconds;
        own[5] += static_cast<double>(st.clocks);
      }
      own[6] = behind;
      own[7] = rows_read;
      const bool me = dml::io::leader(comm);
      stats.average({}, own, nullptr, me ? &totals : nullptr);
      seconds += std::chrono::duration<double>(clock::now() - mark).count();
      if (me) {
        for (double& x : totals) x *= static_cast<double>(ranks);  // sums over the members
        if (step == 0) {
          last = evaluate_row(epoch);
          out.add(last);
        } else {
          out.add_step(evaluate_row(epoch), step, step * s.cb_size * ranks);
        }
      }
      stats.barrier();
      mark = clock::now();
    };

    report(0);
    const std::size_t steps = n / ranks / s.cb_size;
    std::size_t step = 0;  // minibatch steps so far, over the epochs
    minibatch mb;
    for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
      mine.next(comm, order, s, epoch);
      const std::size_t per_step = mine.per_step();
      const float lr = s.lr / std::sqrt(static_cast<float>(epoch));
      for (std::size_t k = 0; k < steps; ++k) {
        mb.take(mine.samples(), k, per_step, train);
        load();  // waits as the policy requires
        gradient(model, mb.x, mb.y, grad, [&](std::size_t l) {
          if (!per_layer) return;
          update(l, lr);  // GeePS: the layer's update leaves now ...
          tables[table_of[l]].clock();
        });
        if (!per_layer) {  // ... one table: all layers' updates leave together
          for (std::size_t l = 2; l-- > 0;) update(l, lr);
          tables[0].clock();
        }
        ++step;
        if (evaluate_every != 0 && step % evaluate_every == 0 && k + 1 != steps) report(epoch, step);
      }
      report(epoch);
    }
    // Summed over the members and tables: what the benchmarks read
    // (bench/mlp_tables.sh, bench/mlp_slack.py). Waiting covers reads held
    // back by the slack bound and the reports' sync(); "behind" is the mean
    // over every row read of how many clocks it lagged behind a bsp read.
    if (dml::io::leader(comm)) {
      std::printf(
          "tables: %zu, %.0f clocks, %.0f fetches, %.0f reads waited (%.3f s), %.0f KiB sent, %.0f KiB "
          "received, rows read %.3f clocks behind\n",
          tables.size(), totals[5], totals[2], totals[3], totals[4], totals[0] / 1024, totals[1] / 1024,
          totals[7] > 0 ? totals[6] / totals[7] : 0.0);
      std::fflush(stdout);
    }
    trainer::report_final(launch, comm, s, last, "accuracy", [&] { return evaluate_row(s.epochs); });
  });
  return last;
}

}  // namespace mlp
