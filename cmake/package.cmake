# SPDX-License-Identifier: MIT
#
# The Debian package, built by CPack from what `cmake --install` installs
# with the prefix /usr (so the configuration is /etc/nfscached/nfscached.conf
# and the unit /usr/lib/systemd/system/nfscached.service):
#
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
#   cmake --build build && cpack --config build/CPackConfig.cmake -B build/pkg
#
# gives build/pkg/nfscached_VERSION-1_ARCH.deb. Its dependencies are what
# dpkg-shlibdeps (dpkg-dev) finds the binary linked with. The maintainer
# scripts (packaging/deb/) create the nfscached user from the sysusers.d
# entry and enable or start nothing; the configuration is a conffile.
set(NFSCACHED_PACKAGE_MAINTAINER "nfscached maintainers <nfscached@example.org>"
  CACHE STRING "Maintainer field of the Debian package")
set(NFSCACHED_PACKAGE_RELEASE "1" CACHE STRING
  "Debian revision of the package (VERSION-RELEASE)")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nfscached)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "caching NFSv3 proxy")
set(CPACK_PACKAGE_DESCRIPTION
  "nfscached is a caching NFSv3 proxy that runs in user space. NFS clients
mount it as if it were the file server; it serves what it has in its cache
(memory, and optionally a disk tier) and asks the real NFSv3 server only for
what it lacks. The package installs the daemon, its systemd unit (not
enabled), the nfscached system user, an example configuration, manual pages,
Prometheus alert rules and a Grafana dashboard.")
set(CPACK_PACKAGE_CONTACT "${NFSCACHED_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
# Install with DESTDIR and the prefix /usr (not into a prefix inside the
# staging directory), so the paths filled into the unit are the real ones.
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${NFSCACHED_PACKAGE_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${NFSCACHED_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# rpcbind only when register_rpcbind is used with clients that ask it.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "rpcbind, prometheus")

if(IS_ABSOLUTE "${NFSCACHED_SYSUSERSDIR}")
  set(NFSCACHED_PKG_SYSUSERS "${NFSCACHED_SYSUSERSDIR}/nfscached.conf")
else()
  set(NFSCACHED_PKG_SYSUSERS "/usr/${NFSCACHED_SYSUSERSDIR}/nfscached.conf")
endif()
set(_deb ${PROJECT_BINARY_DIR}/packaging/deb)
foreach(f postinst prerm postrm)
  configure_file(${PROJECT_SOURCE_DIR}/packaging/deb/${f}.in ${_deb}/${f}
    @ONLY FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
    GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/packaging/deb/conffiles.in
  ${_deb}/conffiles @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${_deb}/postinst ${_deb}/prerm ${_deb}/postrm ${_deb}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
