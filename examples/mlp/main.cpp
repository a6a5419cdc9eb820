// SPDX-License-Identifier: BSL-1.0
// dml-mlp: a 784-256-10 network (ReLU, softmax) trained by minibatch SGD,
// data parallel over ranks (threads or MPI processes), one distributed
// vector per layer.
//
// As MALT does for neural networks, the ranks exchange gradients every step
// (--cb-size examples per rank) and average whole models every
// --average-every steps. Averaging gradients alone keeps the replicas equal
// only under bsp or notify_ack over `all` (see examples/least_squares);
// elsewhere they drift, and the periodic model average pulls them back.
// Each layer has two vectors, one carrying its gradient and one its
// parameters, so that a gather never mixes a neighbour's gradient with a
// model (under asp a slot holds whatever the neighbour wrote last). Each
// layer's vectors may have their own policies: here both layers take the
// command line's, a larger network would give its big layers a sparser
// topology.
//
// The changes from a serial trainer are those of examples/logreg ([1] run,
// [2] shard, [3] vectors, [4] exchange, [5] report), with [4] twice: the
// gradient exchange before each step and the model average every few steps.
//
// --momentum M steps with heavy-ball momentum (each member keeps its own
// velocity of the averaged gradients); --tune tunes the learning rate, the
// momentum, --cb-size and the staleness online (train_tuned below).
//
// --params table | tables keeps the parameters in dml parameter tables
// instead, one for all layers or one per layer as GeePS does (tables.hpp);
// the network itself is in net.hpp.
#include "../common/common.hpp"
#include "../common/tune_driver.hpp"
#include "net.hpp"
#include "tables.hpp"

#include <dml/vector/group.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace {

using trainer::dataset;
using trainer::settings;
using namespace mlp;

// How the ranks exchange: one vector per layer, or the layers fused into one
// vector group (one exchange per step instead of one per layer), or fused
// and overlapped (each step's gradient exchange runs in the background
// while the next gradient is computed, and is applied one step late).
enum class exchange { layers, fused, overlapped };

