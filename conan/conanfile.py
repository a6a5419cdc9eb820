# SPDX-License-Identifier: BSL-1.0
# Conan 2 recipe for dml, a header-only C++20 library. From the repository
# root:
#     conan create conan/ --build=missing [-o "dml/*:with_mpi=True" ...]
# The package holds the headers only; its id does not depend on settings
# or options. Each option adds one component and only its requirements.
# MPI and rdma-core are taken from the operating system, not from a Conan
# remote: launchers, kernel drivers and NIC provider libraries have to match
# the machine, so system_requirements() asks the system package manager for
# them and package_info() reads their flags with pkg-config.
import os
import re

from conan import ConanFile
from conan.errors import ConanException, ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir
from conan.tools.gnu import PkgConfig
from conan.tools.system import package_manager

required_conan_version = ">=2.0"

# Component -> the CMake package the project's CMakeLists.txt looks up for it.
_FIND_PACKAGE = {"data": "ZLIB", "xtensor": "xtensor", "mpi": "MPI", "verbs": "ibverbs"}


class DmlConan(ConanFile):
    name = "dml"
    description = "Header-only C++20 distributed machine-learning primitives: typed distributed vectors " \
                  "with pluggable transports, topologies, consistency policies and gather functors"
    license = "BSL-1.0"
    topics = ("machine-learning", "distributed", "mpi", "rdma", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "with_mpi": [True, False],      # dml::mpi: mpi_rma and mpi transports (Boost.MPI + system MPI)
        "with_verbs": [True, False],    # dml::verbs: rdma-core transport (system libibverbs; needs with_mpi)
        "with_data": [True, False],     # dml::data: LIBSVM and IDX loaders (zlib)
        "with_xtensor": [True, False],  # dml::xtensor: xtensor views of vectors
    }
    default_options = {"with_mpi": False, "with_verbs": False, "with_data": True, "with_xtensor": False}
    no_copy_source = True

    def set_version(self):
        # One version, kept in the project() call of the top CMakeLists.txt.
        text = load(self, os.path.join(self.recipe_folder, "..", "CMakeLists.txt"))
        found = re.search(r"project\(\s*dml\s+VERSION\s+([0-9.]+)", text)
        if not found:
            raise ConanException("dml: no 'project(dml VERSION x.y.z)' in CMakeLists.txt")
        self.version = self.version or found.group(1)

    def export_sources(self):
        # The recipe lives in conan/; the sources are the repository around it.
        # Tests, examples and benchmarks are left out: the package build turns
        # them off.
        root = os.path.join(self.recipe_folder, "..")
        for pattern in ("CMakeLists.txt", "LICENSE", "cmake/*", "include/*"):
            copy(self, pattern, src=root, dst=self.export_sources_folder)

    def configure(self):
        if self.options.with_mpi:
            # Boost.MPI is compiled; ConanCenter's boost leaves it out by default.
            self.options["boost"].without_mpi = False

    def layout(self):
        cmake_layout(self, src_folder=".")

    def requirements(self):
        # transitive_headers: dml's headers include theirs.
        self.requires("eigen/[>=3.3 <4]", transitive_headers=True)
        if self.options.with_mpi:  # Boost.MPI; MPI itself comes from the system
            self.requires("boost/[>=1.74 <2]", transitive_headers=True)
        if self.options.with_data:
            self.requires("zlib/[>=1.2.11 <2]", transitive_headers=True)
        if self.options.with_xtensor:
            self.requires("xtensor/[>=0.24 <0.26]", transitive_headers=True)

    def package_id(self):
        self.info.clear()

    def validate(self):
        check_min_cppstd(self, 20)
        if self.options.with_verbs and self.settings.os != "Linux":
            raise ConanInvalidConfiguration("dml:with_verbs needs rdma-core, which exists on Linux only")
        if self.options.with_verbs and not self.options.with_mpi:
            raise ConanInvalidConfiguration("dml:with_verbs needs dml:with_mpi=True: the verbs transport "
                                            "exchanges its queue-pair records over the MPI bootstrap")

    def system_requirements(self):
        # Conan's default package-manager mode is "check": missing packages are
        # reported with their names; set tools.system.package_manager:mode=install
        # (and :sudo=True) to let Conan install them.
        if self.options.with_mpi:
            package_manager.Apt(self).install_substitutes(["libopenmpi-dev", "openmpi-bin"],
                                                          ["libmpich-dev", "mpich"])
            package_manager.Dnf(self).install_substitutes(["openmpi-devel"], ["mpich-devel"])
            package_manager.Yum(self).install_substitutes(["openmpi-devel"], ["mpich-devel"])
            package_manager.PacMan(self).install_substitutes(["openmpi"], ["mpich"])
            package_manager.Zypper(self).install_substitutes(["openmpi4-devel"], ["mpich-devel"])
            package_manager.Brew(self).install_substitutes(["open-mpi"], ["mpich"])
        if self.options.with_verbs:
            package_manager.Apt(self).install(["libibverbs-dev"])
            package_manager.Dnf(self).install(["rdma-core-devel"])
            package_manager.Yum(self).install(["rdma-core-devel"])
            package_manager.PacMan(self).install(["rdma-core"])
            package_manager.Zypper(self).install(["rdma-core-devel"])

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["DML_BUILD_TESTS"] = False
        tc.cache_variables["DML_BUILD_EXAMPLES"] = False
        tc.cache_variables["DML_BUILD_BENCH"] = False
        tc.cache_variables["DML_WITH_MPI"] = bool(self.options.with_mpi)
        tc.cache_variables["DML_WITH_VERBS"] = bool(self.options.with_verbs)
        # An enabled component must be found (the project would otherwise just
        # leave it out); a disabled one must not be picked up from the system.
        enabled = {"data": self.options.with_data, "xtensor": self.options.with_xtensor,
                   "mpi": self.options.with_mpi, "verbs": self.options.with_verbs}
        for component, package in _FIND_PACKAGE.items():
            if enabled[component]:
                tc.cache_variables[f"CMAKE_REQUIRE_FIND_PACKAGE_{package}"] = True
            elif component in ("data", "xtensor"):
                tc.cache_variables[f"CMAKE_DISABLE_FIND_PACKAGE_{package}"] = True
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        # Header-only: configuring is the whole build (it checks that every
        # enabled component's dependencies are found); nothing is compiled.
        CMake(self).configure()

    def package(self):
        copy(self, "LICENSE", src=self.source_folder, dst=os.path.join(self.package_folder, "licenses"))
        CMake(self).install()
        # CMakeDeps and PkgConfigDeps write consumers' files from package_info();
        # the project's own CMake package and dml.pc would name the build
        # machine's dependencies instead of the Conan ones.
        rmdir(self, os.path.join(self.package_folder, "share"))

    def _system_flags(self, component, pc_names, what):
        """Fills a component from the first of pc_names that pkg-config knows."""
        for pc_name in pc_names:
            try:
                PkgConfig(self, pc_name).fill_cpp_info(component, is_system=True)
                return
            except ConanException:
                continue
        raise ConanException(f"dml: {what} was not found by pkg-config (tried {', '.join(pc_names)}); "
                             "install it with the system package manager")

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "dml")
        # With components, dml::dml links every component this package has.
        self.cpp_info.set_property("cmake_target_name", "dml::dml")
        self.cpp_info.set_property("pkg_config_name", "dml")

        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "dml::core")
        core.requires = ["eigen::eigen3"]  # ConanCenter's component names
        core.bindirs = []
        core.libdirs = []
        if self.settings.os in ("Linux", "FreeBSD"):
            core.system_libs = ["pthread"]

        if self.options.with_data:
            data = self.cpp_info.components["data"]
            data.set_property("cmake_target_name", "dml::data")
            data.requires = ["core", "zlib::zlib"]
            data.bindirs = []
            data.libdirs = []
        if self.options.with_xtensor:
            xt = self.cpp_info.components["xtensor"]
            xt.set_property("cmake_target_name", "dml::xtensor")
            xt.requires = ["core", "xtensor::xtensor"]
            xt.bindirs = []
            xt.libdirs = []
        if self.options.with_mpi:
            mpi = self.cpp_info.components["mpi"]
            mpi.set_property("cmake_target_name", "dml::mpi")
            mpi.requires = ["core", "boost::mpi"]
            # Debian's mpi-c follows the default MPI (update-alternatives);
            # ompi-c is Open MPI's own name, mpich MPICH's.
            self._system_flags(mpi, ["mpi-c", "ompi-c", "mpich"], "an MPI library (Open MPI or MPICH)")
        if self.options.with_verbs:
            verbs = self.cpp_info.components["verbs"]
            verbs.set_property("cmake_target_name", "dml::verbs")
            verbs.requires = ["core", "mpi"]  # connects over the MPI bootstrap
            self._system_flags(verbs, ["libibverbs"], "rdma-core's libibverbs")
