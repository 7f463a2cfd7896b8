# The CLI test runs bin/vidax.
add_dependencies(test_parity vidax_app)
# test_parity checks every committed golden file, so it needs every kind: the parity core
# (vidax_parity, below every family) knows none; the top layer registers them.
target_link_libraries(test_parity PRIVATE vidax_engine)
# The golden checks at every CPU tier the host has (tests/CMakeLists.txt, docs/cpu.md).
vidax_add_tier_tests(parity)
