# test_attention_golden.cpp reads tests/backend/data/attention_nan.safetensors through io::Checkpoint.
target_link_libraries(test_backend PRIVATE vidax_io)
