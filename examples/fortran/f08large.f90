! f08large: the large-count procedures of mpi_f08 (MPI-4: a count of kind MPI_COUNT_KIND selects
! the MPI_xxx_c procedure), for tests/test_fortran.py. Built with the preprocessor: Open MPI 4.1
! implements MPI 3.1 and has none; there the program prints "f08large: no large-count procedures".
! On 2 ranks, every count of kind MPI_COUNT_KIND:
!   rank 0: MPI_Send of 100 INTEGER (400 B) to rank 1; rank 1: MPI_Recv into 300 INTEGER with
!     MPI_STATUS_IGNORE (400 B arrive: bytes from the status)
!   both: MPI_Irecv of up to 80 INTEGER from the other (50 arrive: 200 B), MPI_Isend of 50 INTEGER,
!     MPI_Waitall
!   MPI_Bcast of 10 DOUBLE PRECISION (80 B) from rank 0
! Rank 0 prints "f08large: ok" when every received value is right (MPI_Allreduce of a default
! INTEGER count, not a large-count call).
program f08large
    use mpi_f08
    implicit none
    integer :: rank, other, i, nbad
#ifdef ML_EXAMPLE_MPI_mpich
    integer(kind=MPI_COUNT_KIND) :: n100, n300, n80, n50, n10
    integer :: a(300), b(80), c(50)
    double precision :: d(10)
    type(MPI_Request) :: reqs(2)
#endif

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    other = 1 - rank
    nbad = 0
#ifdef ML_EXAMPLE_MPI_mpich
    n100 = 100
    n300 = 300
    n80 = 80
    n50 = 50
    n10 = 10
    a = -1
    if (rank == 0) then
        a(1:100) = [(i * 3, i = 1, 100)]
        call MPI_Send(a, n100, MPI_INTEGER, 1, 1, MPI_COMM_WORLD)
    else
        call MPI_Recv(a, n300, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
        do i = 1, 100
            if (a(i) /= i * 3) nbad = nbad + 1
        end do
        if (a(101) /= -1) nbad = nbad + 1
    end if
    c = [(rank * 100 + i, i = 1, 50)]
    b = -1
    call MPI_Irecv(b, n80, MPI_INTEGER, other, 2, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(c, n50, MPI_INTEGER, other, 2, MPI_COMM_WORLD, reqs(2))
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    do i = 1, 50
        if (b(i) /= other * 100 + i) nbad = nbad + 1
    end do
    d = 0
    if (rank == 0) d = [(i * 0.5d0, i = 1, 10)]
    call MPI_Bcast(d, n10, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD)
    do i = 1, 10
        if (d(i) /= i * 0.5d0) nbad = nbad + 1
    end do
    call MPI_Allreduce(MPI_IN_PLACE, nbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0 .and. nbad == 0) print '(A)', 'f08large: ok'
#else
    if (rank == 0) print '(A)', 'f08large: no large-count procedures'
#endif
    call MPI_Finalize()
end program f08large
