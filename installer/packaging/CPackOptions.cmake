# Read by cpack for each generator (CPACK_PROJECT_CONFIG_FILE). The tarballs
# unpack into a folder, as people expect of a .tar.gz (a .deb has none; for
# component archives CPack leaves the folder out unless asked). Both tarballs
# use the same folder, kvstudio-VERSION-linux-x86_64, so that unpacking the
# CUDA part beside the main one adds it to that installation.
if(CPACK_GENERATOR STREQUAL "TGZ")
  set(CPACK_COMPONENT_INCLUDE_TOPLEVEL_DIRECTORY ON)
  set(CPACK_PACKAGE_FILE_NAME "kvstudio-${CPACK_PACKAGE_VERSION}-linux-x86_64")
endif()
