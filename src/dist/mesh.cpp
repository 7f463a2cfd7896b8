#include "dist/mesh.h"

#include <sstream>

#include "core/error.h"

namespace vidax::dist {

std::string MeshShape::str() const {
  std::ostringstream o;
  o << "cfg=" << cfg << ",sp=" << sp << ",tp=" << tp;
  return o.str();
}

MeshShape parse_mesh(const std::string& spec) {
  MeshShape m;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    VIDAX_CHECK(eq != std::string::npos, "--mesh: '" << item << "' is not axis=size (e.g. cfg=2,sp=2,tp=2)");
    const std::string axis = item.substr(0, eq), val = item.substr(eq + 1);
    int n = 0;
    try {
      size_t used = 0;
      n = std::stoi(val, &used);
      VIDAX_CHECK(used == val.size(), "");
    } catch (...) {
      throw Error(msg() << "--mesh: size '" << val << "' of axis " << axis << " is not an integer");
    }
    VIDAX_CHECK(n >= 1, "--mesh: axis " << axis << " must be >= 1, got " << n);
    if (axis == "cfg") m.cfg = n;
    else if (axis == "sp") m.sp = n;
    else if (axis == "tp") m.tp = n;
    else throw Error(msg() << "--mesh: unknown axis '" << axis << "' (axes: cfg, sp, tp)");
  }
  VIDAX_CHECK(m.cfg <= 2, "--mesh: cfg must be 1 or 2 (two guidance branches), got " << m.cfg);
  return m;
}

Mesh::Mesh(Communicator& world, MeshShape shape) : world_(world), shape_(shape) {
  VIDAX_CHECK(shape.world() == world.size(), "--mesh " << shape.str() << " needs " << shape.world()
                                                        << " ranks, but the job has " << world.size());
  const int r = world.rank();
  tp_rank_ = r % shape.tp;
  sp_rank_ = (r / shape.tp) % shape.sp;
  cfg_rank_ = r / (shape.tp * shape.sp);
  // Each group: ranks that agree on the other two coordinates.
  tp_ = world.split(cfg_rank_ * shape.sp + sp_rank_, tp_rank_);
  sp_ = world.split(cfg_rank_ * shape.tp + tp_rank_, sp_rank_);
  cfg_ = world.split(sp_rank_ * shape.tp + tp_rank_, cfg_rank_);
}

}  // namespace vidax::dist
