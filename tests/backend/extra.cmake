# test_attention_golden.cpp reads tests/backend/data/attention_nan.safetensors through io::Checkpoint.
target_link_libraries(test_backend PRIVATE vidax_io)
# The kernel tests at every CPU tier the host has (tests/CMakeLists.txt, docs/cpu.md).
vidax_add_tier_tests(backend)
# No AVX-512/AMX code where baseline code may run it (scripts/check_isa.sh, docs/cpu.md).
add_test(NAME isa.check COMMAND ${CMAKE_SOURCE_DIR}/scripts/check_isa.sh ${CMAKE_BINARY_DIR} $<TARGET_FILE:vidax_app>
                                $<TARGET_FILE:test_backend>)
set_tests_properties(isa.check PROPERTIES LABELS "backend;isa")
