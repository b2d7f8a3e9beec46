# Official-format LlamaGen checkpoints for the converter tests, written by
# torch.save from the conformance weights (needs the venv's torch).
add_test(NAME make_llamagen_checkpoints
  COMMAND ${KVSTUDIO_VENV_PYTHON} ${PROJECT_SOURCE_DIR}/tests/data/make_llamagen_checkpoints.py
          ${KVSTUDIO_CONFORMANCE_DIR}/llamagen_c2i_tiny.weights.safetensors ${CMAKE_BINARY_DIR}/llamagen-ckpt)
set_tests_properties(make_llamagen_checkpoints PROPERTIES FIXTURES_SETUP llamagen_ckpt)
set_property(TEST ${KVS_ENGINE_TEST_NAMES} APPEND PROPERTY FIXTURES_REQUIRED llamagen_ckpt)
set_property(TEST ${KVS_ENGINE_TEST_NAMES} APPEND PROPERTY ENVIRONMENT KVSTUDIO_LLAMAGEN_CKPT_DIR=${CMAKE_BINARY_DIR}/llamagen-ckpt)
