! fcompute: the application's own work between a Fortran nonblocking start and its completion, for
! checking that memory and papi modes charge it to the application, not to the completion call.
! Per rank, twice: MPI_IRECV from left and MPI_ISEND to right of 1000 DOUBLE PRECISION, then the
! application allocates and touches 32 MiB (8192 fresh pages: 8192 page faults), then completes the
! requests (round 1: one MPI_WAITALL; round 2: two MPI_WAIT) and only then frees the memory.
! So 64 MiB and 16384 page faults belong to the application; the completion calls themselves
! allocate and touch next to nothing. Rank 0 prints "fcompute: ok <nprocs>".
program fcompute
    implicit none
    include 'mpif.h'
    integer, parameter :: n = 32 * 1024 * 1024 / 8, page = 4096 / 8
    integer :: ierr, rank, nprocs, left, right, i, round, reqs(2), nbad, total
    double precision :: sbuf(1000), rbuf(1000)
    double precision, allocatable :: work(:)

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)
    nbad = 0
    do round = 1, 2
        sbuf = rank + round
        call MPI_IRECV(rbuf, 1000, MPI_DOUBLE_PRECISION, left, round, MPI_COMM_WORLD, reqs(1), ierr)
        call MPI_ISEND(sbuf, 1000, MPI_DOUBLE_PRECISION, right, round, MPI_COMM_WORLD, reqs(2), ierr)
        allocate(work(n))
        do i = 1, n, page
            work(i) = i
        end do
        if (round == 1) then
            call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
        else
            call MPI_WAIT(reqs(1), MPI_STATUS_IGNORE, ierr)
            call MPI_WAIT(reqs(2), MPI_STATUS_IGNORE, ierr)
        end if
        if (work(1 + page) /= 1 + page) nbad = nbad + 1
        deallocate(work)
        if (any(rbuf /= left + round)) nbad = nbad + 1
    end do
    call MPI_ALLREDUCE(nbad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0 .and. total == 0) print '(A,I0)', 'fcompute: ok ', nprocs
    call MPI_FINALIZE(ierr)
end program fcompute
