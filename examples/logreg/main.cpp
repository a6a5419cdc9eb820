// SPDX-License-Identifier: BSL-1.0
// dml-logreg: multinomial logistic (softmax) regression by minibatch SGD,
// data parallel over ranks (threads, or MPI processes) that average their
// models.
//
// From a serial trainer to this one. The serial loop is
//
//     W = 0;                                        // (features + 1) x classes
//     for (epoch) for (each minibatch B of b rows, shuffled)
//       W -= lr * gradient(W, B);                   // softmax cross-entropy
//
// and the data-parallel version differs in five places, marked [1]..[5]
// below (about 30 changed lines; argument parsing, loading and reporting
// live in examples/common/common.hpp and would be there in a serial
// trainer too):
//  [1] main() starts the ranks -- R threads with dml::comm::inproc::run, or
//      one per MPI process (trainer::launcher picks) -- and the loop moves
//      into a function of the rank's transport context;
//  [2] each rank takes its shard of the (once shuffled) training set among
//      the live members (trainer::epoch_samples, dml::data::shard::among) --
//      together the ranks use every sample once per epoch, and after a
//      failure the survivors take over the dead member's samples;
//  [3] the model gets a distributed vector: make_vector<float>(comm, size,
//      topology, consistency, dml::gather::average{});
//  [4] after each local step: copy W into it, scatter(), gather(), copy the
//      average back (model averaging: it keeps the replicas together under
//      every topology and consistency policy, which averaging gradients
//      does not -- see examples/least_squares);
//  [5] reporting averages the replicas once per epoch.
// The gradient step is the same in the serial trainer: examples/common/
// linear.hpp has it for dense rows (Fashion-MNIST: Eigen's matrix products)
// and sparse rows (LIBSVM files of up to 2^26 features: X_b W and X_b^T P
// visit only the model rows of the batch's nonzero features), with W stored
// feature-major so that such a row holds all the classes' weights.
#include "../common/common.hpp"
#include "../common/tune_driver.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using trainer::sample_set;
using trainer::settings;

// --straggler R@F: member R takes F times as long for each local step (it
// sleeps F - 1 times the step's own time after it); --straggler random@F:
// at each local step one member, drawn anew (the same draw on every
// member), does. For the experiments of docs/adaptive.md.
struct straggler {
  std::size_t member = 0;
  double factor = 1;
  bool random = false;
  // Whether `rank` is the slow one at local step k of `epoch` of `ranks`.
  [[nodiscard]] bool slow_at(std::size_t rank, std::size_t epoch, std::size_t k, std::size_t ranks) const {
    if (factor <= 1) return false;
    if (!random) return rank == member;
    std::uint64_t h = (epoch * 1000003 + k) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return h % ranks == rank;
  }
};

// --seconds T: train for a wall-time budget instead of a number of epochs.
// Each member keeps taking local steps (cb-size examples from its shard,
// reshuffled at every pass over it) until T seconds after the common start,
// then calls the vector's join(), which keeps it in the exchange until
// every member is done, so no policy waits for a scatter that will not
// come. Members are not tied to equal work: under bsp the fast ones still
// wait at each gather, under asp, ssp and adaptive they may take more
// steps than a straggler (under adaptive the controller may balance the
// periods: each member then takes its own share of local steps between
// two exchanges). `reports` - 1 snapshots of every member's model
// at k T / reports (k = 1 ..) are averaged and evaluated only after
// training, so the trace costs the run nothing but the copies; the last
// row is the final averaged model.
struct time_budget {
  double seconds = 0;  // 0: train for --epochs
  std::size_t reports = 10;
};

