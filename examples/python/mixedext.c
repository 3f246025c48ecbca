/* A CPython extension module that calls MPI itself: a mixed stack (Python -> C extension -> MPI)
 * for the call-site tests (tests/test_callsites.py). The MPI calls end with marker comments
 * `site:NAME`, like the Python script that calls them (mixed_sites.py). Built by the tests with the
 * MPI's compiler wrapper against the system's Python headers:
 *   mpicc -shared -fPIC -g -O2 $(python3-config --includes) mixedext.c -o mixedext$(SUFFIX)
 *
 * allreduce(x): the sum of x over the ranks, with the GIL held during the MPI call (as most
 * extensions do). ring(n): each rank sends n doubles to the next and receives as many from the
 * previous one, with the GIL released around the MPI calls (as mpi4py and careful extensions do).
 * init()/finalize(): MPI_Init/MPI_Finalize for a script that does not use mpi4py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <mpi.h>

static double ring_buf[2][4096];

__attribute__((noinline)) static double reduce_sum(double x)
{
    double y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* site:ext-allreduce */
    return y;
}

__attribute__((noinline)) static void ring_exchange(int n)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    if (rank % 2 == 0) {
        MPI_Send(ring_buf[0], n, MPI_DOUBLE, right, 7, MPI_COMM_WORLD); /* site:ext-send */
        MPI_Recv(ring_buf[1], n, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* site:ext-recv */
    } else {
        MPI_Recv(ring_buf[1], n, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* site:ext-recv-odd */
        MPI_Send(ring_buf[0], n, MPI_DOUBLE, right, 7, MPI_COMM_WORLD); /* site:ext-send-odd */
    }
}

static PyObject *py_allreduce(PyObject *self, PyObject *args)
{
    (void)self;
    double x;
    if (!PyArg_ParseTuple(args, "d", &x)) return NULL;
    const double y = reduce_sum(x); /* site:ext-py-allreduce */
    return PyFloat_FromDouble(y);
}

static PyObject *py_ring(PyObject *self, PyObject *args)
{
    (void)self;
    int n;
    if (!PyArg_ParseTuple(args, "i", &n)) return NULL;
    if (n < 0 || n > 4096) {
        PyErr_SetString(PyExc_ValueError, "ring: 0..4096 doubles");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    ring_exchange(n); /* site:ext-py-ring */
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_init(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    int done;
    MPI_Initialized(&done);
    if (!done) MPI_Init(NULL, NULL);
    Py_RETURN_NONE;
}

static PyObject *py_finalize(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    MPI_Finalize();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"allreduce", py_allreduce, METH_VARARGS, "The sum of a float over MPI_COMM_WORLD."},
    {"ring", py_ring, METH_VARARGS, "Send n doubles to the next rank, receive n from the previous one."},
    {"init", py_init, METH_NOARGS, "MPI_Init, unless MPI is initialised already."},
    {"finalize", py_finalize, METH_NOARGS, "MPI_Finalize."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mixedext", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_mixedext(void) { return PyModule_Create(&module); }
