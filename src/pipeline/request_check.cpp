#include "pipeline/request_check.h"

namespace vidax::pipeline {

CheckedRequest check_request(const Family& family, const std::string& variant, const Request& request,
                             const std::string& precision, const std::function<void(const std::string&)>& warn) {
  CheckedRequest c;
  c.geometry = family.geometry(variant);
  validate_request(c.geometry, request);
  c.memory = family.memory_plan(variant, request, precision);
  check_memory(c.memory, static_cast<double>(mem_available_bytes()), static_cast<double>(mem_total_bytes()), warn);
  return c;
}

}  // namespace vidax::pipeline
