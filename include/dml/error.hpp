// SPDX-License-Identifier: BSL-1.0
/// @file
/// The exception types dml throws. Every error names its cause in what().
#pragma once

#include <dml/version.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

DML_BEGIN_NAMESPACE

/// Base of every exception dml throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bad size, policy, graph or option: the program asked for something that
/// cannot work. Thrown on every member when members disagree.
class config_error : public error {
 public:
  using error::error;
};

/// Malformed or mismatched input data: file, line (0 when not line based)
/// and reason are kept separately and joined in what().
class data_error : public error {
 public:
  DML_DECL data_error(std::string file, std::size_t line, std::string reason);

  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] std::size_t line() const noexcept { return line_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  DML_DECL static std::string format(const std::string& file, std::size_t line, const std::string& reason);
  std::string file_;
  std::size_t line_;
  std::string reason_;
};

/// A transport operation failed for a reason other than a dead peer.
class comm_error : public error {
 public:
  using error::error;
};

/// A peer stopped answering or its writes failed. rank() names the member.
class peer_failure : public comm_error {
 public:
  peer_failure(std::size_t rank, const std::string& what) : comm_error(what), rank_(rank) {}
  [[nodiscard]] std::size_t rank() const noexcept { return rank_; }

 private:
  std::size_t rank_;
};

/// A wait exceeded its configured limit.
class timeout : public error {
 public:
  using error::error;
};

DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/impl/error.ipp>
#endif
