# The PJRT tests (docs/pjrt.md): the CPU plugin from .deps/pjrt (scripts/fetch-pjrt-plugin.sh),
# and fake plugins for the bad-input cases, one shared object per mode.
set(_pjrt_plugin ${CMAKE_SOURCE_DIR}/.deps/pjrt/xla_cpu_pjrt.so)
set(_pjrt_fallback ${CMAKE_SOURCE_DIR}/.deps/pjrt/lammps_cpu_pjrt.so)
target_compile_definitions(test_pjrt PRIVATE VIDAX_PJRT_TEST_PLUGIN="${_pjrt_plugin}"
                           VIDAX_PJRT_TEST_FALLBACK="${_pjrt_fallback}")
if(VIDAX_HAVE_PJRT)
  foreach(mode_name IN ITEMS "0;not_a_plugin" "1;bad_version" "2;no_device" "3;zero_devices")
    list(GET mode_name 0 mode)
    list(GET mode_name 1 name)
    add_library(fake_pjrt_${name} MODULE ${CMAKE_CURRENT_LIST_DIR}/fake/fake_plugin.cpp)
    target_include_directories(fake_pjrt_${name} PRIVATE ${PJRT_C_API_INCLUDE_DIR})
    target_compile_definitions(fake_pjrt_${name} PRIVATE FAKE_MODE=${mode})
    set_target_properties(fake_pjrt_${name} PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/pjrt)
    add_dependencies(test_pjrt fake_pjrt_${name})
  endforeach()
  target_compile_definitions(test_pjrt PRIVATE VIDAX_PJRT_FAKE_DIR="${CMAKE_BINARY_DIR}/tests/pjrt")
endif()
# test_generate_pjrt runs the built CLI (bin/vidax) as a child process: build it first.
add_dependencies(test_pjrt vidax_app)
