#include "pipeline/residency.h"

namespace vidax::pipeline {

const char* residency_name(Residency r) { return r == Residency::Resident ? "resident" : "free-after-use"; }

}  // namespace vidax::pipeline
