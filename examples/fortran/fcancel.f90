! fcancel: cancelled requests move nothing, from Fortran (mpif.h). left = rank-1, right = rank+1;
! tag 9 is never sent, so a receive on it can only end cancelled.
!   1. MPI_IRECV of 100 INTEGER on tag 9, MPI_CANCEL, MPI_WAIT with a status (MPI_TEST_CANCELLED)
!   2. MPI_IRECV of 100 INTEGER on tag 9, MPI_CANCEL, MPI_WAIT with MPI_STATUS_IGNORE
!   3. MPI_IRECV of 100 INTEGER on tag 9 and MPI_IRECV of 10 INTEGER from left on tag 1 (40 B),
!      MPI_CANCEL of the first, MPI_SEND of 10 INTEGER to right, MPI_WAITALL(MPI_STATUSES_IGNORE)
!   4. persistent: MPI_RECV_INIT of 8 INTEGER from left on tag 5; MPI_START, MPI_CANCEL, MPI_WAIT
!      (cancelled), then MPI_START, MPI_BARRIER, MPI_SEND of 8 INTEGER to right, MPI_WAIT (32 B),
!      MPI_REQUEST_FREE
! Per rank: MPI_Irecv 4 calls, 40 B; MPI_Recv_init 1 call, 32 B; MPI_Send 2 calls, 72 B;
! MPI_Cancel 4; MPI_Wait 4; MPI_Waitall 1; MPI_Start 2; MPI_Barrier 1; MPI_Request_free 1;
! MPI_Test_cancelled 3. Rank 0 prints "fcancel: ok <nprocs>" when all is as expected.
program fcancel
    implicit none
    include 'mpif.h'
    integer :: ierr, rank, nprocs, left, right, i, nbad, total, req, reqs(2)
    integer :: big(100), small(10), out(10), p(8), po(8)
    integer :: status(MPI_STATUS_SIZE)
    logical :: flag

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)
    nbad = 0

    call MPI_IRECV(big, 100, MPI_INTEGER, left, 9, MPI_COMM_WORLD, req, ierr)
    call MPI_CANCEL(req, ierr)
    call MPI_WAIT(req, status, ierr)
    call MPI_TEST_CANCELLED(status, flag, ierr)
    if (.not. flag) nbad = nbad + 1

    call MPI_IRECV(big, 100, MPI_INTEGER, left, 9, MPI_COMM_WORLD, req, ierr)
    call MPI_CANCEL(req, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)

    call MPI_IRECV(big, 100, MPI_INTEGER, left, 9, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_IRECV(small, 10, MPI_INTEGER, left, 1, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_CANCEL(reqs(1), ierr)
    out = [(rank * 10 + i, i = 1, 10)]
    call MPI_SEND(out, 10, MPI_INTEGER, right, 1, MPI_COMM_WORLD, ierr)
    call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
    do i = 1, 10
        if (small(i) /= left * 10 + i) nbad = nbad + 1
    end do

    call MPI_RECV_INIT(p, 8, MPI_INTEGER, left, 5, MPI_COMM_WORLD, req, ierr)
    call MPI_START(req, ierr)
    call MPI_CANCEL(req, ierr)
    call MPI_WAIT(req, status, ierr)
    call MPI_TEST_CANCELLED(status, flag, ierr)
    if (.not. flag) nbad = nbad + 1
    call MPI_START(req, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    po = [(rank * 8 + i, i = 1, 8)]
    call MPI_SEND(po, 8, MPI_INTEGER, right, 5, MPI_COMM_WORLD, ierr)
    call MPI_WAIT(req, status, ierr)
    call MPI_TEST_CANCELLED(status, flag, ierr)
    if (flag) nbad = nbad + 1
    do i = 1, 8
        if (p(i) /= left * 8 + i) nbad = nbad + 1
    end do
    call MPI_REQUEST_FREE(req, ierr)

    call MPI_ALLREDUCE(nbad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (total == 0) then
            print '(A,I0)', 'fcancel: ok ', nprocs
        else
            print '(A,I0)', 'fcancel: wrong ', total
        end if
    end if
    call MPI_FINALIZE(ierr)
end program fcancel
