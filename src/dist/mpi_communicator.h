// Open MPI implementation of Communicator, for host tensors (the CPU backend).
#pragma once
#include <memory>

#include "dist/communicator.h"

namespace vidax::dist {

#ifdef VIDAX_HAVE_MPI
// Initializes MPI (thread level SERIALIZED: one thread at a time calls it) and wraps MPI_COMM_WORLD; MPI is
// finalized at exit.
std::unique_ptr<Communicator> make_mpi_world();
#endif

}  // namespace vidax::dist
