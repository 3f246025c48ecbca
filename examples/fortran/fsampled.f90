! fsampled: many short calls from Fortran (mpif.h), for MPILENS_TIME_SAMPLE through the Fortran
! wrappers. Usage: fsampled ITERS
!
! Every rank, ITERS times: MPI_IRECV of up to 8 INTEGER from the left neighbour, MPI_ISEND of
! 1 + MOD(i, 4) INTEGER to the right one, MPI_WAITALL with MPI_STATUSES_IGNORE; then ITERS times
! MPI_SENDRECV of 2 INTEGER to the right from the left (MPI_STATUS_IGNORE); then one MPI_BARRIER.
! Rank 0 prints "fsampled: ok <nprocs>".
program fsampled
    implicit none
    include 'mpif.h'
    integer :: ierr, rank, nprocs, left, right, i, iters, n, reqs(2)
    integer :: sbuf(8), rbuf(8), two(2), got(2)
    character(len=32) :: arg

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
    call get_command_argument(1, arg)
    read (arg, *) iters
    left = mod(rank + nprocs - 1, nprocs)
    right = mod(rank + 1, nprocs)
    sbuf = rank
    two = rank
    do i = 0, iters - 1
        n = 1 + mod(i, 4)
        call MPI_IRECV(rbuf, 8, MPI_INTEGER, left, i, MPI_COMM_WORLD, reqs(1), ierr)
        call MPI_ISEND(sbuf, n, MPI_INTEGER, right, i, MPI_COMM_WORLD, reqs(2), ierr)
        call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
        if (rbuf(1) /= left) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end do
    do i = 0, iters - 1
        call MPI_SENDRECV(two, 2, MPI_INTEGER, right, 7, got, 2, MPI_INTEGER, left, 7, MPI_COMM_WORLD, &
                          MPI_STATUS_IGNORE, ierr)
        if (got(1) /= left) call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
    end do
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    if (rank == 0) print '(a, i0)', 'fsampled: ok ', nprocs
    call MPI_FINALIZE(ierr)
end program fsampled
