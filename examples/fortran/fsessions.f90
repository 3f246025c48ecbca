! fsessions: a Fortran (mpi_f08) program that never calls MPI_Init: it starts MPI with
! MPI_Session_init, makes its communicator from the process set mpi://WORLD and ends with
! MPI_Session_finalize, for tests/test_fortran.py. Built with the preprocessor: Open MPI 4.1
! implements MPI 3.1 and has no Sessions; there the program prints "fsessions: no MPI Sessions".
! A token ring: every rank sends 5 messages of 100 INTEGER (400 B) to the next rank with MPI_Send and
! receives 5 from the previous one with MPI_Recv; then one MPI_Allreduce of an INTEGER. Rank 0
! prints "fsessions: ok N" (N ranks) when every received value is right.
program fsessions
#ifdef ML_EXAMPLE_MPI_mpich
    use mpi_f08
    implicit none
    type(MPI_Session) :: session
    type(MPI_Group) :: group
    type(MPI_Comm) :: comm
    integer :: rank, nprocs, i, nbad, total
    integer :: a(100), b(100)

    call MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, session)
    call MPI_Group_from_session_pset(session, "mpi://WORLD", group)
    call MPI_Comm_create_from_group(group, "org.mpilens.examples.fsessions", MPI_INFO_NULL, &
                                    MPI_ERRORS_ARE_FATAL, comm)
    call MPI_Group_free(group)
    call MPI_Comm_rank(comm, rank)
    call MPI_Comm_size(comm, nprocs)
    nbad = 0
    do i = 1, 5
        a = rank * 1000 + i
        if (mod(rank, 2) == 0) then
            call MPI_Send(a, 100, MPI_INTEGER, mod(rank + 1, nprocs), i, comm)
            call MPI_Recv(b, 100, MPI_INTEGER, mod(rank + nprocs - 1, nprocs), i, comm, MPI_STATUS_IGNORE)
        else
            call MPI_Recv(b, 100, MPI_INTEGER, mod(rank + nprocs - 1, nprocs), i, comm, MPI_STATUS_IGNORE)
            call MPI_Send(a, 100, MPI_INTEGER, mod(rank + 1, nprocs), i, comm)
        end if
        if (any(b /= mod(rank + nprocs - 1, nprocs) * 1000 + i)) nbad = nbad + 1
    end do
    call MPI_Allreduce(nbad, total, 1, MPI_INTEGER, MPI_SUM, comm)
    if (rank == 0 .and. total == 0) print '(a, i0)', "fsessions: ok ", nprocs
    call MPI_Comm_free(comm)
    call MPI_Session_finalize(session)
#else
    print '(a)', "fsessions: no MPI Sessions"
#endif
end program