template <class Consistency>
trainer::row train(trainer::launcher& launch, const dml::topology::any& topology,
                   const Consistency& consistency, const settings& s, std::size_t batch_size, bool allreduce,
                   std::size_t classes, const sample_set& train, const sample_set& test,
                   trainer::progress& out, straggler slow, const time_budget& budget) {
  const auto rows = train.cols() + 1, cols = static_cast<Eigen::Index>(classes);  // the model's shape
  const std::size_t n = static_cast<std::size_t>(train.rows()), dim = static_cast<std::size_t>(rows * cols);
  const std::vector<std::size_t> order = dml::data::permutation(n, s.seed);
  const bool timed = budget.seconds > 0;
  trainer::row last;
  launch.run([&](auto& comm) {  // [1]
    const std::size_t ranks = comm.size();
    trainer::epoch_samples mine;  // [2] this rank's samples (its shard among the live members)
    // [3] The model's distributed vector (and, for reporting, an exact mean
    // over all ranks once per epoch: bsp over all, average). The report's
    // statistics: bytes sent, the share of full gathers and, under
    // --seconds, when the model was taken and one entry per member holding
    // its local steps (the mean times the members is each one's count).
    auto v = dml::make_vector<float>(comm, dim, topology, consistency, dml::gather::average{});
    trainer::model_mean mean(comm, dim, timed ? 3 + ranks : 2);
    const dml::consistency::adaptive* adaptive = trainer::adaptive_of(v);
    std::size_t changes_printed = 0, taken = 0;  // taken: this member's local steps
    std::vector<float> storage(dim, 0.0f), avg;
    std::vector<double> stats;
    trainer::weights w(storage.data(), rows, cols);  // feature-major: see linear.hpp
    trainer::class_scores scratch;
    const std::size_t steps = n / ranks / s.cb_size;  // the same on every rank
    double seconds = 0;

    using clock = std::chrono::steady_clock;
    auto extras_now = [&](double at) {
      std::vector<double> e{static_cast<double>(v.stats().bytes_sent), v.stats().full_share()};
      if (timed) {
        e.push_back(at);
        e.resize(3 + ranks, 0.0);
        e[3 + comm.rank()] = static_cast<double>(taken);
      }
      return e;
    };
    // The row of the averaged model `model` (statistics `st`).
    auto evaluate = [&](const std::vector<float>& model, const std::vector<double>& st, std::size_t epoch,
                        double at) {
      const trainer::const_weights m(model.data(), rows, cols);
      const double loss =
          train.visit([&](const auto& x) { return trainer::softmax_evaluate(m, x, train.y); }).first;
      const double accuracy =
          test.visit([&](const auto& x) { return trainer::softmax_evaluate(m, x, test.y); }).second;
      return trainer::row{epoch, at, loss, accuracy, st[0] * static_cast<double>(ranks), st[1]};
    };
    // The row of the averaged model in avg (and the statistics in stats).
    auto evaluate_row = [&](std::size_t epoch) { return evaluate(avg, stats, epoch, seconds); };
    // [5] Once per epoch: average the replicas and statistics over all ranks
    // (a barrier), stop the clock -- `seconds` is wall time until every rank
    // has finished the epoch -- and let one member evaluate while the others
    // wait. After the last epoch every member keeps the average (under MPI
    // another one may have to report it: trainer::report_final).
    auto report = [&](std::size_t epoch, clock::time_point start) {
      const bool me = dml::io::leader(comm);  // member 0, or the lowest survivor once it failed
      const bool keep = me || (epoch == s.epochs && !launch.in_process());
      mean.average(storage, extras_now(0), keep ? &avg : nullptr, keep ? &stats : nullptr);
      seconds += std::chrono::duration<double>(clock::now() - start).count();
      if (me) {
        trainer::print_view_changes(comm, changes_printed);
        last = evaluate_row(epoch);
        out.add(last);
      }
      mean.barrier();
    };
    std::vector<std::size_t> batch;
    // Local step k of an epoch (or a pass over the shard): cb-size examples
    // in minibatches of `batch` (the last one may be smaller), then the
    // straggler's sleep.
    auto local_step = [&](std::size_t epoch, std::size_t k, float lr) {
      const std::size_t per_step = mine.per_step();
      const auto& samples = mine.samples();
      const auto step_start = clock::now();
      train.visit([&](const auto& x) {
        for (std::size_t first = k * per_step, end = first + per_step; first < end; first += batch_size) {
          batch.assign(samples.begin() + static_cast<std::ptrdiff_t>(first),
                       samples.begin() + static_cast<std::ptrdiff_t>(std::min(end, first + batch_size)));
          const double loss = trainer::softmax_step(w, x, train.y, batch, lr, scratch);
          if (adaptive) adaptive->report_loss(loss);  // the controller watches it rise
        }
      });
      ++taken;
      if (slow.slow_at(comm.rank(), epoch, k, ranks))
        std::this_thread::sleep_for((clock::now() - step_start) * (slow.factor - 1));
    };
    // [4] Model averaging with the neighbours.
    auto exchange = [&] {
      std::copy(storage.begin(), storage.end(), v.span().begin());
      v.scatter();
      v.gather();
      std::copy(v.span().begin(), v.span().end(), storage.begin());
    };

    report(0, clock::now());
    if (!timed) {
      for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
        const auto start = clock::now();
        mine.next(comm, order, s, epoch);
        const float lr = s.lr / std::sqrt(static_cast<float>(epoch));  // a decaying step settles the noise
        std::size_t since_exchange = 0;                                // local steps since the last exchange
        for (std::size_t k = 0; k < steps; ++k) {
          local_step(epoch, k, lr);
          if (allreduce) {  // --baseline mpi_allreduce: the same step without dml
            launch.allreduce_mean(storage);
            continue;
          }
          // Under --consistency adaptive the controller may advise exchanging
          // every few steps (the same on every member: it is agreed); the
          // last step of an epoch always exchanges.
          if (++since_exchange < trainer::advised_period(v) && k + 1 < steps) continue;
          since_exchange = 0;
          exchange();
        }
        report(epoch, start);
      }
    } else {
      // --seconds: local steps until the budget is spent (see time_budget),
      // each pass over the shard reshuffled and with the step lr / sqrt(pass)
      // as the epochs have; snapshots for the trace on the way.
      std::vector<std::vector<float>> snapshots;
      std::vector<std::vector<double>> snapshot_extras;
      std::size_t pass = 0, k = steps, since_exchange = 0;
      float lr = s.lr;
      // Whether the next snapshot, at k T / reports, is due at t.
      auto snapshot_due = [&](double t) {
        const auto k = static_cast<double>(snapshots.size() + 1);
        return snapshots.size() + 1 < budget.reports &&
               t >= budget.seconds * k / static_cast<double>(budget.reports);
      };
      const auto start = clock::now();
      for (;;) {
        const double t = std::chrono::duration<double>(clock::now() - start).count();
        while (snapshot_due(t)) {
          snapshots.push_back(storage);
          snapshot_extras.push_back(extras_now(t));
        }
        if (t >= budget.seconds) break;
        if (k == steps) {
          mine.next(comm, order, s, ++pass);
          lr = s.lr / std::sqrt(static_cast<float>(pass));
          k = 0;
        }
        local_step(pass, k, lr);
        ++k;
        // A pass over the shard is only a reshuffle here: the member's
        // period (its balanced share under adaptive) may span passes.
        if (++since_exchange < trainer::advised_period(v)) continue;
        since_exchange = 0;
        exchange();
      }
      if (since_exchange > 0) exchange();  // the last local steps reach the others too
      v.join();                            // until every member is done: nobody waits for it in vain
      std::copy(v.span().begin(), v.span().end(), storage.begin());
      // The final average first, so that `seconds` (until every member has
      // joined and averaged) leaves out the snapshots' evaluations.
      const bool me = dml::io::leader(comm);
      const bool keep = me || !launch.in_process();
      mean.average(storage, extras_now(0), keep ? &avg : nullptr, keep ? &stats : nullptr);
      seconds = std::chrono::duration<double>(clock::now() - start).count();
      std::vector<float> model;
      std::vector<double> st;
      for (std::size_t i = 0; i < snapshots.size(); ++i) {
        mean.average(snapshots[i], snapshot_extras[i], me ? &model : nullptr, me ? &st : nullptr);
        if (me) out.add(evaluate(model, st, i + 1, st[2]));
        mean.barrier();
      }
      if (me) {
        trainer::print_view_changes(comm, changes_printed);
        last = evaluate_row(s.epochs);
        out.add(last);
        std::string text = "steps per member:";
        const auto live = static_cast<double>(comm.view().live.size());
        for (std::size_t m = 0; m < ranks; ++m)
          text += " " + std::to_string(std::llround(stats[3 + m] * live));
        std::printf("%s\n", text.c_str());
      }
      mean.barrier();
    }
    if (const auto* a = adaptive; a != nullptr && dml::io::leader(comm)) {
      std::string text = "adaptive: " + std::to_string(a->changes().size()) + " changes in " +
                         std::to_string(v.clock()) + " clocks";
      for (const auto& c : a->changes())
        text += "; " + c.settings.text() + " from clock " + std::to_string(c.clock);
      std::printf("%s\n", text.c_str());
    }
    trainer::report_final(launch, comm, s, last, "accuracy", [&] {
      trainer::print_view_changes(comm, changes_printed);
      return evaluate_row(s.epochs);
    });
  });
  return last;
}

