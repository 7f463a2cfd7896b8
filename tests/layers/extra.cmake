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
