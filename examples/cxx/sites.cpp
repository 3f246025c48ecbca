// Call sites in C++: MPI calls from a method of a class in a namespace and from a template, so
// that their names must be demangled (tests/test_callsites.py finds the lines from the markers).
#include <mpi.h>
#include <cstdio>
#include <vector>

namespace halo {

class Exchanger {
public:
    explicit Exchanger(int n) : out_(n, 1.0), in_(n, 0.0) {}
    __attribute__((noinline)) double exchange(int right, int left)
    {
        int rc = MPI_Sendrecv(out_.data(), (int)out_.size(), MPI_DOUBLE, right, 3, in_.data(), (int)in_.size(), MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); // site:cxx-sendrecv
        return in_[0] + rc;
    }

private:
    std::vector<double> out_, in_;
};

template <typename T>
__attribute__((noinline)) T reduce_sum(T v)
{
    T r = 0;
    int rc = MPI_Allreduce(&v, &r, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); // site:cxx-allreduce
    return r + rc;
}

}  // namespace halo

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    halo::Exchanger ex(128);
    double s = 0;
    long t = 0;
    for (int i = 0; i < 10; i++) {
        s += ex.exchange((rank + 1) % size, (rank + size - 1) % size);
        t += halo::reduce_sum<long>(i);
    }
    if (rank == 0) std::printf("sites: %g %ld\n", s, t);
    MPI_Finalize();
    return 0;
}
