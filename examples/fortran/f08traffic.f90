! f08traffic: known traffic through the mpi_f08 module (the binding MPI-3 recommends for new
! Fortran code), for checking that mpilens measures mpi_f08 calls exactly like C and mpif.h ones.
! IERROR is omitted in most calls (it is OPTIONAL in mpi_f08). left = rank-1, right = rank+1.
!
!   2 x MPI_Send of 100 INTEGER (400 B) to right, MPI_Recv from left with MPI_STATUS_IGNORE
!   MPI_Send of 37 DOUBLE PRECISION (296 B) to right (tag 7); MPI_Recv(MPI_ANY_SOURCE, MPI_ANY_TAG)
!     into 1000 DOUBLE PRECISION with a status, checked with MPI_Get_count and status%MPI_SOURCE
!   MPI_Irecv of up to 500 INTEGER from left (123 arrive: 492 B), MPI_Isend of 123 INTEGER to right,
!     MPI_Waitall with MPI_STATUSES_IGNORE; the same again completed by MPI_Testany polling (a
!     status), then the same again by MPI_Testsome polling (MPI_STATUSES_IGNORE)
!   persistent: MPI_Send_init of 10 DOUBLE PRECISION (80 B) to right, MPI_Recv_init of 10 from left;
!     3 x (MPI_Startall + MPI_Waitall with statuses), then MPI_Start of both, MPI_Wait of the receive
!     (MPI_STATUS_IGNORE) and of the send (a status), 2 x MPI_Request_free: 4 transfers each way
!   MPI_Allreduce with MPI_IN_PLACE of 3 INTEGER (MPI_SUM), MPI_Bcast of 10 DOUBLE PRECISION from
!     rank 1 (0 when alone), MPI_Barrier
!   MPI_Pcontrol(0), one more blocking ring exchange (not measured), MPI_Pcontrol(1)
! Every received value is checked; rank 0 prints "f08traffic: ok <nprocs>" when all ranks agree,
! and the in-place reduction's result in full.
program f08traffic
    use mpi_f08
    implicit none
    integer :: rank, nprocs, left, right, i, it, cnt, root, nbad, ierr, ndone, idx, outcount, indices(2)
    logical :: flag
    integer :: ia(100), ib(100), ic(500), id(123), red(3)
    double precision :: da(37), db(1000), ps(10), pr(10), bc(10)
    type(MPI_Status) :: status, statuses(2)
    type(MPI_Request) :: reqs(2), preq(2)

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)
    nbad = 0

    ! ---- blocking ring, MPI_STATUS_IGNORE
    do it = 1, 2
        call ring(it)
    end do

    ! ---- wildcard receive with a status
    da = [(rank + i * 0.5d0, i = 1, 37)]
    db = -1
    if (mod(rank, 2) == 0) then
        call MPI_Send(da, 37, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD)
        call MPI_Recv(db, 1000, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status)
    else
        call MPI_Recv(db, 1000, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status)
        call MPI_Send(da, 37, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD)
    end if
    call MPI_Get_count(status, MPI_DOUBLE_PRECISION, cnt)
    if (cnt /= 37 .or. status%MPI_SOURCE /= left .or. status%MPI_TAG /= 7) nbad = nbad + 1
    do i = 1, 37
        if (db(i) /= left + i * 0.5d0) nbad = nbad + 1
    end do

    ! ---- nonblocking
    id = [(rank * 7 + i, i = 1, 123)]
    ic = -1
    call MPI_Irecv(ic, 500, MPI_INTEGER, left, 3, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(id, 123, MPI_INTEGER, right, 3, MPI_COMM_WORLD, reqs(2))
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    do i = 1, 123
        if (ic(i) /= left * 7 + i) nbad = nbad + 1
    end do
    do it = 1, 2
        id = [(rank * 11 + it + i, i = 1, 123)]
        ic = -1
        call MPI_Irecv(ic, 500, MPI_INTEGER, left, 3 + it, MPI_COMM_WORLD, reqs(1))
        call MPI_Isend(id, 123, MPI_INTEGER, right, 3 + it, MPI_COMM_WORLD, reqs(2))
        ndone = 0
        do while (ndone < 2)
            if (it == 1) then
                call MPI_Testany(2, reqs, idx, flag, status)
                if (flag .and. idx /= MPI_UNDEFINED) ndone = ndone + 1
                if (flag .and. idx == 1) then
                    if (status%MPI_SOURCE /= left) nbad = nbad + 1
                end if
            else
                call MPI_Testsome(2, reqs, outcount, indices, MPI_STATUSES_IGNORE)
                if (outcount /= MPI_UNDEFINED) ndone = ndone + outcount
            end if
        end do
        do i = 1, 123
            if (ic(i) /= left * 11 + it + i) nbad = nbad + 1
        end do
    end do

    ! ---- persistent
    call MPI_Send_init(ps, 10, MPI_DOUBLE_PRECISION, right, 5, MPI_COMM_WORLD, preq(1))
    call MPI_Recv_init(pr, 10, MPI_DOUBLE_PRECISION, left, 5, MPI_COMM_WORLD, preq(2))
    do it = 1, 4
        ps = [(rank * 100 + it * 10 + i, i = 1, 10)]
        pr = -1
        if (it < 4) then
            call MPI_Startall(2, preq)
            call MPI_Waitall(2, preq, statuses)
            if (statuses(2)%MPI_SOURCE /= left) nbad = nbad + 1
        else
            call MPI_Start(preq(2))
            call MPI_Start(preq(1))
            call MPI_Wait(preq(2), MPI_STATUS_IGNORE)
            call MPI_Wait(preq(1), status)
        end if
        do i = 1, 10
            if (pr(i) /= left * 100 + it * 10 + i) nbad = nbad + 1
        end do
    end do
    call MPI_Request_free(preq(1))
    call MPI_Request_free(preq(2))

    ! ---- collectives
    red = [rank, 1, 2 * rank + 1]
    call MPI_Allreduce(MPI_IN_PLACE, red, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (red(1) /= nprocs * (nprocs - 1) / 2 .or. red(2) /= nprocs .or. red(3) /= nprocs * nprocs) nbad = nbad + 1
    root = min(1, nprocs - 1)
    bc = 0
    if (rank == root) bc = [(i * 1.25d0, i = 1, 10)]
    call MPI_Bcast(bc, 10, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD)
    do i = 1, 10
        if (bc(i) /= i * 1.25d0) nbad = nbad + 1
    end do
    call MPI_Barrier(MPI_COMM_WORLD)

    ! ---- not measured
    call MPI_Pcontrol(0)
    call ring(3)
    call MPI_Pcontrol(1)

    call MPI_Allreduce(MPI_IN_PLACE, nbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (nbad == 0) then
            print '(A,I0)', 'f08traffic: ok ', nprocs
        else
            print '(A,I0)', 'f08traffic: wrong values ', nbad
        end if
        print '(A,3I8)', 'f08traffic: in place ', red
    end if
    call MPI_Finalize()

contains

    subroutine ring(it)
        integer, intent(in) :: it
        ia = [(rank * 1000 + it * 100 + i, i = 1, 100)]
        ib = -1
        if (mod(rank, 2) == 0) then
            call MPI_Send(ia, 100, MPI_INTEGER, right, 10, MPI_COMM_WORLD)
            call MPI_Recv(ib, 100, MPI_INTEGER, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
        else
            call MPI_Recv(ib, 100, MPI_INTEGER, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
            call MPI_Send(ia, 100, MPI_INTEGER, right, 10, MPI_COMM_WORLD)
        end if
        do i = 1, 100
            if (ib(i) /= left * 1000 + it * 100 + i) nbad = nbad + 1
        end do
    end subroutine ring

end program f08traffic
