# The layer table src/layers.txt holds (scripts/check_layers.sh on this tree), and the check
# fails, naming file:line and the rule, on each way of breaking it (a copy of src/ and apps/
# with one deliberate fault; tests/layers/check_layers_fails.sh). bash, grep and awk only.
add_test(NAME layers.check COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/check_layers.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(layers.check PROPERTIES LABELS layers TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "check_layers: OK")
foreach(fault upward_include unlisted_lower_include unknown_folder_include missing_folder unused_dep cycle)
  add_test(NAME layers.fails_on_${fault}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_layers_fails.sh ${PROJECT_SOURCE_DIR} ${fault})
  set_tests_properties(layers.fails_on_${fault} PROPERTIES LABELS layers TIMEOUT 60)
endforeach()

# The generic pipeline names no family (scripts/check_generic_pipeline.sh), and the check fails on
# a copy of src/ whose pipeline does.
add_test(NAME layers.generic_pipeline COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/check_generic_pipeline.sh
                                              ${PROJECT_SOURCE_DIR})
set_tests_properties(layers.generic_pipeline PROPERTIES LABELS layers TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "check_generic_pipeline: OK")
add_test(NAME layers.generic_pipeline_fails_on_a_family_name
         COMMAND bash -c "set -e; t=$(mktemp -d); mkdir -p $t/src; cp -r '${PROJECT_SOURCE_DIR}/src/pipeline' '${PROJECT_SOURCE_DIR}/src/models' $t/src/; echo 'inline int frames_rule() { return wan::kFrames; }  // oops' >> $t/src/pipeline/generate.h; out=$(bash '${PROJECT_SOURCE_DIR}/scripts/check_generic_pipeline.sh' $t 2>&1) && { echo \"passed: $out\"; exit 1; }; rm -rf $t; echo \"$out\"")
set_tests_properties(layers.generic_pipeline_fails_on_a_family_name PROPERTIES LABELS layers TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "src/pipeline/generate.h:[0-9]+: the generic pipeline names a family")

# No write into existing tensor memory in model code (scripts/check_no_view_writes.sh: copy_into,
# *_inplace, raw data pointers, from_buffer in src/models and src/nn), and the check fails on a copy
# of src/ whose Wan DiT writes a slice through copy_into.
add_test(NAME layers.no_view_writes COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/check_no_view_writes.sh
                                            ${PROJECT_SOURCE_DIR})
set_tests_properties(layers.no_view_writes PROPERTIES LABELS layers TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "check_no_view_writes: OK")
add_test(NAME layers.no_view_writes_fails_on_a_slice_write
         COMMAND bash -c "set -e; t=$(mktemp -d); mkdir -p $t/src; cp -r '${PROJECT_SOURCE_DIR}/src/models' '${PROJECT_SOURCE_DIR}/src/nn' $t/src/; echo 'inline void rotate_half(const vidax::Tensor& r, vidax::Tensor& q) { vidax::Tensor s = q.slice(-1, 0, 8); copy_into(r, s); }' >> $t/src/models/wan/rope.h; out=$(bash '${PROJECT_SOURCE_DIR}/scripts/check_no_view_writes.sh' $t 2>&1) && { echo \"passed: $out\"; exit 1; }; rm -rf $t; echo \"$out\"")
set_tests_properties(layers.no_view_writes_fails_on_a_slice_write PROPERTIES LABELS layers TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "src/models/wan/rope.h:[0-9]+: a write into existing tensor memory")
