# `vidax bench --mesh` under mpirun prints each rank's share of the DiT weights.
if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
  add_test(NAME bench.mpirun_np2.mesh_tp2_weight_bytes
           COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np 2
                   $<TARGET_FILE:vidax_app> bench --model wan2.1-tiny-demo --random-weights --frames 5 --height 64
                   --width 64 --mesh tp=2 --json)
  set_tests_properties(bench.mpirun_np2.mesh_tp2_weight_bytes PROPERTIES LABELS "bench;mpi" TIMEOUT 300
                       PASS_REGULAR_EXPRESSION "DiT weights on this rank: 0\\.000397 GB of 0\\.000597 GB as drawn \\(fp32\\), about 0\\.000199 GB in BF16 \\(mesh cfg=1,sp=1,tp=2\\)"
                       ENVIRONMENT "OMP_NUM_THREADS=1;OMPI_MCA_btl=self,vader;OMPI_MCA_btl_vader_single_copy_mechanism=none")
endif()
add_test(NAME bench.mesh_without_enough_ranks
         COMMAND $<TARGET_FILE:vidax_app> bench --model wan2.1-tiny-demo --random-weights --frames 5 --height 64
                 --width 64 --mesh tp=2)
set_tests_properties(bench.mesh_without_enough_ranks PROPERTIES LABELS bench TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "needs 2 ranks, but the job has 1")
