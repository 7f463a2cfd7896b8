// The one request check before any work (DESIGN.md principles 7 and 9): every
// family's request goes through it after its defaults are filled in and before
// any weight is read or any buffer allocated. It checks the size rules of the
// family's geometry, the sampler, guidance and step options, the noise tensor's
// shape (validate_request), and the memory the request will need (the family's
// MemoryPlan against this machine: refused above its total memory, a warning
// above what is free now). The CLI and the server call it; the [bad-input]
// checks join here.
#pragma once
#include <functional>
#include <string>

#include "pipeline/family.h"

namespace vidax::pipeline {

struct CheckedRequest {
  Geometry geometry;  // the variant's, for latent_shape() and the noise file
  MemoryPlan memory;
};

CheckedRequest check_request(const Family& family, const std::string& variant, const Request& request,
                             const std::string& precision, const std::function<void(const std::string&)>& warn);

}  // namespace vidax::pipeline
