// SPDX-License-Identifier: BSL-1.0
// Shared by the examples and benchmarks: command lines with CLI11. A program
// declares its options on a cli::app; cli::parse runs it and reports a bad
// command line as one line in the examples' words (main() prints it and exits
// with code 2), or prints the help for --help. The validators name what a
// value must be and what was given ("--cb-size: needs a whole number >= 1,
// got '0'"). Nothing here is dml API; the library itself never uses CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace cli {

/// A bad command line: main() prints it and exits with code 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `text` as a Number: a whole number >= min, or for floating types a finite
/// number > 0 (>= min when min > 0); nullopt when it is not one.
template <class Number>
std::optional<Number> to_number(std::string_view text, Number min) {
  Number value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  if constexpr (std::is_floating_point_v<Number>) {
    if (!std::isfinite(static_cast<double>(value)) || value <= 0 || value < min) return std::nullopt;
  } else if (value < min) {
    return std::nullopt;
  }
  return value;
}

/// Accepts a whole number >= min (and of the option's integer type).
template <class Number = std::size_t>
CLI::Validator whole_number(Number min = 1) {
  return CLI::Validator(
      [min](std::string& text) {
        if (to_number<Number>(text, min)) return std::string();
        Number ignored{};
        if (std::from_chars(text.data(), text.data() + text.size(), ignored).ec ==
            std::errc::result_out_of_range)
          return "'" + text + "' is too large (the most is " +
                 std::to_string(std::numeric_limits<Number>::max()) + ")";
        return "needs a whole number >= " + std::to_string(min) + ", got '" + text + "'";
      },
      "N");
}

/// Accepts a finite number > 0.
template <class Number = double>
CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) {
        return to_number<Number>(text, Number{0}) ? std::string()
                                                  : "needs a positive number, got '" + text + "'";
      },
      "X");
}

/// Accepts a number of the option's type for which `ok(value)` holds; else
/// says what the value must be (`requirement`, e.g. "must be 4..26").
template <class Number, class Predicate>
CLI::Validator number_where(Predicate ok, std::string requirement) {
  return CLI::Validator(
      [ok, requirement](std::string& text) {
        Number value{};
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size() || text.empty() ||
            (std::is_floating_point_v<Number> && !std::isfinite(static_cast<double>(value))))
          return "needs a number, got '" + text + "'";
        return ok(value) ? std::string() : requirement;
      },
      "X");
}

/// Accepts one of `list`.
inline CLI::Validator one_of(std::vector<std::string> list) {
  std::string names;
  for (const auto& c : list) names += (names.empty() ? "" : ", ") + c;
  return CLI::Validator(
      [list, names](std::string& text) {
        for (const auto& c : list)
          if (c == text) return std::string();
        return "'" + text + "' is not one of " + names;
      },
      "NAME");
}

/// Accepts one of `choices`.
inline CLI::Validator one_of(std::initializer_list<std::string_view> choices) {
  return one_of(std::vector<std::string>(choices.begin(), choices.end()));
}

/// Accepts a non-empty value (a file name).
inline CLI::Validator not_empty(std::string what = "a file name") {
  return CLI::Validator([what](std::string& text) { return text.empty() ? "needs " + what : std::string(); },
                        "FILE");
}

/// The examples' help layout: a usage line, the description, then the
/// options, each with its own description (as the hand-written help texts
/// had it).
class formatter : public CLI::Formatter {
 public:
  formatter() {
    column_width(25);
    label("OPTIONS", "options");
  }
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    std::string out = "usage: " + name + make_positional_names(app) + " [options]\n";
    out += app->get_description();
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += make_positionals(app);
    out += make_groups(app, mode);
    out += make_footer(app);
    return out;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    return opt->get_option_text().empty() ? std::string() : " " + opt->get_option_text();
  }
  std::string make_footer(const CLI::App* app) const override {
    const std::string f = app->get_footer();
    return f.empty() || f.back() == '\n' ? f : f + "\n";
  }

 private:
  static std::string make_positional_names(const CLI::App* app) {
    std::string out;
    for (const CLI::Option* o :
         app->get_options([](const CLI::Option* opt) { return opt->get_positional(); }))
      out += " " + o->get_name(true);
    return out;
  }
};

/// A CLI11 app in the examples' style: help layout, repeated options keep
/// their last value (a vector option collects them all), and arguments that
/// name no option are reported by parse() as "unknown argument".
inline std::unique_ptr<CLI::App> app(std::string name, std::string description, std::string footer = {}) {
  auto a = std::make_unique<CLI::App>(std::move(description), std::move(name));
  a->formatter(std::make_shared<formatter>());
  a->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->group("options");
  a->set_help_flag("--help", "this text");
  a->allow_extras();
  if (!footer.empty()) a->footer(std::move(footer));
  return a;
}

/// Parses the command line. Returns false when --help printed the help
/// (main() then returns 0; `print_help` false: another process prints it);
/// throws usage_error for a bad command line, in the examples' words.
inline bool parse(CLI::App& app, int argc, const char* const* argv, bool print_help = true) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (print_help) std::fputs(app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11: "--epochs: 1 required N missing"; ours names the option alone.
    const std::string what = e.what();
    const auto colon = what.find(':');
    if (what.find(" missing") != std::string::npos && colon != std::string::npos)
      throw usage_error(what.substr(0, colon) + " needs a value");
    throw usage_error(what);
  } catch (const CLI::ParseError& e) {
    throw usage_error(e.what());
  }
  if (const auto extra = app.remaining(); !extra.empty())
    throw usage_error("unknown argument '" + extra[0] + "'");
  return true;
}

}  // namespace cli
