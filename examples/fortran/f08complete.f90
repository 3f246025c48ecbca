! f08complete: the mpi_f08 completion calls that pick among requests (MPI_Waitany, MPI_Waitsome,
! MPI_Testany, MPI_Testsome), for tests/test_fortran.py. left = rank-1, right = rank+1.
!
! Four rounds; in round k (tag k) each rank posts MPI_Irecv of up to 500 INTEGER from left (123
! arrive: 492 B, known only from the status) and MPI_Isend of 123 INTEGER to right, then completes
! both with:
!   round 1: MPI_Waitany with MPI_STATUS_IGNORE, twice, then once more on the two null requests
!            (index MPI_UNDEFINED): 3 calls
!   round 2: MPI_Waitsome with MPI_STATUSES_IGNORE until both are done, then once more on the null
!            requests (outcount MPI_UNDEFINED)
!   round 3: MPI_Testany with a status, polled until both are done
!   round 4: MPI_Testsome with statuses, polled until both are done
! The indices returned are not relied on: MPICH 4.0's mpi_f08 MPI_Waitany and MPI_Testany return
! them 0-based (the C value), with or without mpilens; the received values are checked instead.
! Each rank prints how many calls rounds 2 to 4 made ("f08complete: rank R waitsome N testany N
! testsome N"), and rank 0 "f08complete: ok <nprocs>" when every received value is right.
program f08complete
    use mpi_f08
    implicit none
    integer :: rank, nprocs, left, right, i, k, idx, outcount, ndone, nbad, indices(2)
    integer :: calls(2:4)
    logical :: flag
    integer :: inbox(500), outbox(123)
    type(MPI_Status) :: status, statuses(2)
    type(MPI_Request) :: reqs(2)

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)
    nbad = 0
    calls = 0
    do k = 1, 4
        outbox = [(rank * 1000 + k * 200 + i, i = 1, 123)]
        inbox = -1
        call MPI_Irecv(inbox, 500, MPI_INTEGER, left, k, MPI_COMM_WORLD, reqs(1))
        call MPI_Isend(outbox, 123, MPI_INTEGER, right, k, MPI_COMM_WORLD, reqs(2))
        ndone = 0
        select case (k)
        case (1)
            do i = 1, 2
                call MPI_Waitany(2, reqs, idx, MPI_STATUS_IGNORE)
            end do
            call MPI_Waitany(2, reqs, idx, MPI_STATUS_IGNORE)
            if (idx /= MPI_UNDEFINED) nbad = nbad + 1
        case (2)
            do while (ndone < 2)
                call MPI_Waitsome(2, reqs, outcount, indices, MPI_STATUSES_IGNORE)
                calls(k) = calls(k) + 1
                ndone = ndone + outcount
            end do
            call MPI_Waitsome(2, reqs, outcount, indices, MPI_STATUSES_IGNORE)
            calls(k) = calls(k) + 1
            if (outcount /= MPI_UNDEFINED) nbad = nbad + 1
        case (3)
            do while (ndone < 2)
                call MPI_Testany(2, reqs, idx, flag, status)
                calls(k) = calls(k) + 1
                if (flag .and. idx /= MPI_UNDEFINED) ndone = ndone + 1
            end do
        case (4)
            do while (ndone < 2)
                call MPI_Testsome(2, reqs, outcount, indices, statuses)
                calls(k) = calls(k) + 1
                ndone = ndone + outcount
            end do
        end select
        do i = 1, 123
            if (inbox(i) /= left * 1000 + k * 200 + i) nbad = nbad + 1
        end do
        if (inbox(124) /= -1) nbad = nbad + 1
    end do
    print '(A,I0,A,I0,A,I0,A,I0)', 'f08complete: rank ', rank, ' waitsome ', calls(2), ' testany ', calls(3), &
        ' testsome ', calls(4)
    call MPI_Allreduce(MPI_IN_PLACE, nbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0 .and. nbad == 0) print '(A,I0)', 'f08complete: ok ', nprocs
    call MPI_Finalize()
end program f08complete
