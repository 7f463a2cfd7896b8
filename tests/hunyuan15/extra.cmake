# The HunyuanVideo 1.5 golden tests at every CPU tier the host has (tests/CMakeLists.txt, docs/cpu.md).
vidax_add_tier_tests(hunyuan15)
