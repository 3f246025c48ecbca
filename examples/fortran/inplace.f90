! inplace: MPI_IN_PLACE from Fortran (use mpi). The results are printed by rank 0 with all 17
! significant digits, so that a run under mpilens can be compared with a run without it: the tool
! must not change what the application computes.
!
! Per rank (root 0 for the rooted collectives), each in its own region:
!   "oop"    MPI_ALLREDUCE of 5 DOUBLE PRECISION, out of place (MPI_SUM)            40 B sent, 40 B received
!   "dp"     MPI_ALLREDUCE(MPI_IN_PLACE, x, 5, MPI_DOUBLE_PRECISION, MPI_SUM)      40 B sent, 40 B received
!   "int"    MPI_ALLREDUCE(MPI_IN_PLACE, k, 3, MPI_INTEGER, MPI_SUM)               12 B sent, 12 B received
!   "reduce" MPI_REDUCE of 5 DOUBLE PRECISION (MPI_SUM), MPI_IN_PLACE at the root:
!            root 40 B sent and 40 B received, others 40 B sent
!   "gather" MPI_GATHER of 4 DOUBLE PRECISION per rank, MPI_IN_PLACE at the root (which passes
!            sendcount 0, ignored): root 32 B sent and 32*nprocs B received, others 32 B sent
! Rank 0 prints every result, then "inplace: done <nprocs>".
program inplace
    use mpi
    implicit none
    integer, parameter :: n = 5, m = 4
    integer :: ierr, rank, nprocs, i, j, k(3)
    double precision :: x(n), y(n), z(n), w(n), v(m), dummy(n)
    double precision, allocatable :: g(:, :)

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
    allocate(g(m, nprocs))

    ! values whose sums round: thirds, square roots, tiny and large magnitudes together
    do i = 1, n
        x(i) = 1.0d0 / (3.0d0 * (rank + 1) + i) + sqrt(dble(rank + i)) * 1.0d-3 + (rank + 1) * 10.0d0**(i * 3 - 9)
    end do
    y = x
    w = x
    k = [(rank + 1) * 1000003 + 7, -(rank * 31 + 2), 2**20 + rank * 3]

    call MPILENS_REGION_BEGIN('oop')
    call MPI_ALLREDUCE(x, z, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPILENS_REGION_END('oop')

    call MPILENS_REGION_BEGIN('dp')
    call MPI_ALLREDUCE(MPI_IN_PLACE, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPILENS_REGION_END('dp')

    call MPILENS_REGION_BEGIN('int')
    call MPI_ALLREDUCE(MPI_IN_PLACE, k, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPILENS_REGION_END('int')

    call MPILENS_REGION_BEGIN('reduce')
    if (rank == 0) then
        call MPI_REDUCE(MPI_IN_PLACE, w, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    else
        call MPI_REDUCE(w, dummy, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    end if
    call MPILENS_REGION_END('reduce')

    ! each rank's block: its share of the in-place sum, so the gathered table depends on it
    do i = 1, m
        v(i) = y(i) / (rank + 1) + 1.0d0 / (7.0d0 + rank * m + i)
    end do
    call MPILENS_REGION_BEGIN('gather')
    if (rank == 0) then
        g = 0
        g(:, 1) = v
        call MPI_GATHER(MPI_IN_PLACE, 0, MPI_DOUBLE_PRECISION, g, m, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
    else
        call MPI_GATHER(v, m, MPI_DOUBLE_PRECISION, dummy, m, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
    end if
    call MPILENS_REGION_END('gather')

    if (rank == 0) then
        do i = 1, n
            print '(A,I0,A,ES24.16E3)', 'allreduce oop ', i, ' ', z(i)
        end do
        do i = 1, n
            print '(A,I0,A,ES24.16E3)', 'allreduce in_place ', i, ' ', y(i)
        end do
        do i = 1, 3
            print '(A,I0,A,I0)', 'allreduce int in_place ', i, ' ', k(i)
        end do
        do i = 1, n
            print '(A,I0,A,ES24.16E3)', 'reduce in_place ', i, ' ', w(i)
        end do
        do j = 1, nprocs
            do i = 1, m
                print '(A,I0,A,I0,A,ES24.16E3)', 'gather in_place ', j - 1, ' ', i, ' ', g(i, j)
            end do
        end do
        print '(A,I0)', 'inplace: done ', nprocs
    end if
    deallocate(g)
    call MPI_FINALIZE(ierr)
end program inplace
