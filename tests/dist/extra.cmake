# The same test binary under mpirun (oversubscribed: CI has 2 cores; root needs the flag).
if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
  foreach(np 2 4)
    add_test(NAME dist.mpirun_np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np ${np}
                     $<TARGET_FILE:test_dist> --gtest_filter=MpiRanks.*)
    set_tests_properties(dist.mpirun_np${np} PROPERTIES LABELS "dist;mpi" TIMEOUT 120
                         ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl=self,vader;OMPI_MCA_btl_vader_single_copy_mechanism=none")
  endforeach()
endif()
