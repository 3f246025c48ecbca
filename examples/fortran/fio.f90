! fio: known MPI-IO from Fortran (mpif.h), for checking the Fortran wrappers of I/O per file.
! Usage: fio DIR. Rank r of P opens DIR/fortran.dat on MPI_COMM_WORLD (the name is passed in a
! CHARACTER(len=512) variable: blank-padded, as Fortran passes it), then
!   MPI_FILE_WRITE_AT_ALL of 256 INTEGER (1024 bytes) at byte offset 1024*r     collective
!   MPI_FILE_WRITE_AT of 16 INTEGER (64 bytes) at byte offset 1024*P + 64*r      independent
!   MPI_FILE_READ_AT of 256 INTEGER (1024 bytes) at byte offset 1024*r           independent
!   MPI_FILE_CLOSE
! The file ends up 1088*P bytes long. Rank 0 prints "fio: ok P" when every rank read back its data.
program fio
    implicit none
    include 'mpif.h'
    integer :: ierr, rank, nprocs, fh, i, nbad, allbad
    integer :: a(256), b(256), h(16)
    integer(kind=MPI_OFFSET_KIND) :: off
    character(len=512) :: dir, fname

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
    dir = '.'
    if (command_argument_count() > 0) call get_command_argument(1, dir)
    fname = trim(dir) // '/fortran.dat'
    call MPI_FILE_OPEN(MPI_COMM_WORLD, fname, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
    do i = 1, 256
        a(i) = rank * 1000 + i
    end do
    h = rank
    off = 1024 * rank
    call MPI_FILE_WRITE_AT_ALL(fh, off, a, 256, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
    off = 1024 * nprocs + 64 * rank
    call MPI_FILE_WRITE_AT(fh, off, h, 16, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    off = 1024 * rank
    call MPI_FILE_READ_AT(fh, off, b, 256, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
    call MPI_FILE_CLOSE(fh, ierr)
    nbad = 0
    do i = 1, 256
        if (b(i) /= a(i)) nbad = nbad + 1
    end do
    call MPI_ALLREDUCE(nbad, allbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (allbad == 0) then
            print '(a,i0)', 'fio: ok ', nprocs
        else
            print '(a,i0)', 'fio: BAD ', allbad
        end if
    end if
    call MPI_FINALIZE(ierr)
end program fio
