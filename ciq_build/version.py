"""The package's version, in one place: the package, the pinned records, the command line and the CMake
package's version file (cmake/ciq_build-config-version.cmake) all read it here."""

__version__ = "0.1.0"
