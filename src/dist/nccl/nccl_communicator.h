// NCCL implementation of Communicator for device (CUDA) buffers. The NCCL
// unique id is made on rank 0 and broadcast over the host communicator (MPI),
// so one binary works under mpirun on any number of GPUs and hosts.
#pragma once
#include <memory>

#include "dist/communicator.h"

namespace vidax::dist {

// `host`: the job's host communicator (world()). `device`: the CUDA device this
// rank drives (usually local rank % device count). Collectives run on the
// communicator's stream and are synchronous with respect to the host.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, int device);

}  // namespace vidax::dist
