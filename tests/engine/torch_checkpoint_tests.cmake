# Real torch.save checkpoints for tests/engine/test_torch_checkpoint.cpp, written by the
# project venv's PyTorch before the engine tests run (a ctest fixture), so that the
# reader is checked against what PyTorch actually writes rather than hand-made files.
# Included from tests/CMakeLists.txt after the `engine_tests_*` shards and
# KVSTUDIO_VENV_PYTHON are defined.
add_test(NAME make_torch_checkpoints
  COMMAND ${KVSTUDIO_VENV_PYTHON} ${PROJECT_SOURCE_DIR}/tests/data/make_torch_checkpoints.py
          ${CMAKE_BINARY_DIR}/torch-ckpt)
set_tests_properties(make_torch_checkpoints PROPERTIES FIXTURES_SETUP torch_ckpt TIMEOUT 300)
set_property(TEST ${KVS_ENGINE_TEST_NAMES} APPEND PROPERTY FIXTURES_REQUIRED torch_ckpt)
set_property(TEST ${KVS_ENGINE_TEST_NAMES} APPEND PROPERTY ENVIRONMENT KVSTUDIO_TORCH_CKPT_DIR=${CMAKE_BINARY_DIR}/torch-ckpt)
