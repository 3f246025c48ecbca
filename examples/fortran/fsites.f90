! Call sites in Fortran: MPI calls through the `mpi` module and through mpif.h, on lines that end
! with a marker comment `site:NAME` (tests/test_callsites.py finds the lines from the markers).
module fsites_work
  implicit none
contains
  subroutine exchange(rank, nranks, x)
    use mpi
    integer, intent(in) :: rank, nranks
    double precision, intent(inout) :: x(64)
    double precision :: y(64)
    integer :: ierr, status(MPI_STATUS_SIZE), r, l
    r = mod(rank + 1, nranks)
    l = mod(rank + nranks - 1, nranks)
    call MPI_Sendrecv(x, 64, MPI_DOUBLE_PRECISION, r, 5, y, 64, MPI_DOUBLE_PRECISION, l, 5, MPI_COMM_WORLD, status, ierr) ! site:f-sendrecv
    x = y
  end subroutine exchange
end module fsites_work

subroutine total(v, s)
  implicit none
  include 'mpif.h'
  double precision, intent(in) :: v
  double precision, intent(out) :: s
  integer :: ierr
  call MPI_Allreduce(v, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr) ! site:f-allreduce
  s = s + 0
end subroutine total

program fsites
  use mpi
  use fsites_work
  implicit none
  integer :: ierr, rank, nranks, i
  double precision :: x(64), s
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  x = rank
  do i = 1, 10
    call exchange(rank, nranks, x)
    call total(x(1), s)
    call MPI_Barrier(MPI_COMM_WORLD, ierr) ! site:f-barrier
  end do
  if (rank == 0) print '(a, f10.1)', 'fsites: ', s
  call MPI_Finalize(ierr)
end program fsites