template <class Consistency>
trainer::row train(trainer::launcher& launch, const dml::topology::any& topology,
                   const Consistency& consistency, const settings& s, std::size_t average_every, exchange how,
                   float momentum, std::size_t evaluate_every, const dataset& train, const dataset& test,
                   trainer::progress& out) {
  const std::size_t n = static_cast<std::size_t>(train.x.rows());
  const std::vector<std::size_t> order = dml::data::permutation(n, s.seed);
  trainer::row last;
  launch.run([&](auto& comm) {  // [1]
    using clock = std::chrono::steady_clock;
    const std::size_t ranks = comm.size();
    trainer::epoch_samples mine;                                // [2] its shard among the live members
    net model = initial(train.x.cols(), s.seed), grad = model;  // same start on every rank
    std::array<std::vector<float>, 2> velocity;                 // --momentum: this member's
    for (std::size_t l = 0; l < 2; ++l) velocity[l].assign(momentum == 0 ? 0 : model[l].size(), 0.0f);
    // [3] Per layer: a vector for its gradient and one for its parameters,
    // or (fused) one group of both layers for gradients, one for parameters.
    auto make = [&](const layer& l) {
      return dml::make_vector<float>(comm, l.size(), topology, consistency, dml::gather::average{});
    };
    auto make_group = [&] {
      return dml::make_vector_group<float>(comm, {model[0].size(), model[1].size()}, topology, consistency,
                                           dml::gather::average{});
    };
    const bool fused = how != exchange::layers;
    std::vector<decltype(make(model[0]))> grads, params;          // --exchange layers
    std::vector<decltype(make_group())> grad_group, param_group;  // fused, overlapped
    if (fused) {
      grad_group.push_back(make_group());
      param_group.push_back(make_group());
    } else {
      for (const auto& l : model) grads.push_back(make(l));
      for (const auto& l : model) params.push_back(make(l));
    }
    // The gradient of layer l as it arrives, and the parameters' buffer.
    auto grad_in = [&](std::size_t l) { return fused ? grad_group[0].part(l) : grads[l].span(); };
    auto param_buf = [&](std::size_t l) { return fused ? param_group[0].part(l) : params[l].span(); };
    auto exchange_stats = [&] {
      std::vector<dml::vector_stats> all;
      for (auto& v : grads) all.push_back(v.stats());
      for (auto& v : params) all.push_back(v.stats());
      for (auto& g : grad_group) all.push_back(g.stats());
      for (auto& g : param_group) all.push_back(g.stats());
      return all;
    };
    bool in_flight = false;  // overlapped: a gradient exchange runs in the background
    const std::size_t total = model[0].size() + model[1].size();
    auto mean = dml::make_vector<double>(comm, total + 2);
    std::size_t changes_printed = 0;  // view-change lines printed
    const std::size_t steps = n / ranks / s.cb_size;
    double seconds = 0;
    std::size_t step = 0;

    // The row of the averaged model and statistics in `mean` (every member
    // holds them after a report).
    auto evaluate_row = [&](std::size_t epoch) {
      const auto all = mean.eigen();
      net avg = model;
      std::size_t at = 0;
      for (auto& l : avg)
        for (float& x : l.p) x = static_cast<float>(all[static_cast<Eigen::Index>(at++)]);
      // The training loss over the first 10000 samples: a full pass would
      // cost a third of an epoch.
      const double loss = evaluate(avg, train, 10000).first,
                   accuracy = evaluate(avg, test, test.x.rows()).second;
      return trainer::row{epoch,
                          seconds,
                          loss,
                          accuracy,
                          all[static_cast<Eigen::Index>(total)] * static_cast<double>(ranks),
                          all[static_cast<Eigen::Index>(total + 1)]};
    };
    // `at_step` != 0: a report within the epoch (--evaluate-every), after
    // that many steps in all. Training seconds exclude the reports.
    auto mark = clock::now();
    auto report = [&](std::size_t epoch, std::size_t at_step = 0) {  // [5]
      auto all = mean.eigen();
      std::size_t at = 0;
      for (auto& l : model)
        for (float x : l.p) all[static_cast<Eigen::Index>(at++)] = x;
      double bytes = 0, full = 0;
      const auto all_stats = exchange_stats();
      for (const auto& st : all_stats) {
        bytes += static_cast<double>(st.bytes_sent);
        full += st.full_share() / static_cast<double>(all_stats.size());
      }
      all[static_cast<Eigen::Index>(total)] = bytes;
      all[static_cast<Eigen::Index>(total + 1)] = full;
      mean.scatter();
      mean.gather();
      seconds += std::chrono::duration<double>(clock::now() - mark).count();
      if (dml::io::leader(comm)) {  // member 0, or the lowest survivor once it failed
        trainer::print_view_changes(comm, changes_printed);
        if (at_step == 0) {
          last = evaluate_row(epoch);
          out.add(last);
        } else {
          out.add_step(evaluate_row(epoch), at_step, at_step * s.cb_size * ranks);
        }
      }
      mean.barrier();
      mark = clock::now();
    };

    report(0);
    minibatch mb;
    for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
      mine.next(comm, order, s, epoch);
      const std::size_t per_step = mine.per_step();  // the minibatch: larger after a failure
      const float lr = s.lr / std::sqrt(static_cast<float>(epoch));
      for (std::size_t k = 0; k < steps; ++k) {
        mb.take(mine.samples(), k, per_step, train);
        gradient(model, mb.x, mb.y, grad);
        // [4] Exchange gradients and step.
        auto step_with = [&](std::size_t l) { sgd(model[l].p, grad_in(l), velocity[l], lr, momentum); };
        if (how == exchange::overlapped) {
          // The previous step's exchange ran while this gradient was
          // computed: apply it now, then send this one in the background.
          if (in_flight) {
            grad_group[0].gather();
            for (std::size_t l = 0; l < 2; ++l) step_with(l);
          }
          for (std::size_t l = 0; l < 2; ++l)
            std::copy(grad[l].p.begin(), grad[l].p.end(), grad_in(l).begin());
          grad_group[0].vector().scatter_async();
          in_flight = true;
        } else if (fused) {
          for (std::size_t l = 0; l < 2; ++l)
            std::copy(grad[l].p.begin(), grad[l].p.end(), grad_in(l).begin());
          grad_group[0].scatter();
          grad_group[0].gather();
          for (std::size_t l = 0; l < 2; ++l) step_with(l);
        } else {
          for (std::size_t l = 0; l < 2; ++l) {
            std::copy(grad[l].p.begin(), grad[l].p.end(), grads[l].span().begin());
            grads[l].scatter();
            grads[l].gather();
            step_with(l);
          }
        }
        if (++step % average_every == 0) {  // [4] average the models
          if (in_flight) {                  // the last gradient first
            grad_group[0].gather();
            for (std::size_t l = 0; l < 2; ++l) step_with(l);
            in_flight = false;
          }
          for (std::size_t l = 0; l < 2; ++l)
            std::copy(model[l].p.begin(), model[l].p.end(), param_buf(l).begin());
          if (fused) {
            param_group[0].scatter();
            param_group[0].gather();
          } else {
            for (auto& v : params) {
              v.scatter();
              v.gather();
            }
          }
          for (std::size_t l = 0; l < 2; ++l)
            std::copy(param_buf(l).begin(), param_buf(l).end(), model[l].p.begin());
        }
        if (evaluate_every != 0 && step % evaluate_every == 0 && k + 1 != steps) report(epoch, step);
      }
      if (in_flight) {  // the epoch's last gradient before the report
        grad_group[0].gather();
        for (std::size_t l = 0; l < 2; ++l) sgd(model[l].p, grad_in(l), velocity[l], lr, momentum);
        in_flight = false;
      }
      report(epoch);
    }
    trainer::report_final(launch, comm, s, last, "accuracy", [&] {
      trainer::print_view_changes(comm, changes_printed);
      return evaluate_row(s.epochs);
    });
  });
  return last;
}

