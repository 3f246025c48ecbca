! The annotation API through its Fortran module (`use mpilens`, runtime/include/mpilens.f90): each
! rank makes `steps` steps, each a region "step" holding a region "halo" (one MPI_SENDRECV around
! the ring) and adding rank+1 cells to the counter "cells" inside "step"; at the end it sets
! "efficiency" to 1/(rank+1). With the module, the compiler checks every call: a default REAL as
! a counter's value would not compile.
!
! usage: fmodule [steps]   (default 5)
program fmodule
    use mpi
    use mpilens
    implicit none
    integer :: ierr, rank, nranks, steps, step, right, left, sent, got
    integer :: status(MPI_STATUS_SIZE)
    character(len=16) :: arg

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
    steps = 5
    if (command_argument_count() >= 1) then
        call get_command_argument(1, arg)
        read (arg, *) steps
    end if
    right = mod(rank + 1, nranks)
    left = mod(rank - 1 + nranks, nranks)
    got = -1
    do step = 1, steps
        call mpilens_region_begin('step')
        call mpilens_region_begin('halo')
        sent = rank * 1000 + step
        call MPI_SENDRECV(sent, 1, MPI_INTEGER, right, step, got, 1, MPI_INTEGER, left, step, &
                          MPI_COMM_WORLD, status, ierr)
        call mpilens_region_end('halo')
        call mpilens_counter_add('cells', dble(rank + 1))
        call mpilens_region_end('step')
    end do
    call mpilens_counter_set('efficiency', 1.0d0 / dble(rank + 1))
    if (got /= left * 1000 + steps) then
        print '(a, i0)', 'fmodule: wrong value from the left neighbour: ', got
        call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end if
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    if (rank == 0) print '(a, i0, a, i0)', 'fmodule: ok ', nranks, ' ranks ', steps
    call MPI_FINALIZE(ierr)
end program fmodule
