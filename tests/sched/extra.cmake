# The sched tests read their golden files with io::Checkpoint and compare with
# the parity contract's own measure (parity::compare).
target_link_libraries(test_sched PRIVATE vidax_io vidax_parity)
