// SPDX-License-Identifier: BSL-1.0
// dml-gen-lasso: writes a regression data set in LIBSVM format whose
// columns are correlated in blocks, labelled by a sparse planted model
// (lasso::generate in lasso.hpp): the data on which random parallel
// coordinate descent (Shotgun) suffers and a dependency check pays. A tool
// of its own: dml-gen-sparse's options (hashed Zipf words, classes, label
// noise) have no meaning for it. Deterministic: the same options write the
// same file.
#include "../common/cli.hpp"
#include "lasso.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

namespace {

using cli::usage_error;

constexpr const char* description =
    R"(Writes FILE in LIBSVM format: y = X b* + noise, with b* nonzero on
--support random columns; columns come in blocks of --block that are present
together in a row with probability --density and correlate by about --rho
within a block (about 0 across blocks). With --loss logistic the label is +1
with probability sigma(x b*) and -1 otherwise (for dml-lasso --loss
logistic). Deterministic by --seed.)";

bool parse(int argc, char** argv, lasso::generator_settings& g, std::string& out) {
  const auto app = cli::app("dml-gen-lasso", description);
  std::string kind = "squared";
  app->add_option("--loss", kind, "squared (y = X b* + noise, default) | logistic (+-1)")
      ->option_text("NAME")
      ->check(cli::one_of({"squared", "logistic"}));
  app->add_option("--out", out, "the file to write (required)")->option_text("FILE")->check(cli::not_empty());
  app->add_option("--rows", g.rows, "default 2000")
      ->option_text("N")
      ->check(cli::number_where<std::size_t>([](std::size_t n) { return n >= 1 && n <= 10000000; },
                                             "must be 1..10000000"));
  app->add_option("--features", g.features, "default 1000")
      ->option_text("M")
      ->check(cli::number_where<std::size_t>(
          [](std::size_t n) { return n >= 1 && n <= (std::size_t{1} << 26); }, "must be 1..2^26"));
  app->add_option("--block", g.block, "correlated columns per block, default 20")
      ->option_text("B")
      ->check(cli::whole_number());
  app->add_option("--rho", g.rho, "correlation within a block, [0, 1), default 0.8")
      ->option_text("R")
      ->check(cli::number_where<double>([](double r) { return r >= 0 && r < 1; }, "must be in [0, 1)"));
  app->add_option("--density", g.density, "probability that a row has a block, (0, 1], default 0.1")
      ->option_text("D")
      ->check(cli::number_where<double>([](double d) { return d > 0 && d <= 1; }, "must be in (0, 1]"));
  app->add_option("--support", g.support, "nonzero planted coefficients, default 40")
      ->option_text("K")
      ->check(cli::whole_number(0));
  app->add_option("--noise", g.noise, "standard deviation of the label noise, default 0.5")
      ->option_text("S")
      ->check(cli::number_where<double>([](double s) { return s >= 0; }, "must be >= 0"));
  app->add_option("--seed", g.seed, "default 1")
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
  if (!cli::parse(*app, argc, argv)) return false;
  g.kind = kind == "logistic" ? lasso::loss::logistic : lasso::loss::squared;
  if (out.empty()) throw usage_error("--out FILE is required");
  if (g.block > g.features) throw usage_error("--block: must be at most --features");
  if (g.support > g.features) throw usage_error("--support: must be at most --features");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  lasso::generator_settings g;
  std::string out;
  try {
    if (!parse(argc, argv, g, out)) return 0;
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-gen-lasso: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    const auto gen = lasso::generate(g);
    std::FILE* f = std::fopen(out.c_str(), "w");
    if (!f) throw std::runtime_error(out + ": cannot open for writing (" + std::strerror(errno) + ")");
    const auto& d = gen.data;
    for (std::size_t i = 0; i < d.rows(); ++i) {
      std::fprintf(f, "%.9g", d.y[i]);
      for (std::size_t k = d.start[i]; k < d.start[i + 1]; ++k)
        std::fprintf(f, " %u:%.9g", static_cast<unsigned>(d.column[k] + 1), d.value[k]);
      std::fputc('\n', f);
    }
    if (std::fclose(f) != 0) throw std::runtime_error(out + ": write failed");
    std::size_t nnz = d.column.size(), planted = 0;
    char labels[64] = "logistic labels";
    if (g.kind == lasso::loss::squared) std::snprintf(labels, sizeof labels, "noise %g", g.noise);
    for (double v : gen.truth) planted += v != 0 ? 1 : 0;
    std::printf(
        "dml-gen-lasso: %s: %zu rows, %zu features in blocks of %zu (rho %g), %.1f nonzeros per row, %zu "
        "planted "
        "coefficients, %s, seed %llu, lambda_max %.6g\n",
        out.c_str(), d.rows(), g.features, g.block, g.rho,
        static_cast<double>(nnz) / static_cast<double>(d.rows()), planted, labels,
        static_cast<unsigned long long>(g.seed), lasso::lambda_max(d, g.kind));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-gen-lasso: %s\n", e.what());
    return 1;
  }
}
