# test_cli_serve.cpp runs the built CLI (bin/vidax serve) as a child process.
add_dependencies(test_serve vidax_app)
# `vidax serve --mesh` under mpirun (tests/serve/mpi): the test spawns `mpirun -np 2 vidax serve`
# with tests/parallel's Open MPI settings and is its HTTP client.
if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
  add_executable(test_serve_mpi ${CMAKE_CURRENT_SOURCE_DIR}/serve/mpi/test_mpi_serve.cpp)
  target_link_libraries(test_serve_mpi PRIVATE vidax_serve GTest::gtest GTest::gtest_main)
  target_include_directories(test_serve_mpi PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/serve)
  target_compile_definitions(test_serve_mpi PRIVATE VIDAX_TEST_DATA_DIR="${VIDAX_TEST_DATA_DIR}"
                             VIDAX_BINARY_DIR="${CMAKE_BINARY_DIR}" VIDAX_MPIEXEC="${MPIEXEC_EXECUTABLE}")
  add_dependencies(test_serve_mpi vidax_app)
  # One entry (about 17 s): the seven tests each start their own `mpirun -np 2`.
  add_test(NAME serve.mpirun_np2 COMMAND test_serve_mpi)
  set_tests_properties(serve.mpirun_np2 PROPERTIES LABELS "serve;mpi" TIMEOUT 400)
endif()
