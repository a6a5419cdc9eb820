// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/consistency/any.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/consistency/any.hpp>

#include <string>

DML_BEGIN_NAMESPACE
namespace consistency {

DML_DECL std::string any::name() const {
  switch (kind_) {
    case kind::asp:
      return std::string(consistency::asp::name());
    case kind::ssp:
      return "ssp<" + std::to_string(slack_) + ">";
    case kind::notify_ack:
      return std::string(consistency::notify_ack::name());
    case kind::adaptive:
      return adaptive_->name();
    case kind::ssp_bounded:
      return detail::ssp_bounded_name(slack_, stall_);
    case kind::asp_fresh:
      return detail::asp_fresh_name(slack_);
    case kind::bsp:
      break;
  }
  return std::string(consistency::bsp::name());
}

}  // namespace consistency
DML_END_NAMESPACE