// --tune (docs/tuning.md): the same model and step, driven by the online
// tuner of examples/common/tune_driver.hpp (learning rate, cb-size and
// staleness; the step has no momentum to tune), then one evaluation of the
// averaged model.
trainer::row train_tuned(trainer::launcher& launch, const settings& s, std::size_t batch_size,
                         std::size_t classes, const sample_set& train, const sample_set& test,
                         trainer::progress& out) {
  const auto rows = train.cols() + 1, cols = static_cast<Eigen::Index>(classes);
  const std::size_t n = static_cast<std::size_t>(train.rows()), dim = static_cast<std::size_t>(rows * cols);
  trainer::row last;
  launch.run([&](auto& comm) {
    std::vector<float> storage(dim, 0.0f), avg;
    trainer::weights w(storage.data(), rows, cols);
    trainer::class_scores scratch;
    std::vector<std::size_t> batch;
    // Trains on `samples` in minibatches.
    auto step = [&](trainer::tuned_step st, std::span<const std::size_t> samples) {
      train.visit([&](const auto& x) {
        for (std::size_t first = 0; first < samples.size(); first += batch_size) {
          batch.assign(
              samples.begin() + static_cast<std::ptrdiff_t>(first),
              samples.begin() + static_cast<std::ptrdiff_t>(std::min(samples.size(), first + batch_size)));
          trainer::softmax_step(w, x, train.y, batch, st.lr, scratch);
        }
      });
    };
    // The local model's mean cross-entropy on `samples` (the tuner's
    // progress slice).
    std::vector<Eigen::Index> rows_of;
    std::vector<int> labels_of;
    auto evaluate = [&](std::span<const std::size_t> samples) {
      rows_of.assign(samples.begin(), samples.end());
      labels_of.clear();
      for (std::size_t i : samples) labels_of.push_back(train.y[i]);
      const trainer::const_weights m(storage.data(), rows, cols);
      return train.visit([&](const auto& x) {
        return trainer::softmax_evaluate(m, trainer::select_rows(x, rows_of), labels_of).first;
      });
    };
    const auto report =
        trainer::run_tuned(comm, trainer::chosen_topology(s), s, n, {storage}, step, evaluate);
    // The bytes: every member's vectors, trials included, summed.
    trainer::model_mean mean(comm, dim, 1);
    const bool me = dml::io::leader(comm);
    const std::vector<double> sent{static_cast<double>(report.bytes_sent)};
    std::vector<double> sent_mean;
    mean.average(storage, sent, me ? &avg : nullptr, me ? &sent_mean : nullptr);
    if (me) {
      const trainer::const_weights m(avg.data(), rows, cols);
      const double loss =
          train.visit([&](const auto& x) { return trainer::softmax_evaluate(m, x, train.y); }).first;
      const double accuracy =
          test.visit([&](const auto& x) { return trainer::softmax_evaluate(m, x, test.y); }).second;
      last = trainer::row{
          s.epochs, report.total_seconds, loss, accuracy, sent_mean[0] * static_cast<double>(comm.size()), 1};
      out.add(last);
      if (!launch.in_process()) trainer::print_final(last, "accuracy");
    }
    mean.barrier();
  });
  return last;
}

