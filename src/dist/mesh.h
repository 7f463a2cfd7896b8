// Device mesh: world = cfg x sp x tp, tp innermost (fastest-varying rank), then
// sp, then cfg (xDiT's order): tp = r % TP; sp = (r / TP) % SP; cfg = r / (TP*SP).
#pragma once
#include <memory>
#include <string>

#include "dist/communicator.h"

namespace vidax::dist {

struct MeshShape {
  int cfg = 1, sp = 1, tp = 1;
  int world() const { return cfg * sp * tp; }
  std::string str() const;  // "cfg=1,sp=2,tp=2"
};

// Parses "cfg=2,sp=2,tp=2" (any order, any subset; missing axes are 1; "" = all 1).
MeshShape parse_mesh(const std::string& spec);

class Mesh {
 public:
  // Builds the groups over `world`; throws when shape.world() != world.size().
  Mesh(Communicator& world, MeshShape shape);
  const MeshShape& shape() const { return shape_; }
  int rank() const { return world_.rank(); }
  int cfg_rank() const { return cfg_rank_; }
  int sp_rank() const { return sp_rank_; }
  int tp_rank() const { return tp_rank_; }
  Communicator& world() const { return world_; }
  Communicator& cfg() const { return *cfg_; }  // ranks with equal (sp, tp)
  Communicator& sp() const { return *sp_; }    // ranks with equal (cfg, tp)
  Communicator& tp() const { return *tp_; }    // ranks with equal (cfg, sp)

 private:
  Communicator& world_;
  MeshShape shape_;
  int cfg_rank_, sp_rank_, tp_rank_;
  std::unique_ptr<Communicator> cfg_, sp_, tp_;
};

}  // namespace vidax::dist
