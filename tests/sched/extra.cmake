# The sched tests read their golden files with io::Checkpoint.
target_link_libraries(test_sched PRIVATE vidax_io)