// The classes of a LIBSVM set: labels 0..C-1, or -1/+1 (mapped to 0/1).
std::size_t libsvm_classes(sample_set& train, sample_set& test) {
  bool plus_minus = true;
  int top = 0;
  for (const sample_set* d : {&train, &test})
    for (int label : d->y) {
      plus_minus = plus_minus && (label == -1 || label == 1);
      top = std::max(top, label);
    }
  if (plus_minus) {
    for (sample_set* d : {&train, &test})
      for (int& label : d->y) label = label == 1 ? 1 : 0;
    return 2;
  }
  for (const sample_set* d : {&train, &test})
    for (int label : d->y)
      if (label < 0)
        throw dml::data_error(
            d->name, 0, "label " + std::to_string(label) + ": dml-logreg needs labels 0..C-1 (or -1 and +1)");
  return std::max(2, top + 1);
}

constexpr const char* description =
    R"(Trains softmax regression by minibatch SGD, data parallel over ranks that
average their models with a dml distributed vector after every --cb-size
examples. Data: Fashion-MNIST (pixels scaled to [0, 1], 10 classes) or
LIBSVM files of up to 2^26 features, kept as sparse rows (a step costs the
nonzeros of its samples), with labels 0..C-1 (C classes) or -1/+1 (two);
the model, features x classes floats per rank, may have up to 2^26 weights.
--lr defaults to 0.2 x sqrt(ranks) on Fashion-MNIST (ranks that average
take fewer, less noisy steps per epoch) and to 32 / (1 + mean squared row
length) on LIBSVM files (about the same product as 0.2 on Fashion-MNIST's
pixels; 16 for unit-length rows). Epoch e steps with lr / sqrt(e).
--cb-size defaults to 256; on LIBSVM files to the power of two >= features /
(4 x mean nonzeros per row) if that is larger (each exchange moves the
whole dense model), at most a rank's share of the samples.
--seconds T trains for T seconds instead of --epochs: each member goes on
through its shard until then, so faster members may take more steps; the
trace has --reports rows (the epoch column counts them), then a line of
each member's local steps.)";

}  // namespace

