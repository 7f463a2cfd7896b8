# test_cli_serve.cpp runs the built CLI (bin/vidax serve) as a child process.
add_dependencies(test_serve vidax_app)
# test_web_page.cpp keeps its browser screenshots here (CI uploads them as artefacts).
target_compile_definitions(test_serve PRIVATE VIDAX_TEST_ARTEFACTS_DIR="${CMAKE_BINARY_DIR}/test-artefacts")
