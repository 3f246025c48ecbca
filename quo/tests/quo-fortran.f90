! quo-fortran: the Fortran module quo, used as libquo's Fortran test uses it; prints
! "qid=<q> <key>=<value>" lines like quo-probe for tests/test_quo.py.
program quo_fortran
    use mpi
    use quo
    use, intrinsic :: iso_c_binding, only: c_ptr, c_int
    implicit none
    type(c_ptr) :: q
    integer(c_int) :: info, ver, subver, n, qid
    integer :: ierr, node, node_size
    logical :: bound, inside, selected
    integer(c_int), allocatable :: qids(:)

    call mpi_init(ierr)
    call quo_version(ver, subver, info)
    call quo_create(q, MPI_COMM_WORLD, info)
    if (info /= QUO_SUCCESS) then
        print *, 'quo_create failed', info
        call mpi_abort(MPI_COMM_WORLD, 1, ierr)
    end if
    call quo_id(q, qid, info)
    write (*, '(a,i0,a,i0,a,i0)') 'qid=', qid, ' version=', ver, '.', subver
    call quo_nsockets(q, n, info)
    write (*, '(a,i0,a,i0)') 'qid=', qid, ' nsockets=', n
    call quo_ncores(q, n, info)
    write (*, '(a,i0,a,i0)') 'qid=', qid, ' ncores=', n
    call quo_nqids(q, n, info)
    write (*, '(a,i0,a,i0)') 'qid=', qid, ' nqids=', n
    call quo_nobjs_in_type_by_type(q, QUO_OBJ_SOCKET, 1, QUO_OBJ_CORE, n, info)
    write (*, '(a,i0,a,i0)') 'qid=', qid, ' cores_in_socket1=', n
    call quo_bind_push(q, QUO_BIND_PUSH_PROVIDED, QUO_OBJ_CORE, 9, info)
    write (*, '(a,i0,a,i0)') 'qid=', qid, ' rc_push=', info
    call quo_bound(q, bound, info)
    write (*, '(a,i0,a,l1)') 'qid=', qid, ' bound=', bound
    call quo_cpuset_in_type(q, QUO_OBJ_SOCKET, 1, inside, info)
    write (*, '(a,i0,a,l1)') 'qid=', qid, ' in_socket1=', inside
    call mpi_barrier(MPI_COMM_WORLD, ierr)
    call quo_qids_in_type(q, QUO_OBJ_SOCKET, 1, qids, info)
    write (*, '(a,i0,a,i0)') 'qid=', qid, ' nqids_in_socket1=', size(qids)
    deallocate (qids)
    call quo_auto_distrib(q, QUO_OBJ_SOCKET, 1, selected, info)
    write (*, '(a,i0,a,l1)') 'qid=', qid, ' selected=', selected
    call quo_bind_pop(q, info)
    call quo_bind_pop(q, info)
    write (*, '(a,i0,a,i0)') 'qid=', qid, ' rc_pop_initial=', info
    call quo_get_mpi_comm_by_type(q, QUO_OBJ_MACHINE, node, info)
    call mpi_comm_size(node, node_size, ierr)
    call mpi_comm_free(node, ierr)
    write (*, '(a,i0,a,i0)') 'qid=', qid, ' machine_comm_size=', node_size
    call quo_barrier(q, info)
    call quo_free(q, info)
    write (*, '(a,i0,a,i0)') 'qid=', qid, ' rc_free=', info
    call mpi_finalize(ierr)
end program quo_fortran
