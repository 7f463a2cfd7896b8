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
  # The CLI: `vidax parity --mesh` prints once (rank 0) and passes; a mesh that does not fit the
  # job stops every rank with the message (Communicator::abort).
  set(_vidax_mpi_env "OMP_NUM_THREADS=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl=self,vader;OMPI_MCA_btl_vader_single_copy_mechanism=none")
  add_test(NAME parallel.mpirun_np4.cli_parity_sp2_tp2
           COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np 4 $<TARGET_FILE:vidax_app>
                   parity ${CMAKE_CURRENT_SOURCE_DIR}/golden/wan_dit_heads4_odd_b2.safetensors --mesh sp=2,tp=2)
  set_tests_properties(parallel.mpirun_np4.cli_parity_sp2_tp2 PROPERTIES LABELS "parallel;mpi" TIMEOUT 120
                       ENVIRONMENT "${_vidax_mpi_env}" PASS_REGULAR_EXPRESSION "PASS 7/7"
                       FAIL_REGULAR_EXPRESSION "FAIL|PASS 7/7.*PASS 7/7")
  # A whole pipeline golden on a mesh (kind wan.pipeline.vace: the official WanVace.generate), as
  # `vidax generate --mesh` runs it.
  foreach(mesh tp=2 sp=2 cfg=2)
    string(REPLACE "=" "" tag "${mesh}")
    add_test(NAME parallel.mpirun_np2.cli_parity_vace_pipeline_${tag}
             COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np 2 $<TARGET_FILE:vidax_app>
                     parity ${CMAKE_CURRENT_SOURCE_DIR}/golden/pipeline/wan_vace_tiny.safetensors --mesh ${mesh})
    set_tests_properties(parallel.mpirun_np2.cli_parity_vace_pipeline_${tag} PROPERTIES LABELS "parallel;mpi" TIMEOUT 120
                         ENVIRONMENT "${_vidax_mpi_env}" PASS_REGULAR_EXPRESSION "PASS 5/5"
                         FAIL_REGULAR_EXPRESSION "FAIL|PASS 5/5.*PASS 5/5")
  endforeach()
  add_test(NAME parallel.mpirun_np2.cli_mesh_error
           COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np 2 $<TARGET_FILE:vidax_app>
                   parity ${CMAKE_CURRENT_SOURCE_DIR}/golden/wan_dit_heads4_odd_b2.safetensors --mesh sp=3)
  set_tests_properties(parallel.mpirun_np2.cli_mesh_error PROPERTIES LABELS "parallel;mpi" TIMEOUT 120
                       ENVIRONMENT "${_vidax_mpi_env}"
                       PASS_REGULAR_EXPRESSION "error on rank [01]: --mesh cfg=1,sp=3,tp=1 needs 3 ranks, but the job has 2")
endif()
