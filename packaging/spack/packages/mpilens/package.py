# A Spack recipe for mpilens: the prefix route of docs/install.md (`make install`), against the MPI
# of the spec. Use it from a clone, in a Spack repository of your own:
#
#   spack repo add packaging/spack
#   spack dev-build -d . mpilens@main ^openmpi     # or: spack develop + spack install
#
# tests/test_install.py runs this install() with the same arguments Spack passes.
from spack.package import *  # noqa: F403


class Mpilens(Package):  # noqa: F405
    """Insight into the performance of MPI applications through low-level metrics: a runtime preloaded
    into unmodified MPI programs, and the analysis of the run directories it writes."""

    maintainers("mpilens")  # noqa: F405
    license("BSD-3-Clause")  # noqa: F405

    version("main")  # noqa: F405

    depends_on("c", type="build")  # noqa: F405
    depends_on("gmake", type="build")  # noqa: F405
    depends_on("mpi")  # noqa: F405
    # the analysis and the runtime's generator run in a Python environment of the prefix's own
    depends_on("python@3.11:", type=("build", "run"))  # noqa: F405
    depends_on("py-pip", type="build")  # noqa: F405

    def install(self, spec, prefix):
        make("install", f"PREFIX={prefix}", f"MPICC={spec['mpi'].mpicc}",  # noqa: F405
             f"PYTHON={spec['python'].command.path}")