// --tune (docs/tuning.md): the same network and gradient, driven by the
// online tuner of examples/common/tune_driver.hpp (learning rate, momentum,
// cb-size and staleness), then one evaluation of the averaged model. The
// tuner averages whole models after every step (one vector of both layers)
// instead of exchanging gradients: under bsp over all that is the same
// step -- the members start equal, so the mean of their models after a
// step is the step along the mean gradient, with momentum too (the mean of
// their velocities follows the mean gradient) -- and under ssp it is the
// model averaging the tuner's staleness trials are about. --average-every
// and --exchange do not apply. A unit of trial length is four steps of
// --cb-size: the progress slice (half a unit per member, 128 samples at 4
// ranks of 16) is then large enough that the loss on it does not jump
// between points (with one step per unit, a 32-sample slice made the stall
// check fire and re-tune towards ever smaller rates).
trainer::row train_tuned(trainer::launcher& launch, const settings& s, float momentum, const dataset& train,
                         const dataset& test, trainer::progress& out) {
  const std::size_t n = static_cast<std::size_t>(train.x.rows());
  trainer::row last;
  launch.run([&](auto& comm) {
    net model = initial(train.x.cols(), s.seed), grad = model;
    const std::size_t sizes[] = {model[0].size(), model[1].size()}, total = sizes[0] + sizes[1];
    // The tuner's state: both layers in one buffer (averaged) and the
    // velocity (this member's).
    std::vector<float> flat(total), velocity(total, 0.0f), avg;
    std::copy(model[0].p.begin(), model[0].p.end(), flat.begin());
    std::copy(model[1].p.begin(), model[1].p.end(), flat.begin() + static_cast<std::ptrdiff_t>(sizes[0]));
    auto part = [&](std::vector<float>& all, std::size_t l) {
      return std::span<float>(all).subspan(l == 0 ? 0 : sizes[0], sizes[l]);
    };
    auto load = [&](std::vector<float>& from) {  // the buffer into the network
      for (std::size_t l = 0; l < 2; ++l) std::copy_n(part(from, l).begin(), sizes[l], model[l].p.begin());
    };
    std::vector<std::size_t> batch;
    std::vector<int> labels;
    auto select = [&](std::span<const std::size_t> samples) {
      batch.assign(samples.begin(), samples.end());
      labels.clear();
      for (std::size_t i : samples) labels.push_back(train.y[i]);
      return trainer::matrix(train.x(batch, Eigen::all));
    };
    // One minibatch step on `samples` (cb-size of them).
    auto step = [&](trainer::tuned_step st, std::span<const std::size_t> samples) {
      load(flat);
      gradient(model, select(samples), labels, grad);
      for (std::size_t l = 0; l < 2; ++l)
        sgd(part(flat, l), grad[l].p, part(velocity, l), st.lr, st.momentum);
    };
    // The local network's mean cross-entropy on `samples` (the tuner's
    // progress slice).
    auto slice_loss = [&](std::span<const std::size_t> samples) {
      load(flat);
      Eigen::MatrixXf h, p;
      return forward(model, select(samples), labels, h, p);
    };
    const auto report =
        trainer::run_tuned(comm, trainer::chosen_topology(s), s, n,
                           {flat, velocity, static_cast<double>(momentum), 4 * s.cb_size}, step, slice_loss);
    // The bytes: every member's vectors, trials included, summed.
    trainer::model_mean mean(comm, total, 1);
    const bool me = dml::io::leader(comm);
    const std::vector<double> sent{static_cast<double>(report.bytes_sent)};
    std::vector<double> sent_mean;
    mean.average(flat, sent, me ? &avg : nullptr, me ? &sent_mean : nullptr);
    if (me) {
      load(avg);
      // As in train(): the training loss over the first 10000 samples.
      const double loss = evaluate(model, train, 10000).first,
                   accuracy = evaluate(model, test, test.x.rows()).second;
      last = trainer::row{
          s.epochs, report.total_seconds, loss, accuracy, sent_mean[0] * static_cast<double>(comm.size()), 1};
      out.add(last);
      if (!launch.in_process()) trainer::print_final(last, "accuracy");
    }
    mean.barrier();
  });
  return last;
}

