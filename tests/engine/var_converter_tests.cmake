# Official-format VAR checkpoints for the converter tests, written by torch.save
# from the conformance weights (needs the venv's torch).
add_test(NAME make_var_checkpoints
  COMMAND ${KVSTUDIO_VENV_PYTHON} ${PROJECT_SOURCE_DIR}/tests/data/make_var_checkpoints.py
          ${KVSTUDIO_CONFORMANCE_DIR}/var_c2i_tiny.weights.safetensors ${CMAKE_BINARY_DIR}/var-ckpt)
set_tests_properties(make_var_checkpoints PROPERTIES FIXTURES_SETUP var_ckpt)
set_property(TEST ${KVS_ENGINE_TEST_NAMES} APPEND PROPERTY FIXTURES_REQUIRED var_ckpt)
set_property(TEST ${KVS_ENGINE_TEST_NAMES} APPEND PROPERTY ENVIRONMENT KVSTUDIO_VAR_CKPT_DIR=${CMAKE_BINARY_DIR}/var-ckpt)
