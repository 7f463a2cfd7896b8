# The mesh tests under mpirun (oversubscribed: CI has 2 cores; root needs the flag), one ctest
# entry per mesh so that each stays short. The same binary also runs single-process (the Mpi*
# tests then skip).
if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
  set(_vidax_parallel_runs
      "2|MpiRanks.*"
      "2|MpiNp2.Sp2*"
      "2|MpiNp2.Tp2*"
      "2|MpiNp2.Cfg2*"
      "4|MpiRanks.*"
      "4|MpiNp4.Sp2Tp2*"
      "4|MpiNp4.Cfg2Sp2*"
      "4|MpiNp4.Tp4*:MpiNp4.Sp4*"
      "4|MpiNp4.Cfg2Tp2*")
  foreach(run ${_vidax_parallel_runs})
    string(REPLACE "|" ";" parts "${run}")
    list(GET parts 0 np)
    list(GET parts 1 filter)
    string(REGEX REPLACE "[^A-Za-z0-9]+" "_" tag "${filter}")
    add_test(NAME parallel.mpirun_np${np}.${tag}
             COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np ${np}
                     $<TARGET_FILE:test_parallel> --gtest_filter=${filter})
    set_tests_properties(parallel.mpirun_np${np}.${tag} PROPERTIES LABELS "parallel;mpi" TIMEOUT 180
                         ENVIRONMENT "OMP_NUM_THREADS=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl=self,vader;OMPI_MCA_btl_vader_single_copy_mechanism=none")
  endforeach()
endif()