// The defaults for R ranks, unless given: a step averages the gradients
// of R x cb-size samples, and the network needs steps of at most about 64
// samples to reach one rank's accuracy in as many epochs. So beyond 2
// ranks the per-rank minibatch shrinks to max(4, 64 / R), and the step
// follows the square-root rule for the global batch: 0.1 x sqrt(R x cb / 32)
// (32: the one-rank minibatch). docs/trainers.md, "Equal-epoch quality",
// has the measurements behind it (8 ranks: cb 8, lr 0.141).
std::string default_batch_and_step(settings& s) {
  if (!s.cb_size_given && s.ranks > 2) s.cb_size = std::max<std::size_t>(4, 64 / s.ranks);
  if (s.lr_given || s.ranks == 1) return "";
  const double global = static_cast<double>(s.ranks * s.cb_size);
  s.lr = static_cast<float>(0.1 * std::sqrt(global / 32.0));
  char note[80];
  std::snprintf(note, sizeof note, " (0.1 x sqrt(%zu ranks x %zu / 32))", s.ranks, s.cb_size);
  return note;
}

constexpr const char* description =
    R"(Trains a 784-256-10 network (ReLU, softmax) on Fashion-MNIST by minibatch SGD,
data parallel over ranks: gradients are averaged after every
--cb-size examples per rank (the minibatch), whole models every
--average-every steps. Beyond 2 ranks --cb-size defaults to
max(4, 64 / ranks), and --lr to 0.1 x sqrt(ranks x cb-size / 32): a step of
R ranks sees a batch R times larger. --tune tunes --lr, --momentum,
--cb-size and the staleness while training (docs/tuning.md). --params
table|tables keeps the parameters in parameter tables, one for all layers
or one per layer (docs/tables.md).)";

}  // namespace

