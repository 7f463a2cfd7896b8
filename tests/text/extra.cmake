# Included by tests/CMakeLists.txt for the text area.
# build/demo/spiece.model: the demo's tokenizer (see cmake/TinySentencePiece.cmake).
include(${PROJECT_SOURCE_DIR}/cmake/TinySentencePiece.cmake)
vidax_tiny_spiece(TARGET vidax_demo_spiece CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/text/data/corpus.txt
                  OUTPUT ${CMAKE_BINARY_DIR}/demo/spiece.model)
