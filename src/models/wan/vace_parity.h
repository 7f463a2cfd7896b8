// Registers parity kind wan.vace.conditioning (models/wan/vace_parity.cpp); called by the Wan
// family's register_parity_kinds.
#pragma once

namespace vidax::wan {

void register_vace_parity_kinds();

}  // namespace vidax::wan
