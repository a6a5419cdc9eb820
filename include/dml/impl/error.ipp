// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/error.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/error.hpp>

#include <cstddef>
#include <string>
#include <utility>

DML_BEGIN_NAMESPACE

DML_DECL data_error::data_error(std::string file, std::size_t line, std::string reason)
    : error(format(file, line, reason)), file_(std::move(file)), line_(line), reason_(std::move(reason)) {}

DML_DECL std::string data_error::format(const std::string& file, std::size_t line,
                                        const std::string& reason) {
  // Appends rather than operator+ chains: GCC 12 warns falsely (-Wrestrict) on those.
  std::string s;
  s.append(file);
  if (line != 0) {
    s.push_back(':');
    s.append(std::to_string(line));
  }
  s.append(": ");
  s.append(reason);
  return s;
}

DML_END_NAMESPACE
