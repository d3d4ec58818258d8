# SPDX-License-Identifier: MIT
#
# What `cmake --install` puts where, beyond the binary (daemon/'s
# install(TARGETS)): the systemd unit and the sysusers.d entry, the example
# configuration (CONFDIR/nfscached.conf, only when none is there), the
# manual pages, the Prometheus rules and the Grafana dashboard, the docs.
# The unit and the pages name installed paths, which depend on the prefix
# in force at install time: cmake/install_fill.cmake.in fills them in then.
include(GNUInstallDirs)
set(NFSCACHED_UNITDIR "lib/systemd/system" CACHE STRING
  "Where nfscached.service goes, relative to the prefix or absolute")
set(NFSCACHED_SYSUSERSDIR "lib/sysusers.d" CACHE STRING
  "Where the sysusers.d entry goes, relative to the prefix or absolute")
set(NFSCACHED_FILLED_DIR ${PROJECT_BINARY_DIR}/installed)
file(MAKE_DIRECTORY ${NFSCACHED_FILLED_DIR})
configure_file(${CMAKE_CURRENT_LIST_DIR}/install_fill.cmake.in
  ${PROJECT_BINARY_DIR}/install_fill.cmake @ONLY)

install(SCRIPT ${PROJECT_BINARY_DIR}/install_fill.cmake)
install(FILES ${NFSCACHED_FILLED_DIR}/nfscached.service
  DESTINATION ${NFSCACHED_UNITDIR})
install(FILES ${PROJECT_SOURCE_DIR}/systemd/nfscached.sysusers
  DESTINATION ${NFSCACHED_SYSUSERSDIR} RENAME nfscached.conf)
install(FILES ${NFSCACHED_FILLED_DIR}/nfscached.8
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${NFSCACHED_FILLED_DIR}/nfscached.conf.5
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES ${PROJECT_SOURCE_DIR}/docs/prometheus/nfscached.rules.yml
  ${PROJECT_SOURCE_DIR}/docs/grafana/nfscached.json
  DESTINATION ${CMAKE_INSTALL_DATADIR}/nfscached)
# The docs: the pages and their images, no empty folders.
file(GLOB _nfsc_docs ${PROJECT_SOURCE_DIR}/docs/*.md
  ${PROJECT_SOURCE_DIR}/docs/*.png)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${_nfsc_docs}
  ${PROJECT_SOURCE_DIR}/systemd/nfscached.conf.example
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
