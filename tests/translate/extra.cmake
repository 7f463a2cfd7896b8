# The Wan and UMT5 key maps live with their family (src/models/wan/, src/text/); the translator's
# detection and inspect tests read them, and the engine registers them (engine/builtin_kinds.h).
target_link_libraries(test_translate PRIVATE vidax)
