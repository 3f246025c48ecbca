! ftraffic: known point-to-point and collective traffic from Fortran (mpif.h), for checking that
! the Fortran wrappers count each call once, under its C name, with the right bytes.
!
! Region "p2p" (left = rank-1, right = rank+1, periodic):
!   3 x MPI_SEND of 100 INTEGER (400 B) to right, MPI_RECV from left with MPI_STATUS_IGNORE
!   MPI_SEND of 37 DOUBLE PRECISION (296 B) to right; MPI_RECV from MPI_ANY_SOURCE into a buffer of
!     1000 DOUBLE PRECISION with a status (checked with MPI_GET_COUNT and status(MPI_SOURCE))
!   MPI_SEND of 21 DOUBLE PRECISION (168 B) to right; MPI_RECV from MPI_ANY_SOURCE into a buffer of
!     1000 DOUBLE PRECISION with MPI_STATUS_IGNORE
!   MPI_IRECV of up to 500 INTEGER from left (123 arrive: 492 B), MPI_IRECV of 50 DOUBLE PRECISION
!     from right (400 B), MPI_ISEND of 123 INTEGER to right, MPI_ISEND of 50 DOUBLE PRECISION to
!     left, one MPI_WAITALL with MPI_STATUSES_IGNORE
!   MPI_SENDRECV: 16 INTEGER (64 B) to right, up to 32 INTEGER from left (16 arrive),
!     MPI_STATUS_IGNORE
! Region "coll":
!   MPI_BCAST of 10 DOUBLE PRECISION from rank 1 (rank 0 when alone)
!   MPI_ALLREDUCE of 3 INTEGER (MPI_SUM)
!   MPI_ALLTOALL of 2 INTEGER per process
! Every received value is checked; rank 0 prints "ftraffic: ok <nprocs>" when all ranks agree.
program ftraffic
    implicit none
    include 'mpif.h'
    integer :: ierr, rank, nprocs, left, right, i, j, it, cnt, root, nbad
    integer :: ia(100), ib(100), ic(500), id(123), ie(16), ig(32), red(3), a2a_s(64), a2a_r(64)
    double precision :: da(37), db(1000), dc(21), dd(50), de(50), bc(10)
    integer :: status(MPI_STATUS_SIZE), reqs(4)

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
    if (nprocs > 32) then
        if (rank == 0) print '(A)', 'ftraffic: at most 32 processes'
        call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
    end if
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)
    nbad = 0

    call MPILENS_REGION_BEGIN('p2p')
    ! ---- blocking ring, MPI_STATUS_IGNORE
    do it = 1, 3
        ia = [(rank * 1000 + it * 100 + i, i = 1, 100)]
        ib = -1
        if (mod(rank, 2) == 0) then
            call MPI_SEND(ia, 100, MPI_INTEGER, right, 10, MPI_COMM_WORLD, ierr)
            call MPI_RECV(ib, 100, MPI_INTEGER, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        else
            call MPI_RECV(ib, 100, MPI_INTEGER, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
            call MPI_SEND(ia, 100, MPI_INTEGER, right, 10, MPI_COMM_WORLD, ierr)
        end if
        do i = 1, 100
            if (ib(i) /= left * 1000 + it * 100 + i) nbad = nbad + 1
        end do
    end do

    ! ---- MPI_ANY_SOURCE into larger buffers, with and without a status
    da = [(rank + i / 64.0d0, i = 1, 37)]
    dc = [(-rank - i / 32.0d0, i = 1, 21)]
    db = 0
    if (mod(rank, 2) == 0) then
        call MPI_SEND(da, 37, MPI_DOUBLE_PRECISION, right, 20, MPI_COMM_WORLD, ierr)
        call MPI_RECV(db, 1000, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, status, ierr)
    else
        call MPI_RECV(db, 1000, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, status, ierr)
        call MPI_SEND(da, 37, MPI_DOUBLE_PRECISION, right, 20, MPI_COMM_WORLD, ierr)
    end if
    call MPI_GET_COUNT(status, MPI_DOUBLE_PRECISION, cnt, ierr)
    if (cnt /= 37 .or. status(MPI_SOURCE) /= left .or. status(MPI_TAG) /= 20) nbad = nbad + 1
    do i = 1, 37
        if (db(i) /= left + i / 64.0d0) nbad = nbad + 1
    end do
    db = 0
    if (mod(rank, 2) == 0) then
        call MPI_SEND(dc, 21, MPI_DOUBLE_PRECISION, right, 21, MPI_COMM_WORLD, ierr)
        call MPI_RECV(db, 1000, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
        call MPI_RECV(db, 1000, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        call MPI_SEND(dc, 21, MPI_DOUBLE_PRECISION, right, 21, MPI_COMM_WORLD, ierr)
    end if
    do i = 1, 21
        if (db(i) /= -left - i / 32.0d0) nbad = nbad + 1
    end do

    ! ---- nonblocking both ways, MPI_WAITALL with MPI_STATUSES_IGNORE
    id = [(rank * 7 + i, i = 1, 123)]
    dd = [(rank * 0.5d0 + i, i = 1, 50)]
    ic = -1
    de = 0
    call MPI_IRECV(ic, 500, MPI_INTEGER, left, 30, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_IRECV(de, 50, MPI_DOUBLE_PRECISION, right, 31, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_ISEND(id, 123, MPI_INTEGER, right, 30, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_ISEND(dd, 50, MPI_DOUBLE_PRECISION, left, 31, MPI_COMM_WORLD, reqs(4), ierr)
    call MPI_WAITALL(4, reqs, MPI_STATUSES_IGNORE, ierr)
    do i = 1, 123
        if (ic(i) /= left * 7 + i) nbad = nbad + 1
    end do
    if (ic(124) /= -1) nbad = nbad + 1
    do i = 1, 50
        if (de(i) /= right * 0.5d0 + i) nbad = nbad + 1
    end do

    ! ---- MPI_SENDRECV with a larger receive count
    ie = [(rank * 3 + i, i = 1, 16)]
    ig = -1
    call MPI_SENDRECV(ie, 16, MPI_INTEGER, right, 40, ig, 32, MPI_INTEGER, left, 40, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE, ierr)
    do i = 1, 16
        if (ig(i) /= left * 3 + i) nbad = nbad + 1
    end do
    if (ig(17) /= -1) nbad = nbad + 1
    call MPILENS_REGION_END('p2p')

    call MPILENS_REGION_BEGIN('coll')
    root = min(1, nprocs - 1)
    bc = 0
    if (rank == root) bc = [(i * 1.25d0, i = 1, 10)]
    call MPI_BCAST(bc, 10, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
    do i = 1, 10
        if (bc(i) /= i * 1.25d0) nbad = nbad + 1
    end do
    red = [rank, 1, nbad]
    call MPI_ALLREDUCE(MPI_IN_PLACE, red, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    do j = 0, nprocs - 1
        a2a_s(2 * j + 1) = rank * 100 + j
        a2a_s(2 * j + 2) = -(rank * 100 + j)
    end do
    a2a_r = 0
    call MPI_ALLTOALL(a2a_s, 2, MPI_INTEGER, a2a_r, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    do j = 0, nprocs - 1
        if (a2a_r(2 * j + 1) /= j * 100 + rank .or. a2a_r(2 * j + 2) /= -(j * 100 + rank)) nbad = nbad + 1
    end do
    call MPILENS_REGION_END('coll')

    if (nbad /= 0) print '(A,I0,A,I0,A)', 'ftraffic: rank ', rank, ': ', nbad, ' wrong values'
    if (rank == 0) then
        if (red(1) == nprocs * (nprocs - 1) / 2 .and. red(2) == nprocs .and. red(3) == 0 .and. nbad == 0) then
            print '(A,I0)', 'ftraffic: ok ', nprocs
        else
            print '(A,3I8)', 'ftraffic: FAILED ', red
        end if
    end if
    call MPI_FINALIZE(ierr)
end program ftraffic