int main(int argc, char** argv) {
  settings s;
  s.epochs = 5;
  s.cb_size = 32;
  s.lr = 0.1f;
  std::size_t average_every = 8;
  float momentum = 0;              // --momentum: 0 is plain SGD
  bool tune = false;               // --tune: online tuning (docs/tuning.md)
  std::size_t evaluate_every = 0;  // --evaluate-every: steps between reports within an epoch
  exchange how = exchange::fused;
  std::string how_name = "fused", params_name = "vectors";
  const auto app = trainer::command_line("dml-mlp", description, s);
  app->add_option("--average-every", average_every, "steps between model averages, default 8")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option(
         "--exchange", how_name,
         "layers (a vector per layer), fused (default: the\nlayers in one vector group, one exchange per "
         "step),\noverlapped (fused, and each step's gradient\nexchange runs while the next gradient is "
         "computed;\nit is applied one step late)")
      ->option_text("HOW")
      ->check(cli::one_of({"layers", "fused", "overlapped"}));
  app->add_option("--params", params_name,
                  "vectors (default: every rank holds the model, gradients\nand models exchanged through "
                  "vectors), table (the\nparameters in one dml::table), tables (one table per\nlayer: a "
                  "layer's update leaves as soon as its\ngradient is ready, as in GeePS; docs/tables.md)")
      ->option_text("WHERE")
      ->check(cli::one_of({"vectors", "table", "tables"}));
  app->add_option("--momentum", momentum,
                  "heavy-ball momentum in [0, 1), default 0 (plain\nSGD); each rank keeps its own velocity")
      ->option_text("M")
      ->check(cli::number_where<float>([](float m) { return m >= 0 && m < 1; }, "needs a number in [0, 1)"));
  app->add_option(
         "--evaluate-every", evaluate_every,
         "also evaluate the model after every N minibatch steps\n(a 'step' line: steps, test accuracy, "
         "training\nsamples used by all ranks so far); default: after\neach epoch only")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_flag("--tune", tune,
                "tune lr, momentum, cb-size and staleness online,\nstarting from the given ones; models are "
                "averaged\nafter every step (docs/tuning.md)");
  if (const auto exit = trainer::parse(*app, argc, argv, s, [&] {
        if (!s.data.empty()) throw trainer::usage_error("dml-mlp trains on Fashion-MNIST only (no --data)");
        if (tune && (app->count("--average-every") > 0 || app->count("--exchange") > 0))
          throw trainer::usage_error(
              "--tune averages models after every step: not with --average-every or --exchange");
        if (tune && !s.kill_after.empty()) throw trainer::usage_error("--tune goes without --kill-after");
        if (tune && evaluate_every != 0)
          throw trainer::usage_error("--tune reports once, at the end: not with --evaluate-every");
        if (tune && s.consistency == "adaptive")
          throw trainer::usage_error("--tune chooses the staleness itself: not with --consistency adaptive");
        if (params_name != "vectors") {
          const std::string p = "--params " + params_name;
          if (tune) throw trainer::usage_error(p + " goes without --tune (which averages vectors)");
          for (const char* o : {"--average-every", "--exchange", "--topology"})
            if (app->count(o) > 0)
              throw trainer::usage_error(std::string(o) + " is for --params vectors: under " + p +
                                         " the members share one model, read from each row's owner");
          if (s.consistency != "bsp" && s.consistency != "ssp" && s.consistency != "asp")
            throw trainer::usage_error(p + " reads under bsp, ssp or asp, not --consistency " +
                                       s.consistency);
          if (!s.kill_after.empty()) throw trainer::usage_error(p + " goes without --kill-after");
        }
        how = how_name == "layers"  ? exchange::layers
              : how_name == "fused" ? exchange::fused
                                    : exchange::overlapped;
      }))
    return *exit;
  try {
    // starts MPI for --transport mpi_rma / mpi
    trainer::launcher launch(s.transport, s.ranks, argc, argv, trainer::planned_kills(s));
    const auto loaded = trainer::read_everywhere(launch, "dml-mlp", [&] {
      return trainer::load(s);
    });  // named, not bound: clang < 16 cannot capture bindings
    const auto& train_set = loaded.first;
    const auto& test_set = loaded.second;
    const std::string lr_note = default_batch_and_step(s);
    char momentum_note[48] = "";
    if (momentum > 0)
      std::snprintf(momentum_note, sizeof momentum_note, "momentum %g, ", static_cast<double>(momentum));
    if (static_cast<std::size_t>(train_set.x.rows()) / s.ranks < s.cb_size)
      throw trainer::usage_error(std::to_string(train_set.x.rows()) + " training samples are too few for " +
                                 std::to_string(s.ranks) + " ranks with --cb-size " +
                                 std::to_string(s.cb_size));
    const param_store where = params_name == "table"    ? param_store::table
                              : params_name == "tables" ? param_store::tables
                                                        : param_store::vectors;
    std::string consistency_note = s.consistency;
    if (s.consistency == "ssp") consistency_note += " (slack " + std::to_string(s.slack) + ")";
    if (launch.leader() && where != param_store::vectors)
      std::printf(
          "dml-mlp: %zu ranks, params %s, consistency %s, cb-size %zu, lr %g%s, %s%zu training / %zu test "
          "samples\n",
          s.ranks, where == param_store::table ? "in one table" : "in one table per layer",
          consistency_note.c_str(), s.cb_size, static_cast<double>(s.lr), lr_note.c_str(), momentum_note,
          static_cast<std::size_t>(train_set.x.rows()), static_cast<std::size_t>(test_set.x.rows()));
    else if (launch.leader())
      std::printf(
          "dml-mlp: %zu ranks, topology %s, consistency %s, cb-size %zu, average every %zu steps, lr %g%s, "
          "%s%zu training / %zu test samples\n",
          s.ranks, s.topology.c_str(), s.consistency.c_str(), s.cb_size, tune ? 1 : average_every,
          static_cast<double>(s.lr), lr_note.c_str(), momentum_note,
          static_cast<std::size_t>(train_set.x.rows()), static_cast<std::size_t>(test_set.x.rows()));
    trainer::progress out(launch.leader() ? s.csv : std::string(), "accuracy");
    const trainer::row r =
        where != param_store::vectors
            ? train_tables(launch, trainer::chosen_consistency(s), s, where == param_store::tables, momentum,
                           evaluate_every, train_set, test_set, out)
        : tune ? train_tuned(launch, s, momentum, train_set, test_set, out)
               : trainer::with_policies(s, [&](auto topology, auto consistency) {
                   return train(launch, topology, consistency, s, average_every, how, momentum,
                                evaluate_every, train_set, test_set, out);
                 });
    trainer::finish(launch, s, r, "accuracy");
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-mlp", e);
  } catch (const trainer::usage_error& e) {
    std::fprintf(stderr, "dml-mlp: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-mlp: %s\n", e.what());
    return 1;
  }
}
