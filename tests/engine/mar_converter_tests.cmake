# Official-format MAR checkpoints (checkpoint-last.pth with model_ema, kl16.ckpt)
# for the converter tests, written by torch.save from the conformance weights
# (needs the venv's torch).
add_test(NAME make_mar_checkpoints
  COMMAND ${KVSTUDIO_VENV_PYTHON} ${PROJECT_SOURCE_DIR}/tests/data/make_mar_checkpoints.py
          ${KVSTUDIO_CONFORMANCE_DIR}/mar_tiny.weights.safetensors ${CMAKE_BINARY_DIR}/mar-ckpt)
set_tests_properties(make_mar_checkpoints PROPERTIES FIXTURES_SETUP mar_ckpt)
set_property(TEST ${KVS_ENGINE_TEST_NAMES} APPEND PROPERTY FIXTURES_REQUIRED mar_ckpt)
set_property(TEST ${KVS_ENGINE_TEST_NAMES} APPEND PROPERTY ENVIRONMENT KVSTUDIO_MAR_CKPT_DIR=${CMAKE_BINARY_DIR}/mar-ckpt)
