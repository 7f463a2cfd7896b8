# A tiny SentencePiece model in the T5 layout (<pad>=0, </s>=1, <unk>=2, no
# <s>, nmt_nfkc normalization like umt5-xxl's spiece.model), trained at build
# time with Debian's `spm_train` on a small committed corpus. Used by the demo
# (random-weight runs need a tokenizer, not umt5-xxl's 4 MB model) and the same pieces as
# tests/text/data/tiny_spiece.model when made from tests/text/data/corpus.txt
# with the same spm_train (0.1.97), up to the recorded trainer paths.
#
#   vidax_tiny_spiece(TARGET <name> CORPUS <file.txt> OUTPUT <dir/spiece.model>)
find_program(VIDAX_SPM_TRAIN spm_train)

function(vidax_tiny_spiece)
  cmake_parse_arguments(T "" "TARGET;CORPUS;OUTPUT" "" ${ARGN})
  if(NOT VIDAX_SPM_TRAIN)
    message(STATUS "vidax: spm_train not found (Debian package `sentencepiece`), skipping ${T_TARGET}")
    return()
  endif()
  get_filename_component(out_dir ${T_OUTPUT} DIRECTORY)
  get_filename_component(out_name ${T_OUTPUT} NAME_WE)
  add_custom_command(
    OUTPUT ${T_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${VIDAX_SPM_TRAIN} --input=${T_CORPUS} --model_prefix=${out_dir}/${out_name}
            --vocab_size=400 --model_type=unigram --character_coverage=1.0
            --pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1
            --num_threads=1 --hard_vocab_limit=false --minloglevel=2
    DEPENDS ${T_CORPUS}
    COMMENT "Training tiny SentencePiece model ${T_OUTPUT}"
    VERBATIM)
  add_custom_target(${T_TARGET} ALL DEPENDS ${T_OUTPUT})
endfunction()