int main(int argc, char** argv) {
  settings s;
  s.epochs = 10;
  s.cb_size = 256;
  s.lr = 0.2f;
  std::size_t batch = 32;  // examples per SGD step
  std::string baseline;    // --baseline mpi_allreduce
  bool tune = false;       // --tune: online tuning (docs/tuning.md)
  const auto app = trainer::command_line("dml-logreg", description, s);
  app->add_option(
         "--batch", batch,
         "examples per SGD step, default 32; --cb-size\n(default 256) examples per rank between model\n"
         "averages: cb-size / batch local steps")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option(
         "--baseline", baseline,
         "mpi_allreduce: replace the dml vector by MPI_Allreduce\nof the model (the exact mean over all "
         "processes:\nplain synchronous SGD, the benchmarks' baseline);\nneeds --transport mpi_rma or mpi")
      ->option_text("NAME")
      ->check(cli::one_of({"mpi_allreduce"}));
  straggler slow;
  app->add_option_function<std::string>(
         "--straggler",
         [&slow](const std::string& text) {
           slow.random = text.rfind("random@", 0) == 0;
           const auto at = trainer::member_at_seconds(slow.random ? "0" + text.substr(6) : text);
           slow.member = at->first;
           slow.factor = at->second;
         },
         "member R (random: a member drawn anew at each step)\ntakes F times as long for each local step\n"
         "(experiments: docs/adaptive.md)")
      ->option_text("R@F")
      ->check(CLI::Validator(
          [](std::string& v) {
            const auto at = trainer::member_at_seconds(v.rfind("random@", 0) == 0 ? "0" + v.substr(6) : v);
            return at && at->second >= 1 ? std::string()
                                         : "needs MEMBER@FACTOR, FACTOR >= 1 (e.g. 3@4), got '" + v + "'";
          },
          "R@F"));
  time_budget budget;
  app->add_option("--seconds", budget.seconds,
                  "train for T seconds of wall time instead of --epochs:\neach member takes local steps "
                  "until then (a fast\none may take more than a straggler), then all average\n"
                  "(experiments: docs/adaptive.md)")
      ->option_text("T")
      ->check(cli::positive_number<double>());
  app->add_option("--reports", budget.reports,
                  "with --seconds: rows in the trace, the models taken at\nk T / N (k = 1 .. N), default 10")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_flag("--tune", tune,
                "tune lr, cb-size and staleness online, starting\nfrom the given ones (docs/tuning.md)");
  if (const auto exit = trainer::parse(*app, argc, argv, s, [&] {
        if (tune && (!baseline.empty() || !s.kill_after.empty()))
          throw trainer::usage_error("--tune goes without --baseline and --kill-after");
        if (tune && (s.consistency == "adaptive" || slow.factor > 1))
          throw trainer::usage_error(
              "--tune chooses the staleness itself: not with --consistency adaptive or --straggler");
        if (app->count("--reports") > 0 && budget.seconds == 0)
          throw trainer::usage_error("--reports is for --seconds");
        if (budget.seconds > 0) {
          if (app->count("--epochs") > 0)
            throw trainer::usage_error(
                "--seconds and --epochs exclude each other: train for a time or for "
                "a number of epochs");
          if (tune || !baseline.empty() || !s.kill_after.empty())
            throw trainer::usage_error("--seconds goes without --tune, --baseline and --kill-after");
          if (budget.reports > 1000)
            throw trainer::usage_error("--reports " + std::to_string(budget.reports) +
                                       " is too many (at most 1000)");
          s.epochs = budget.reports;  // the rows after row 0 (the 'final:' line's epochs=)
          s.uneven_work = true;       // members take as many steps as they can in the time
        }
      }))
    return *exit;
  const bool allreduce = baseline == "mpi_allreduce";
  try {
    // starts MPI for --transport mpi_rma / mpi
    trainer::launcher launch(s.transport, s.ranks, argc, argv, trainer::planned_kills(s));
    if (allreduce) launch.require_mpi_for("--baseline mpi_allreduce");
    auto loaded = trainer::read_everywhere(launch, "dml-logreg", [&] {
      return trainer::load_samples(s);
    });  // named, not bound: clang < 16 cannot capture bindings
    auto& train_set = loaded.first;
    auto& test_set = loaded.second;
    const std::size_t classes = s.data.empty() ? 10 : libsvm_classes(train_set, test_set);
    for (const auto* d : {&train_set, &test_set})
      for (int label : d->y)
        if (label < 0 || static_cast<std::size_t>(label) >= classes)
          throw dml::data_error(
              d->name, 0, "label " + std::to_string(label) + " outside 0.." + std::to_string(classes - 1));
    trainer::check_model_size(train_set.name, static_cast<std::size_t>(train_set.cols()), classes);
    // --seconds keeps reports - 1 snapshots of the model per rank
    trainer::check_inproc_memory(launch, s.ranks, (static_cast<std::size_t>(train_set.cols()) + 1) * classes,
                                 s, false,
                                 budget.seconds > 0 ? static_cast<double>(budget.reports - 1) : 0.0);
    // LIBSVM data: unless given, the step keeps lr x (1 + mean squared row
    // length) -- the squared length of a row with the bias's constant 1 --
    // at 32, about what the default 0.2 gives on Fashion-MNIST's pixels
    // (0.2 x 162.9): a step moves the logits by about that product, and
    // unit-length text rows are 80 times shorter than images.
    // Fashion-MNIST: the default 0.2 times sqrt(ranks) (common.hpp).
    std::string lr_note = s.data.empty() ? trainer::scale_lr_with_ranks(s) : "";
    if (!s.data.empty() && !s.lr_given) {
      const double length2 = train_set.visit([](const auto& x) { return trainer::mean_squared_norm(x); });
      s.lr = static_cast<float>(32.0 / (1.0 + length2));
      lr_note = " (32 / (1 + mean squared row length))";
    }
    if (!s.data.empty() && !s.cb_size_given)
      s.cb_size =
          trainer::sparse_cb_size(train_set, static_cast<std::size_t>(train_set.rows()) / s.ranks, s.cb_size);
    if (static_cast<std::size_t>(train_set.rows()) / s.ranks < s.cb_size)
      throw trainer::usage_error(std::to_string(train_set.rows()) + " training samples are too few for " +
                                 std::to_string(s.ranks) + " ranks with --cb-size " +
                                 std::to_string(s.cb_size));
    if (launch.leader())
      std::printf(
          "dml-logreg: %zu ranks, topology %s, consistency %s, cb-size %zu, lr %g%s, %zu training / %zu test "
          "samples, %zu features%s, %zu classes\n",
          s.ranks, s.topology.c_str(), s.consistency.c_str(), s.cb_size, static_cast<double>(s.lr),
          lr_note.c_str(), static_cast<std::size_t>(train_set.rows()),
          static_cast<std::size_t>(test_set.rows()), static_cast<std::size_t>(train_set.cols()),
          train_set.sparse() ? " (sparse rows)" : "", classes);
    trainer::progress out(launch.leader() ? s.csv : std::string(), "accuracy");
    const trainer::row r = tune ? train_tuned(launch, s, batch, classes, train_set, test_set, out)
                                : trainer::with_policies(s, [&](auto topology, auto consistency) {
                                    return train(launch, topology, consistency, s, batch, allreduce, classes,
                                                 train_set, test_set, out, slow, budget);
                                  });
    trainer::finish(launch, s, r, "accuracy");
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-logreg", e);
  } catch (const trainer::usage_error& e) {
    std::fprintf(stderr, "dml-logreg: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-logreg: %s\n", e.what());
    return 1;
  }
}
